"""lrnn.rasp.compile: tracr's library programs (tracr/compiler/lib.py) written with lrnn.rasp
compile to transformer weights that agree with the interpreter on every input up to length
5 over a small vocabulary, in the C++ forward pass and through to_torch(); what cannot be
compiled exactly is refused naming the s-op; regression tests for tracr's known issues."""

import itertools
import os

import pytest

import lrnn
import lrnn.rasp as rasp
from lrnn.rasp import SOp, aggregate, constant, indices, numerical, select, selector_width, tokens


RASP_DIR = os.path.join(os.path.dirname(__file__), "..", "rasp")

# ---- tracr's library, in lrnn.rasp ------------------------------------------------------------

def make_length():
    return selector_width(select(tokens, tokens, True)).name("length")


def make_reverse(sop):
    opp_idx = (make_length() - indices).name("opp_idx")
    opp_idx = (opp_idx - 1).name("opp_idx-1")
    return aggregate(select(indices, opp_idx, "=="), sop, default=None).name("reverse")


def make_hist():
    return selector_width(select(tokens, tokens, "==")).name("hist")


def make_sort_unique(vals, keys):
    smaller = select(keys, keys, "<").name("smaller")
    target_pos = selector_width(smaller).name("target_pos")
    return aggregate(select(target_pos, indices, "=="), vals, default=None).name("sort")


def make_sort(vals, keys, *, max_seq_len, min_key):
    keys = SOp.zip(lambda x, i: x + min_key * i / max_seq_len, keys, indices).name("keys")
    return make_sort_unique(vals, keys)


def make_sort_freq(max_seq_len):
    hist = (-1 * make_hist()).name("hist")
    return make_sort(tokens, hist, max_seq_len=max_seq_len, min_key=1).name("sort_freq")


def make_frac_prevs(bools):
    prevs = select(indices, indices, "<=")
    return numerical(aggregate(prevs, bools, default=0, convention="mean")).name("frac_prevs")


def make_pair_balance(sop, open_token, close_token):
    opens = numerical(make_frac_prevs(numerical(sop == open_token))).name("opens")
    closes = numerical(make_frac_prevs(numerical(sop == close_token))).name("closes")
    return numerical(SOp.zip(lambda x, y: x - y, opens, closes)).name("pair_balance")


def make_shuffle_dyck(pairs):
    balances = [make_pair_balance(tokens, o, c).name(f"balance_{o}{c}") for o, c in pairs]
    any_negative = balances[0] < 0
    for balance in balances[1:]:
        any_negative = any_negative | (balance < 0)
    any_negative = numerical(any_negative.map(lambda x: x)).name("any_negative")
    has_neg = numerical(aggregate(select(indices, indices, True), any_negative, default=0,
                                  convention="mean")).name("has_neg")
    all_zero = balances[0] == 0
    for balance in balances[1:]:
        all_zero = all_zero & (balance == 0)
    last_zero = aggregate(select(indices, make_length() - 1, "=="), all_zero).name("last_zero")
    not_has_neg = (~has_neg).name("not_has_neg")
    return (last_zero & not_has_neg).name("shuffle_dyck")


def shift_by(offset, sop):
    shifted = select(indices, indices.map(lambda i: i - offset), "==").name(f"shift_{offset}")
    return aggregate(shifted, sop, default=None).name(f"shift_by({offset})")


def detect_pattern(sop, pattern):
    detectors = []
    for i, element in enumerate(reversed(pattern)):
        detector = sop == element
        if i != 0:
            detector = shift_by(i, detector)
        detectors.append(detector)
    detected = detectors.pop()
    while detectors:
        detected = detected & detectors.pop()
    return detected.name(f"detect_pattern_{pattern}")


def make_count_less_freq(n):
    hist = make_hist()
    return selector_width(select(hist, constant(n), "<=")).name("count_less_freq")


def make_count(sop, token):
    return selector_width(select(sop, constant(token), "==")).name(f"count_{token}")


def make_nary_sequencemap(f, *sops):
    return SOp.zip(f, *sops).name("nary_sequencemap")


# (name, program, vocab, max_len): tracr's library programs as its tests call them
PROGRAMS = [
    ("length", make_length(), "abc", 5),
    ("reverse", make_reverse(tokens), "abc", 5),
    ("hist", make_hist(), "abc", 5),
    ("sort_unique", make_sort_unique(tokens, tokens), "abcde", 3),  # unique tokens only: see below
    ("sort", make_sort(tokens, tokens, max_seq_len=5, min_key=1), [1, 2, 3], 5),
    ("sort_freq", make_sort_freq(5), "abc", 5),
    ("frac_prevs", make_frac_prevs(numerical(tokens == "x")), "xyz", 5),
    ("pair_balance", make_pair_balance(tokens, "(", ")"), "()a", 5),
    ("shuffle_dyck", make_shuffle_dyck(["()"]), "()a", 5),
    ("shuffle_dyck2", make_shuffle_dyck(["()", "{}"]), "(){}", 4),
    ("shift_by", shift_by(2, tokens), "abc", 5),
    ("detect_pattern", detect_pattern(tokens, "ab"), "abc", 5),
    ("count_less_freq", make_count_less_freq(2), "abc", 5),
    ("count", make_count(tokens, "a"), "abc", 5),
    ("nary_sequencemap", make_nary_sequencemap(lambda x, y, z: f"{x}{y}{z}", tokens, tokens, indices), "ab", 5),
]
COMPILED = {}


def compiled(name):
    if name not in COMPILED:
        _, program, vocab, max_len = next(p for p in PROGRAMS if p[0] == name)
        if name == "sort_unique":
            pytest.skip("sort_unique fails in the interpreter on repeated tokens (tracr's too); see test below")
        COMPILED[name] = rasp.compile(program, vocab, max_len)
    return COMPILED[name]


@pytest.mark.parametrize("name", [p[0] for p in PROGRAMS if p[0] != "sort_unique"])
def test_library_program_agrees_on_every_input(name):
    model = compiled(name)
    report = model.verify()
    assert report.ok, report
    assert report.checked == report.total and not report.sampled
    _, program, vocab, max_len = next(p for p in PROGRAMS if p[0] == name)
    assert report.total == sum(len(vocab) ** n for n in range(1, max_len + 1))


def test_shuffle_dyck2_agrees_on_every_input_up_to_length_5():
    # The table above compiles it at max_len 4 (tracr's sizes are measured there); the
    # issue asks for every input up to length 5: 1364 of them over 4 tokens.
    model = rasp.compile(make_shuffle_dyck(["()", "{}"]), "(){}", 5)
    report = model.verify()
    assert report.ok and report.checked == report.total == sum(4**n for n in range(1, 6)), report


def test_sort_unique_refuses_repeated_keys_and_compiles_unique_ones():
    with pytest.raises(lrnn.LrnnError, match="sort"):
        rasp.compile(make_sort_unique(tokens, tokens), "abc", 3)
    keys = SOp.zip(lambda t, i: f"{t}{i}", tokens, indices).name("unique_keys")
    model = rasp.compile(make_sort_unique(tokens, keys), "ba", 4)
    assert model.verify().ok
    assert model("abab") == ["a", "a", "b", "b"]


def test_known_values():
    assert compiled("reverse")("abcab") == ["b", "a", "c", "b", "a"]
    assert compiled("hist")("abcab") == [2, 2, 1, 2, 2]
    assert compiled("detect_pattern")("aaba") == [None, False, True, False]
    assert compiled("shift_by")("abcab") == [None, None, "a", "b", "c"]
    frac = compiled("frac_prevs")("xyxx")
    assert frac == pytest.approx([1.0, 0.5, 2 / 3, 0.75], abs=1e-12)
    # tracr's shuffle_dyck reads the last position's balance at every position
    assert compiled("shuffle_dyck")("(())") == [True] * 4
    assert compiled("shuffle_dyck")("())(") == [False] * 4
    assert compiled("shuffle_dyck")("(a)") == [True] * 3


@pytest.fixture
def torch_one_thread():
    torch = pytest.importorskip("torch", reason="to_torch() needs PyTorch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead
    yield torch
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", [p[0] for p in PROGRAMS if p[0] != "sort_unique"])
def test_to_torch_agrees_with_the_engine(name, torch_one_thread):
    torch = torch_one_thread
    model = compiled(name)
    module = model.to_torch()
    assert isinstance(module, torch.nn.Module)
    _, program, vocab, max_len = next(p for p in PROGRAMS if p[0] == name)
    vocab = list(vocab)
    for n in range(1, max_len + 1):
        for word in itertools.product(vocab, repeat=n):
            word = list(word)
            got = module.run(word)
            expected = program(word)
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                if isinstance(e, (bool, int, float)) and not isinstance(e, str):
                    assert g is not None and float(g) == pytest.approx(float(e), abs=1e-9), (word, got, expected)
                else:
                    assert g == e, (word, got, expected)
            if n > 3:
                continue
            # the residual stream itself matches the C++ forward pass to 1e-9
            flat, rows = model._compiled.forward(word)
            ids = torch.tensor(model.token_ids(word))
            residual = module(ids).detach().numpy().reshape(-1)
            assert max(abs(a - b) for a, b in zip(flat, residual)) < 1e-9


def test_state_dict_is_numpy_and_sizes_are_reported():
    np = pytest.importorskip("numpy")
    model = compiled("reverse")
    weights = model.state_dict()
    d = model.residual_width
    assert weights["embed.tokens"].shape == (3, d)
    assert weights["layers.0.heads.0.qk"].shape == (d, d)
    assert all(isinstance(w, np.ndarray) and w.dtype == np.float64 for w in weights.values())
    assert model.layers == 2 and model.heads == 2 and model.analyzed_layers == 2
    table = model.table()
    assert "tokens" in table and "categorical" in table and "bos" in table


# ---- tracr's known issues ---------------------------------------------------------------------

def test_negative_numerical_map_is_not_clipped():
    frac = make_frac_prevs(numerical(tokens == "x"))
    centred = numerical(frac.map(lambda v: v - 0.5)).name("centred")
    model = rasp.compile(centred, "xy", 5)
    assert model.verify().ok
    assert model("yy") == [-0.5, -0.5]


def test_none_default_stays_distinguishable():
    model = rasp.compile(shift_by(1, tokens), "ab", 4)
    assert model("ab") == [None, "a"]
    assert model.verify().ok


def test_selector_width_above_ten():
    model = rasp.compile(make_length(), "a", 14)
    assert model("a" * 13) == [13] * 13
    assert model.verify().ok


def test_numerical_mean_feeding_a_threshold():
    # the means take every value k/n (tracr assumes only 0 and 1/n)
    above = (make_frac_prevs(numerical(tokens == "x")) > 0.5).name("mostly_x")
    model = rasp.compile(above, "xy", 5)
    assert model.verify().ok
    assert model("xyxyx") == [True, False, True, False, True]


def test_non_linear_function_of_two_numerical_sops():
    # tracr refuses it; one input is read through a categorical copy (an extra MLP layer)
    product = numerical(SOp.zip(lambda a, b: a * b, make_frac_prevs(numerical(tokens == "a")),
                                make_frac_prevs(numerical(tokens == "b")))).name("product")
    model = rasp.compile(product, "abc", 5)
    assert model.verify().ok
    assert model("abab") == pytest.approx([0.0, 0.25, 2 / 9, 0.25], abs=1e-12)


def test_composite_selectors():
    same_before = select(tokens, tokens, "==") & select(indices, indices, "<")
    assert rasp.compile(selector_width(same_before), "abc", 5).verify().ok
    not_same = ~select(tokens, tokens, "==") | select(tokens, tokens, "<")
    assert rasp.compile(selector_width(not_same), "abc", 4).verify().ok


def test_composite_selectors_over_different_sops():
    # or / not across pairs of s-ops: one score table over joint (tokens, indices) values
    mixed = select(tokens, tokens, "==") | select(indices, indices, "<")
    model = rasp.compile(selector_width(mixed), "abc", 4)
    assert model.verify().ok
    assert model("abac") == [2, 2, 3, 4]
    assert "(tokens, indices)" in model.table()
    neither = ~(select(tokens, tokens, "==") | select(indices, 0, "=="))
    model = rasp.compile(selector_width(neither), "abc", 4)
    assert model.verify().ok
    assert model("abac") == [2, 2, 2, 2]  # keys with another token, not at position 0
    # numerical means compared inside an `or`: exact through the joint one-hot
    frac_a = make_frac_prevs(numerical(tokens == "a"))
    frac_b = make_frac_prevs(numerical(tokens == "b"))
    by_means = select(frac_a, frac_a, "==") | select(frac_b, frac_b, "<")
    model = rasp.compile(selector_width(by_means), "abc", 4)
    assert model.verify().ok
    assert any(space[0].endswith(":categorical") for space in model.spaces)  # (name, encoding, ...)


# The paper's BOS programs (tests/rasp, mean aggregation): `sel or select(indices, 0, ==)`.
# (file, layers, heads per layer) over the BOS symbol and 3 tokens up to length 4.
BOS_PROGRAMS = [
    ("histogram_bos.rasp", 2, [0, 1]),
    ("sort.rasp", 3, [0, 1, 1]),
    ("most_frequent.rasp", 5, [0, 2, 0, 1, 1]),
    ("double_histogram.rasp", 4, [0, 2, 0, 1]),
]


@pytest.mark.parametrize("file,layers,heads", BOS_PROGRAMS)
def test_paper_bos_programs_compile_exactly(file, layers, heads):
    program = rasp.load(os.path.join(RASP_DIR, file))
    model = rasp.compile(program, ["\u00a7", "a", "b", "c"], 4)
    report = model.verify()
    assert report.ok, report
    assert report.checked == report.total == 4 + 4 ** 2 + 4 ** 3 + 4 ** 4
    assert model.layers == layers
    assert list(model.heads_per_layer) == heads and model.heads == sum(heads)
    expected = rasp.run(program, ["\u00a7", "b", "a", "b"])
    assert model(["\u00a7", "b", "a", "b"]) == expected


def test_paper_bos_program_through_torch(torch_one_thread):
    program = rasp.load(os.path.join(RASP_DIR, "sort.rasp"))
    model = rasp.compile(program, ["\u00a7", "a", "b", "c"], 4)
    module = model.to_torch()
    for n in range(1, 5):
        for word in itertools.product(["\u00a7", "a", "b", "c"], repeat=n):
            assert module.run(list(word)) == rasp.run(program, list(word)), word


def test_sum_convention():
    # RASPy's length: the sum of 1 over every key
    length = (rasp.key(1) == rasp.query(1)).value(1)
    model = rasp.compile(length, "ab", 5)
    assert model("abab") == [4, 4, 4, 4] and model.verify().ok


def test_causal_compile():
    prefix_count = selector_width(select(indices, indices, "<=")).name("prefix_count")
    model = rasp.compile(prefix_count, "ab", 4, causal=True)
    assert model.causal and model.verify().ok
    with pytest.raises(lrnn.LrnnError, match="causal attention sees only earlier positions"):
        rasp.compile(make_reverse(tokens), "ab", 4, causal=True)


def test_refusals_name_the_sop():
    prefix_sum = aggregate(select(indices, indices, "<="), indices).name("prefix_sum")
    with pytest.raises(lrnn.LrnnError, match="cannot compile prefix_sum"):
        rasp.compile(prefix_sum, "ab", 3)
    by_mean = select(make_frac_prevs(numerical(tokens == "a")), indices, "==").name("by_mean")
    with pytest.raises(lrnn.LrnnError, match="cannot compile by_mean"):
        rasp.compile(selector_width(by_mean), "ab", 3)
    with pytest.raises(lrnn.LrnnError, match="inputs over a vocabulary"):
        rasp.compile(tokens, "abcdefghij", 9)
    model = rasp.compile(make_hist(), "ab", 3)
    with pytest.raises(lrnn.LrnnError, match="not in the vocabulary"):
        model("abz")


def test_to_torch_is_trainable_from_the_program(torch_one_thread):
    """The compiled weights are the initial parameters of a torch module: fine-tuning on the
    program's own input/output pairs (cross-entropy on the output subspace) changes the
    weights and keeps every output right."""
    torch = torch_one_thread
    model = compiled("hist")
    module = model.to_torch()
    name, encoding, offset, width, values = model.spaces[model._compiled.output_space]
    assert encoding == "categorical"
    words = [list(w) for n in range(1, 4) for w in itertools.product("abc", repeat=n)]
    batches = [(torch.tensor(model.token_ids(w)), torch.tensor([values.index(v) for v in make_hist()(w)]))
               for w in words]
    before = [p.detach().clone() for p in module.parameters()]
    # plain SGD: the loss is already near its minimum, so the steps are small (Adam would move
    # every weight by ~lr whatever the gradient, and the exact steps of the MLPs break)
    optimiser = torch.optim.SGD(module.parameters(), lr=0.01)
    for _ in range(3):
        for ids, target in batches:
            # the output subspace is one-hot (margin 1): read it at temperature 1/20
            logits = 20.0 * module(ids)[1:, offset:offset + width]
            loss = torch.nn.functional.cross_entropy(logits, target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    changed = sum(float((p.detach() - b).abs().sum()) for p, b in zip(module.parameters(), before))
    assert changed > 0
    for w in words + [list("abcab"), list("ccccc")]:
        assert module.run(w) == make_hist()(w), w


def test_pictures_of_the_weights(tmp_path):
    np = pytest.importorskip("numpy")
    model = compiled("reverse")
    patterns = model.attention("abc")
    assert len(patterns) == 2 and patterns[1].shape == (4, 4)
    # the flip head: query i attends to key 2 - i (row/column 0 the BOS position)
    assert np.allclose(patterns[1][1:, 1:], np.fliplr(np.eye(3)), atol=1e-12)
    svg = model.draw("abc", tmp_path / "reverse.svg")
    assert svg.startswith("<svg") and "layer 2: 1 head(s)" in svg
    assert (tmp_path / "reverse.svg").read_text(encoding="utf-8") == svg


@pytest.mark.parametrize("name", ["reverse", "hist", "sort", "sort_freq", "frac_prevs", "shuffle_dyck",
                                  "detect_pattern", "count_less_freq", "nary_sequencemap"])
def test_template_runs_in_the_engine_like_the_weights(name, tmp_path):
    """The compiled transformer as an lrnn template: lrnn's engine (grounding, softmax
    aggregation, product combinations, relu MLP rules) gives the same residual stream as the
    weights' own forward pass on every input up to length 3, so it decodes to the program."""
    import numpy as np

    model = compiled(name)
    _, _, vocab, _ = next(p for p in PROGRAMS if p[0] == name)
    inputs = [list(x) for n in range(1, 4) for x in itertools.product(vocab, repeat=n)]
    (tmp_path / "t.lrnn").write_text(model.to_template())
    (tmp_path / "e.txt").write_text("".join(f"s{k} :- {model.example_facts(x)}.\n" for k, x in enumerate(inputs)))
    (tmp_path / "q.txt").write_text("".join(f"s{k} :- {model.queries(x)}.\n" for k, x in enumerate(inputs)))
    engine = lrnn.Template(template_file=str(tmp_path / "t.lrnn")).build(lrnn.Settings())
    data = engine.build_dataset(lrnn.FileDataset(examples_file=str(tmp_path / "e.txt"),
                                                 queries_file=str(tmp_path / "q.txt")))
    got = np.asarray(engine(data)).reshape(-1, model.residual_width)
    expected = np.concatenate([np.asarray(model._compiled.forward(x)[0]).reshape(-1, model.residual_width)
                               for x in inputs])
    assert got.shape == expected.shape == (sum(len(x) + 1 for x in inputs), model.residual_width)
    np.testing.assert_allclose(got, expected, atol=1e-9, rtol=0)


# ---- sizes next to tracr's (docs/rasp.md) -----------------------------------------------------

# tracr 9ce2b8c's compiled sizes for the same programs, vocabularies and max_len, measured
# by bench/peers/tracr_sizes.py: (layers, most heads in a layer, residual width, MLP width)
TRACR_SIZES = {
    "length": (1, 1, 18, 12), "reverse": (4, 1, 41, 30), "hist": (1, 1, 18, 12), "sort": (3, 1, 36, 15),
    "sort_freq": (5, 1, 64, 30), "frac_prevs": (2, 1, 13, 1), "pair_balance": (2, 2, 16, 4),
    "shuffle_dyck": (6, 2, 39, 106), "shuffle_dyck2": (8, 4, 52, 132), "shift_by": (1, 1, 14, 0),
    "detect_pattern": (2, 1, 19, 4), "count_less_freq": (2, 1, 25, 12), "count": (1, 1, 18, 12),
    "nary_sequencemap": (3, 1, 54, 20),
}


@pytest.mark.parametrize("name", sorted(TRACR_SIZES))
def test_sizes_at_most_tracrs(name):
    model = compiled(name)
    ours = (model.layers, max(model.heads_per_layer, default=0), model.residual_width, model.mlp_width)
    assert all(o <= t for o, t in zip(ours, TRACR_SIZES[name])), (name, ours, TRACR_SIZES[name])


def test_heads_attending_alike_are_one_head():
    # opens and closes both attend with select(indices, indices, <=): one head writes both
    model = compiled("pair_balance")
    assert model.heads_per_layer == [1] and model.mlp_width == 2
    (_, outputs, _), = model.head_list()
    assert "opens" in outputs and "closes" in outputs
    assert model("(()") == pytest.approx([1.0, 1.0, 1 / 3], abs=1e-12)


# ---- training the compiled template in lrnn's engine ------------------------------------------

def test_compiled_template_trains_in_lrnn_towards_a_nearby_task(tmp_path):
    """reverse, then a -> b -> c -> a: from the program (its weights fixed, the readout
    learning) the engine reaches every output on inputs longer than any trained on; the same
    template from random init, trained alike, does not."""
    model = rasp.compile(make_reverse(tokens), "abc", 4)
    rotate = {"a": "b", "b": "c", "c": "a"}

    def data(name, lengths):
        inputs = [list(x) for n in lengths for x in itertools.product("abc", repeat=n)]
        (tmp_path / f"{name}_e.txt").write_text("".join(f"s{k} :- {model.example_facts(x)}.\n"
                                                       for k, x in enumerate(inputs)))
        (tmp_path / f"{name}_q.txt").write_text("".join(
            f"s{k} :- {model.readout_queries([rotate[t] for t in reversed(x)])}.\n" for k, x in enumerate(inputs)))
        return lrnn.FileDataset(examples_file=str(tmp_path / f"{name}_e.txt"),
                                queries_file=str(tmp_path / f"{name}_q.txt"))

    train, test = data("train", [1, 2, 3]), data("test", [4])
    accuracy = {}
    for start in ("program", "random"):
        text = model.to_template(fixed=start == "program", random=start == "random", readout_scale=5)
        assert ("<[[" in text) == (start == "program") and "rasp_out(P) :-" in text
        (tmp_path / f"{start}.lrnn").write_text(text)
        settings = lrnn.Settings(optimizer=lrnn.Adam(lr=0.2), epochs=40,
                                 error_function=lrnn.CrossEntropy(with_logits=True))
        engine = lrnn.Template(template_file=str(tmp_path / f"{start}.lrnn")).build(settings)
        engine.train(train, progress=False)
        accuracy[start] = engine.test(test).accuracy
    assert accuracy["program"] == 1.0
    assert accuracy["random"] < 0.5


def test_readout_queries_name_a_value_the_output_never_takes():
    model = compiled("reverse")
    assert model.spaces[model._compiled.output_space][4] == ["a", "b", "c"]  # the readout's classes
    assert model.readout_queries(["b", "a"]) == "[0, 1, 0] rasp_out(1), [1, 0, 0] rasp_out(2)"
    with pytest.raises(lrnn.LrnnError, match='"d" at position 1 is not a value of the output reverse'):
        model.readout_queries(["a", "d"])
    with pytest.raises(lrnn.LrnnError, match="not categorical"):
        compiled("frac_prevs").to_template(readout_scale=5)
