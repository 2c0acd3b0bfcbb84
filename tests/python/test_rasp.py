"""lrnn.rasp: the programs of the RASPy blog ("Thinking Like Transformers", Sasha Rush)
written exactly as the blog writes them, against values derived by hand and the layer counts
the blog states; errors; `.rasp` files; the lowering to templates evaluated by the engine."""

import gc
import itertools
import operator
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lrnn
import lrnn.logic
import lrnn.rasp as rasp
from lrnn.rasp import *  # noqa: F401,F403 (the blog's `from raspy import *`)

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "tests" / "rasp"


# ---- the blog's programs, verbatim ------------------------------------------------------------

def flip():
    length = (key(1) == query(1)).value(1)
    flip = (key(length - indices - 1) == query(indices)).value(tokens)
    return flip


before = key(indices) < query(indices)


def make_length():
    length = (key(1) == query(1)).value(1)
    return length.name("length")


def histogram(seq=tokens):
    return (key(seq) == query(seq)).value(1)


def window_sum(window=3):
    s1 = key(indices) >= query(indices - window + 1)
    s2 = key(indices) <= query(indices)
    sel = s1 & s2
    return sel.value(tokens)


def cumsum(seq=tokens):
    x = (before | (key(indices) == query(indices))).value(seq)
    return x.name("cumsum")


def index(i, seq=tokens):
    x = (key(indices) == query(i)).value(seq)
    return x.name("index")


def shift(i=1, default="_", seq=tokens):
    x = (key(indices) == query(indices - i)).value(seq, default)
    return x.name("shift")


def minimum(seq=tokens):
    sel1 = before & (key(seq) == query(seq))
    sel2 = key(seq) < query(seq)
    less = (sel1 | sel2).value(1)
    x = (key(less) == query(0)).value(seq)
    return x.name("min")


def first(q, seq=tokens):
    return minimum(where(seq == q, indices, 99))


def ralign(default="-", sop=tokens):
    c = (key(sop) == query("_")).value(1)
    x = (key(indices + c) == query(indices)).value(sop, default)
    return x.name("ralign")


def split(v, get_first_part, sop=tokens, default="0"):
    split_point = (key(sop) == query(v)).value(indices)
    if get_first_part:
        x = ralign(default, where(indices < split_point, sop, "_"))
        return x
    else:
        x = where(indices > split_point, sop, default)
        return x


def slide(match, seq=tokens):
    x = cumsum(match)
    y = ((key(x) == query(x + 1)) & (key(match) == query(True))).value(seq)
    seq = where(match, seq, y)
    return seq.name("slide")


def atoi(seq=tokens):
    return seq.map(lambda x: ord(x) - ord("0"))


def add(sop=tokens):
    # 0) Parse and add
    x = atoi(split("+", True, sop)) + atoi(split("+", False, sop))
    # 1) Check for carries
    gets_carry = shift(-1, "0", where(x > 9, "1", where(x == 9, "<", "0")))
    # 2) Slide carries to their columns - all in one parallel go!
    gets_carry = atoi(slide(gets_carry != "<", gets_carry))
    # 3) Add in carries, and remove overflow from original addition.
    return (x + gets_carry) % 10


def layers(program):
    return analyze(program).layers


# ---- the language ---------------------------------------------------------------------------

def test_inputs_and_elementwise_operations():
    assert tokens.input([5, 2, 4, 5, 2, 2]) == [5, 2, 4, 5, 2, 2]
    assert indices.input("goodbye") == [0, 1, 2, 3, 4, 5, 6]
    assert (tokens == "l")("hello") == [False, False, True, True, False]
    assert (tokens * 2 - 1).input([1, 2, 3, 5, 2]) == [1, 3, 5, 9, 3]
    assert (tokens - 5 + indices).input([1, 2, 3, 5, 2]) == [-4, -2, 0, 3, 1]
    assert ((tokens == "l") | (indices == 1))("hello") == [False, True, True, True, False]
    assert where((tokens == "h") | (tokens == "l"), tokens, "q")("hello") == list("hqllq")
    assert atoi().input("31234") == [3, 1, 2, 3, 4]
    assert (atoi(where(tokens == "-", "0", tokens)) + 2).input("02-13") == [2, 4, 2, 3, 5]
    assert layers(tokens * 2 - 1) == 0


def test_python_values_and_operators():
    xs = [3, -7, 0, 5]
    # Python's semantics: true division, floored modulo, reflected operators
    assert (tokens / 2)(xs) == [1.5, -3.5, 0.0, 2.5]
    assert (tokens % 3)(xs) == [0, 2, 0, 2]
    assert (10 - tokens)(xs) == [7, 17, 10, 5]
    assert (1 + tokens * tokens)(xs) == [10, 50, 1, 26]
    assert (2 ** tokens)([0, 1, 3]) == [1, 2, 8]
    assert (-tokens)(xs) == [-3, 7, 0, -5]
    assert (~(tokens > 0))(xs) == [False, True, True, False]
    assert (0 < tokens)(xs) == [True, False, False, True]  # reflected: tokens > 0
    assert ((tokens > 0) & (tokens < 4))(xs) == [True, False, False, False]
    assert ("<" + tokens)("ab") == ["<a", "<b"]
    # value types come back as they are: bool, int, float, str, None
    mixed = [True, 2, 2.5, "x", None]
    out = tokens(mixed)
    assert out == mixed and [type(v) for v in out] == [bool, int, float, str, type(None)]
    assert tokens((1, 2)) == [1, 2]  # any iterable of values
    assert tokens("§ab") == ["§", "a", "b"]  # a str is its characters (UTF-8)
    assert tokens("") == [] and indices([]) == []
    assert length("abcd") == [4, 4, 4, 4] and layers(length) == 1
    assert SOp.zip(lambda a, b, c: a * b + c, tokens, indices, 1)([2, 3, 4]) == [1, 4, 9]
    assert zipmap(max, tokens, 3 - indices)([0, 0, 5]) == [3, 2, 5]
    assert (tokens / 3).round()([1, 2, 3, 8]) == [0, 1, 1, 3]
    assert tokens.has("aeiou")("hello") == [False, True, False, False, True]
    assert tokens.has({1, 3}).label.startswith("has#")
    assert rasp.run(tokens + 1, [1, 2]) == [2, 3]


def test_names_and_annotations():
    x = (tokens + 1).name("succ")
    assert x.name() == "succ" and x.label == "succ"
    assert (tokens + 1).name() == ""
    y = x.name("other")
    assert x.name() == "succ" and y.name() == "other"  # .name() returns a renamed copy
    assert numerical(x).encoding == "numerical" and x.categorical().encoding == "categorical"
    assert x.encoding == "unspecified"
    assert repr(x) == "SOp(succ)"
    assert tokens.map(lambda v: v).label.startswith("lambda#")
    assert tokens.map(str.upper)("ab") == ["A", "B"]


def test_selectors():
    eq = key(tokens) == query(tokens)
    assert isinstance(eq, Selector)
    assert eq.matrix("aba") == [[True, False, True], [False, True, False], [True, False, True]]
    assert eq("aba") == eq.matrix("aba")  # RASPy calls the selector
    # entry (query i, key j) = key[j] < query[i]: row i selects the earlier positions
    assert before.matrix("abc") == [[False, False, False], [True, False, False], [True, True, False]]
    assert (~before).matrix("ab") == [[True, True], [False, True]]
    # query(...) op key(...) reads from the key's side: query < key is key > query
    assert (query(indices) < key(indices)).matrix("abc") == (key(indices) > query(indices)).matrix("abc")
    # select() with RASPy's predicates, the symbols, and select-all / select-none
    assert select(indices, indices, operator.lt).matrix("abc") == before.matrix("abc")
    assert select(indices, indices, "<").matrix("abc") == before.matrix("abc")
    assert select(tokens, tokens, True).matrix("ab") == [[True, True], [True, True]]
    assert select(tokens, tokens, False).matrix("ab") == [[False, False], [False, False]]
    assert selector_width(eq)("abaa") == [3, 1, 3, 3]
    assert eq.width()("ab") == [1, 1]
    assert aggregate(before, 1)("abc") == [0, 1, 2]
    assert aggregate(before, 1, default=-1)("abc") == [-1, 1, 2]
    assert aggregate(before, tokens, name="prev_sum").name() == "prev_sum"
    # aggregation conventions: RASPy sums, the paper averages
    assert aggregate(before, tokens)([4, 5, 6]) == [0, 4, 9]
    assert aggregate(before, tokens, convention="mean")([4, 5, 6]) == [0, 4, 4.5]
    assert rasp.run(before.value(tokens), [4, 5, 6], convention="mean") == [0, 4, 4.5]


# ---- the blog ---------------------------------------------------------------------------------

def test_flip():
    assert flip()("hello") == list("olleh")
    assert flip()("ab") == ["b", "a"]
    assert flip().input([1, 2, 3]) == [3, 2, 1]
    a = analyze(flip())
    assert a.layers == 2  # "uses two Transformer layers"
    assert a.heads_per_layer == [1, 1] and a.max_heads == 1
    assert [h.layer for h in a.heads] == [1, 2]


def test_length():
    length = make_length()
    assert length.name() == "length"
    assert length("hello") == [5] * 5
    assert length("a") == [1]
    assert layers(length) == 1


def test_histogram():
    assert histogram()("hello") == [1, 1, 2, 2, 1]
    assert histogram().input([5, 2, 4, 5, 2, 2]) == [2, 3, 1, 2, 3, 3]
    a = analyze(histogram())
    assert (a.layers, a.heads_per_layer) == (1, [1])
    # selector_width: one layer of two heads without a BOS token (docs/rasp.md)
    w = analyze(selector_width(key(tokens) == query(tokens)))
    assert (w.layers, w.heads_per_layer) == (1, [2])


def test_window_sum():
    assert window_sum().input([1, 3, 2, 2, 2]) == [1, 4, 6, 7, 6]
    assert window_sum(2).input([1, 3, 2, 2, 2]) == [1, 4, 5, 4, 4]
    assert layers(window_sum()) == 1


def test_cumsum():
    assert cumsum().input([3, 1, -2, 3, 1]) == [3, 4, 2, 5, 6]
    assert layers(cumsum()) == 1
    # "a 2-layer transform: the first computes length and the second the cumulative sum"
    x = cumsum(make_length() - indices)
    assert x.input([3, 2, 3, 5]) == [4, 7, 9, 10]
    assert layers(x) == 2
    # one selected boolean passes through, several are counted
    assert cumsum(tokens != "<")("xx<") == [True, 2, 2]


def test_index_and_shift():
    assert index(1)("hello") == ["e"] * 5
    assert shift(2)("hello") == list("__hel")
    assert shift(-1, "0")("hello") == list("ello0")
    assert shift()("ab") == ["_", "a"]
    assert layers(shift(2)) == 1


def test_minimum():
    assert minimum().input([5, 3, 2, 5, 2]) == [2] * 5
    assert minimum().input([7, 1, 4]) == [1, 1, 1]
    assert layers(minimum()) == 2  # "Our version uses 2 layers of attention"


def test_first():
    assert first("l")("hello") == [2] * 5
    assert first("o")("hello") == [4] * 5
    assert first("z")("hello") == [99] * 5
    assert layers(first("l")) == 2  # "(2 layers)"


def test_ralign():
    assert ralign()("xyz__") == list("--xyz")
    assert ralign()("xyz___") == list("---xyz")
    assert ralign()("xyz") == list("xyz")
    assert layers(ralign()) == 2  # "(2 layers)"


def test_split():
    assert split("+", False)("xyz+zyr") == list("0000zyr")
    assert split("+", 0)("xyz+zyr") == list("0000zyr")
    assert split("+", True)("xyz+zyr") == list("0000xyz")
    assert split("+", True)("ab+c") == list("00ab")
    # "3 layers to get and align the first part of the sequence, but only 1 for the second"
    assert layers(split("+", False)) == 1
    assert layers(split("+", True)) == 3


def test_slide():
    assert slide(tokens != "<").input("xxxh<<<l") == list("xxxhllll")
    assert slide(tokens != "<")("a<b<<c") == list("abbccc")
    assert layers(slide(tokens != "<")) == 2  # "(2 layers)"


@pytest.mark.parametrize(
    "text",
    ["683+345", "1+1", "9+9", "99+1", "5+55", "99+901", "999+1", "19492+23919", "12345+678", "0+0"],
)
def test_add_on_sums_of_different_lengths(text):
    left, right = text.split("+")
    # the sum, left-padded with zeros to the input's length (the blog: 683+345 -> 0001028)
    expected = [int(c) for c in str(int(left) + int(right)).rjust(len(text), "0")]
    assert add()(text) == expected


def test_add_intermediate_values_of_the_blog():
    # The blog illustrates the steps on six positions ("[0, 0, 0, 9, 12, 8]", "00<100",
    # "001100"); its program keeps all seven positions of "683+345", one more leading 0.
    x = atoi(split("+", True)) + atoi(split("+", False))
    assert x("683+345") == [0, 0, 0, 0, 9, 12, 8]
    gets_carry = shift(-1, "0", where(x > 9, "1", where(x == 9, "<", "0")))
    assert gets_carry("683+345") == list("000<100")
    assert slide(gets_carry != "<", gets_carry)("683+345") == list("0001100")


def test_add_takes_six_layers():
    assert layers(add()) == 6  # "The full system is 6 layers."


def test_trace_and_draw(tmp_path):
    steps = dict(rasp.trace(make_length() - indices, "abc"))
    assert steps["length"] == [3, 3, 3] and steps["indices"] == [0, 1, 2]
    svg = draw(flip(), "hello", tmp_path / "flip.svg")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert (tmp_path / "flip.svg").read_text(encoding="utf-8") == svg
    assert ">o<" in svg and ">h<" in svg  # the input and the output's values are drawn


# ---- errors -----------------------------------------------------------------------------------

def test_aggregate_of_several_strings_is_a_clear_error():
    program = (key(1) == query(1)).value(tokens).name("gather")
    with pytest.raises(lrnn.LrnnError) as info:
        program("ab")
    message = str(info.value)
    assert "gather" in message and "not all numbers" in message and '"a", "b"' in message
    assert program("a") == ["a"]  # one selected string passes through


def test_selector_compared_with_an_sop_is_a_clear_error():
    sel = key(tokens) == query(tokens)
    for attempt in (lambda: sel == tokens, lambda: tokens == sel, lambda: sel < 1, lambda: sel + tokens):
        with pytest.raises(lrnn.LrnnError) as info:
            attempt()
        assert "selector" in str(info.value)
    with pytest.raises(lrnn.LrnnError, match="cannot compare a selector with an s-op"):
        sel == tokens  # noqa: B015
    with pytest.raises(TypeError, match="query"):
        key(tokens) == tokens  # noqa: B015
    with pytest.raises(TypeError, match="must be a selector"):
        aggregate(tokens, tokens)
    with pytest.raises(lrnn.LrnnError, match="not a selector"):
        where(sel, tokens, 0)
    with pytest.raises(TypeError, match="truth value"):
        bool(tokens == 1)
    with pytest.raises(TypeError, match="truth value"):
        if sel:
            pass


def test_bad_values_and_predicates_are_type_errors():
    with pytest.raises(TypeError, match="list"):
        tokens + [1, 2]
    with pytest.raises(TypeError, match="input position 1"):
        tokens([1, object()])
    with pytest.raises(TypeError, match="str"):
        tokens(5)
    with pytest.raises(TypeError, match="comparison"):
        select(tokens, tokens, lambda k, q: k < q)
    with pytest.raises(TypeError, match="needs a function"):
        tokens.map(3)


def test_a_raising_lambda_raises_its_own_exception():
    program = tokens.map(lambda x: 10 // x).name("tenth")
    assert program([1, 2, 5]) == [10, 5, 2]
    with pytest.raises(ZeroDivisionError) as info:
        program([1, 0])
    notes = getattr(info.value, "__notes__", [])
    if sys.version_info >= (3, 11):
        assert any("tenth" in n for n in notes)  # the note names the failing s-op
    # the same program keeps working afterwards, and so does a zip
    assert program([5]) == [2]
    with pytest.raises(KeyError):
        SOp.zip(lambda a, b: {}[a], tokens, indices)("a")
    # a function returning something that is not a value is an lrnn error naming it
    with pytest.raises(lrnn.LrnnError, match="returned a list"):
        tokens.map(lambda x: [x]).name("listy")("a")


def test_functions_stay_alive_inside_programs():
    def build():
        offset = 7
        return tokens.map(lambda x: x + offset)  # the only reference to the lambda

    program = build()
    gc.collect()
    assert program([1, 2]) == [8, 9]
    renamed = program.name("plus7")
    del program
    gc.collect()
    assert renamed([0]) == [7]


def test_deep_programs_run_and_are_released():
    # 200000 chained operations (a loop builds them in a blink): evaluating, analysing and
    # releasing them must not recurse once per operation (it used to overflow the stack).
    x = tokens
    for _ in range(200000):
        x = x + 1
    assert x([1, 2]) == [200001, 200002]
    assert layers(x) == 0
    del x
    gc.collect()
    with pytest.raises(lrnn.LrnnError, match="nested too deeply"):
        rasp.parse("x = " + "(" * 100000 + "tokens" + ")" * 100000 + ";")


def test_a_program_referring_to_itself_exits_cleanly(tmp_path):
    # A module-level lambda whose globals hold its own program is a cycle through C++; it is
    # broken at exit, so nothing leaks (nanobind would report leaked instances on stderr).
    script = tmp_path / "cycle.py"
    script.write_text(textwrap.dedent("""
        from lrnn.rasp import *
        atoi = tokens.map(lambda x: ord(x) - ord("0"))
        twice = SOp.zip(lambda a, b: a + b + (atoi is not None), atoi, atoi)
        print(twice("12"))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[3, 5]"
    assert "leaked" not in out.stderr


# ---- .rasp files ------------------------------------------------------------------------------

def test_rasp_files_load_run_and_analyze():
    reverse = rasp.load(PAPER / "reverse.rasp")
    assert reverse.convention == "mean"
    assert reverse("abc") == ["c", "b", "a"]
    assert reverse.input([1, 2]) == [2, 1]
    a = analyze(reverse)
    assert (a.layers, a.heads_per_layer) == (2, [1, 1])
    assert [name for name, _ in reverse.named] == ["mirror", "reverse"]  # the named s-ops
    assert reverse.get("mirror")("abcd") == [3, 2, 1, 0]
    assert reverse.with_output("mirror")("ab") == [1, 0]
    hist = rasp.load(PAPER / "histogram.rasp")
    assert hist("abaa") == [3, 1, 3, 3]
    dyck1 = rasp.load(PAPER / "dyck1.rasp")
    assert dyck1("(()") == ["P", "P", "P"] and dyck1("())(") == ["P", "T", "F", "F"]
    assert (analyze(dyck1).layers, analyze(dyck1).max_heads) == (2, 1)
    dyck2 = rasp.load(PAPER / "dyck2.rasp")
    assert (analyze(dyck2).layers, analyze(dyck2).max_heads) == (4, 2)


def test_rasp_text_and_its_errors():
    program = rasp.parse("prev = select(indices, indices, <);\nsums = aggregate(prev, tokens_int, 0);\n")
    assert program([4, 5, 6]) == [0, 4, 4.5]  # the paper's mean
    assert rasp.run(program, [4, 5, 6], convention="sum") == [0, 4, 9]
    with pytest.raises(lrnn.LrnnError) as info:
        rasp.parse("x = select(indices, indices, ==;\n", "bad.rasp")
    e = info.value
    assert e.kind == "parse" and e.file == "bad.rasp" and e.line == 1 and "^" in str(e)
    with pytest.raises(lrnn.LrnnError) as info:
        rasp.load(PAPER / "errors" / "selector_compare.rasp")
    assert "cannot compare a selector" in str(info.value) and info.value.line is not None


# ---- lowering ---------------------------------------------------------------------------------

def all_inputs(vocab, max_len):
    for n in range(1, max_len + 1):
        yield from (list(t) for t in itertools.product(vocab, repeat=n))


def check_lowering(program, vocab, max_len, convention=None):
    """The lowered template, evaluated by the engine on every input up to max_len, equals
    the interpreter. Returns how many inputs were compared."""
    lowered = to_template(program, vocab, max_len, convention)
    inputs, wanted = [], []
    for x in all_inputs(vocab, max_len):
        try:
            wanted.append(rasp.run(program, x, convention))
        except lrnn.LrnnError:
            continue  # not an input of this program (the interpreter fails on it)
        inputs.append(x)
    got = lowered.run_many(inputs)
    for x, g, w in zip(inputs, got, wanted):
        assert g == pytest.approx(w, abs=1e-6), f"{x}: lowered {g}, interpreter {w}"
    return len(inputs)


def test_lowered_template_text_and_facts():
    lowered = to_template(shift(1), "ab", 3)
    assert lowered.exact and not lowered.output_numeric and lowered.output_predicate == "out/2"
    assert lowered.goal == "out(I, V)"
    assert "@eq(B, A)" in lowered.text and str(lowered) == lowered.text
    assert lowered.facts("hi") == "token(0, 'h'), index(0, 0), token(1, 'i'), index(1, 1)."
    # the text is a template lrnn reads back, and its logic answers give the output
    answers = lrnn.logic.query(lowered.text, "out(I, V)", lowered.facts("ab"))
    assert answers == [{"I": "0", "V": "_"}, {"I": "1", "V": "a"}]  # answers are strings, as in PyNeuraLogic
    numeric = to_template(histogram(), "ab", 3)
    assert numeric.output_numeric and numeric.goal == "out(I)"
    assert numeric.run("aba") == [2, 1, 2]


def blog_program(name):
    # Looked up by name so that pytest's parameter lists hold no s-ops (nanobind would report
    # objects that outlive the interpreter's teardown as leaks).
    return {
        "flip": flip, "length": make_length, "histogram": histogram, "window_sum": window_sum,
        "cumsum": cumsum, "shift": lambda: shift(2), "minimum": minimum, "first": lambda: first("l"),
        "ralign": ralign, "split_first": lambda: split("+", True), "split_second": lambda: split("+", False),
        "slide": lambda: slide(tokens != "<"), "add": add, "atoi_map": lambda: atoi() * 3 + indices,
    }[name]()


# (program, vocabulary, max length, inputs compared at least: every input up to the length
# except those the interpreter rejects, e.g. ralign gathering several strings)
@pytest.mark.parametrize(
    "name, vocab, max_len, at_least",
    [
        ("flip", "abc", 6, 1092),
        ("length", "a", 6, 6),
        ("histogram", "abc", 6, 1092),
        ("window_sum", [0, 1, 3], 6, 1092),
        ("cumsum", [-2, 1, 3], 6, 1092),
        ("shift", "abc", 6, 1092),
        ("minimum", [1, 2, 5], 6, 1092),
        ("first", "hlo", 6, 1092),
        ("ralign", "x_", 6, 60),
        ("split_first", "1+", 6, 60),
        ("split_second", "1+", 6, 126),
        ("slide", "x<", 6, 60),
        ("add", "19+", 6, 1092),
        ("atoi_map", "0129", 4, 340),
    ],
)
def test_lowered_blog_programs_reproduce_the_interpreter(name, vocab, max_len, at_least):
    assert check_lowering(blog_program(name), vocab, max_len) >= at_least


def test_lowered_paper_programs_reproduce_the_interpreter():
    assert check_lowering(rasp.load(PAPER / "reverse.rasp"), "abc", 6) == 1092
    assert check_lowering(rasp.load(PAPER / "dyck1.rasp"), "()", 6) == 126
    assert check_lowering(rasp.load(PAPER / "histogram.rasp"), "abc", 6) == 1092
