"""PyNeuraLogic's model, training and dataset surface on lrnn (issue 11, part MODEL):
Settings, optimizers and their decays, losses, initialisers, gradient clipping,
Model.train/loss/validate/ground/reset_parameters/clone, build_dataset keywords, the
tensor and CSV datasets, the built-in loaders, the pictures and the torch bridge.
Numbers are checked against PyTorch (float64) where it has the same computation."""

import io
import shutil
from pathlib import Path

import numpy as np
import pytest

import lrnn
import lrnn.model as lrnn_model
from lrnn.errors import LrnnError
from lrnn import R, Settings, Template
from lrnn.dataset import CSVDataset, CSVFile, Data, Dataset, Mode, Sample, TensorDataset
from lrnn.nn.init import Longtail, Torch, Uniform
from lrnn.nn.loss import MSE, CrossEntropy, SoftEntropy
from lrnn.nn.optim import SGD, Adam
from lrnn.nn.optim.lr_scheduler import ArithmeticLR, GeometricLR

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "datasets" / "neuralogic"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/datasets/neuralogic is not there")
needs_graphviz = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")

# A linear model with written weights: out = w . f, so torch computes the same thing.
W0 = [0.3, -0.2]
SAMPLES = [([1.0, 2.0], 1.0), ([0.5, -1.0], 0.0), ([2.0, 1.5], -1.0)]


def linear_model(settings):
    model = lrnn.Model()
    model += (R.out <= R.f["w":[W0]]) | [lrnn.Transformation.IDENTITY]
    model += R.out / 0 | [lrnn.Transformation.IDENTITY]
    return model.build(settings)


def linear_dataset():
    return Dataset([Sample(R.out[t], [R.f[x]]) for x, t in SAMPLES])


def torch_steps(reduction="mean", clip_value=None, clip_norm=None, batches=None, lr=0.1):
    """SGD steps of the same linear model in torch (float64); batches: lists of sample
    indices per step (default: one full batch)."""
    torch = pytest.importorskip("torch")
    w = torch.tensor([W0], dtype=torch.float64, requires_grad=True)
    for batch in batches or [list(range(len(SAMPLES)))]:
        x = torch.tensor([SAMPLES[i][0] for i in batch], dtype=torch.float64)
        t = torch.tensor([SAMPLES[i][1] for i in batch], dtype=torch.float64)
        loss = torch.nn.functional.mse_loss((x @ w.T).reshape(-1), t, reduction=reduction)
        w.grad = None
        loss.backward()
        if clip_value is not None:
            torch.nn.utils.clip_grad_value_([w], clip_value)
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_([w], clip_norm)
        with torch.no_grad():
            w -= lr * w.grad
    return w.detach().numpy().reshape(-1)


def weight(model):
    return np.asarray(model.parameters()["$w"]).reshape(-1)


# ---- Settings -----------------------------------------------------------------------------------
def test_settings_refuse_unknown_keys_with_the_closest_name():
    with pytest.raises(TypeError, match="'epochs'"):
        Settings(epoch=10)
    with pytest.raises(TypeError, match="'optimizer'"):
        Settings(optimiser=SGD())
    s = Settings()
    with pytest.raises(TypeError, match="'initializer'"):
        s.initialiser = Uniform()


def test_settings_defaults_are_read_from_the_engine_not_written_in_python(monkeypatch):
    engine = dict(lrnn._core.default_settings())
    engine.update(optimizer="sgd", lr=0.25, loss="crossentropy", initializer="uniform")
    monkeypatch.setattr(lrnn._core, "default_settings", lambda: engine)
    s = Settings()
    assert type(s.optimizer) is SGD and s.optimizer.lr == 0.25
    assert type(s.error_function).__name__ == "CrossEntropy"
    assert type(s.initializer) is Uniform
    engine["optimizer"] = "rmsprop"
    with pytest.raises(RuntimeError, match="'rmsprop'"):
        Settings().optimizer


def test_settings_defaults_are_objects_and_proxies_follow():
    s = Settings()
    assert isinstance(s.optimizer, Adam) and s.optimizer.lr == lrnn._core.default_settings()["lr"]
    assert isinstance(s.error_function, MSE)
    assert str(s.initializer) == "GLOROT"
    proxy = s.create_proxy()
    assert len(s._proxies) == 1
    s.initializer = Uniform(5.0)
    s.optimizer = SGD(0.5)
    assert proxy.initializer_uniform_scale == 5.0 and proxy.optimizer.lr == 0.5
    del proxy
    assert len(s._proxies) == 0
    with pytest.raises(ValueError, match="clip_grad_norm"):
        Settings(clip_grad_norm=0)
    with pytest.raises(ValueError, match="shuffle"):
        Settings(shuffle="no")
    s.initializer_uniform_scale = 3.0
    assert s.initializer.scale == 3.0 and s.initializer.engine_spec() == "uniform(1.5)"
    s.initializer = lrnn.Glorot()
    assert s.initializer_uniform_scale is None
    with pytest.raises(ValueError, match="Uniform"):
        s.initializer_uniform_scale = 2.0


# ---- optimizers and decays ---------------------------------------------------------------------
@pytest.mark.parametrize("chain_pruning", [True, False])
def test_chain_pruning_is_ignored_and_documented(chain_pruning):
    """lrnn never prunes: `(out <= h) | [tanh]` with `out/0 | [tanh]` is tanh(tanh(1)) either
    way (PyNeuraLogic 0.9.2 with chain_pruning=True drops a tanh and gives tanh(1) = 0.7616);
    the Settings docstring, which help(Settings) shows, says so with these numbers."""
    model = lrnn.Model()
    model += (R.out <= R.h) | [lrnn.Transformation.TANH]
    model += R.out / 0 | [lrnn.Transformation.TANH]
    model.build(Settings(chain_pruning=chain_pruning))
    output = np.ravel(model(Dataset([Sample(R.out[1], [R.h[1]])])))
    assert output == pytest.approx([np.tanh(np.tanh(1.0))], abs=1e-12)
    assert abs(output[0] - 0.6420) < 5e-5 and abs(np.tanh(1.0) - 0.7616) < 5e-5
    doc = " ".join(Settings.__doc__.split())
    assert "lrnn never prunes" in doc and "0.7616" in doc and "0.6420" in doc


def test_sgd_rate_zero_is_accepted_and_freezes_negative_is_refused():
    with pytest.raises(ValueError, match="learning rate"):
        SGD(lr=-0.1)
    model = linear_model(Settings(optimizer=SGD(lr=0.0), epochs=3))
    model.train(linear_dataset(), progress=False)
    assert np.array_equal(weight(model), W0)


def test_lr_decays_by_hand_and_in_training():
    arithmetic = Adam(lr=100, lr_decay=ArithmeticLR(10))
    arithmetic.initialize()
    rates = []
    for _ in range(4):
        arithmetic._lr_decay.decay(1)
        rates.append(arithmetic.lr)
    assert rates == [90, 80, 70, 60]
    geometric = Adam(lr=100, lr_decay=GeometricLR(0.5, 2))
    rates = []
    for epoch in range(1, 6):
        geometric.get_lr_decay().decay(epoch)
        rates.append(geometric.lr)
    assert rates == [100, 50, 50, 25, 25]
    geometric.initialize()
    assert geometric.lr == 100
    with pytest.raises(ValueError):
        GeometricLR(0.0, 1)
    with pytest.raises(ValueError):
        ArithmeticLR(0)
    # The engine applies them per epoch: the history shows the rate of every epoch.
    model = linear_model(Settings(optimizer=SGD(lr=0.1, lr_decay=GeometricLR(0.5, 2)), epochs=5))
    history = model.train(linear_dataset(), progress=False)
    assert history.learning_rates == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025], abs=1e-15)
    model = linear_model(Settings(optimizer=SGD(lr=0.1, lr_decay=ArithmeticLR(4)), epochs=5))
    history = model.train(linear_dataset(), progress=False)
    assert history.learning_rates == pytest.approx([0.1, 0.075, 0.05, 0.025, 0.0], abs=1e-15)


# ---- losses --------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_reduction_matches_torch(reduction):
    model = linear_model(Settings(batch_size=0, optimizer=SGD(lr=0.1), error_function=MSE(reduction=reduction), epochs=1))
    model.train(linear_dataset(), progress=False)
    assert np.allclose(weight(model), torch_steps(reduction), atol=1e-12, rtol=0)
    loss = model.loss(linear_dataset())
    outputs = np.array([np.dot(weight(model), x) for x, _ in SAMPLES])
    errors = (outputs - np.array([t for _, t in SAMPLES])) ** 2
    assert loss == pytest.approx(errors.sum() if reduction == "sum" else errors.mean(), abs=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        MSE(reduction="none")


def test_soft_entropy_is_cross_entropy_from_logits():
    assert isinstance(SoftEntropy(), CrossEntropy) and SoftEntropy().engine_name == "crossentropy"
    with pytest.raises(ValueError, match="mean"):
        CrossEntropy(reduction="sum")


# ---- initialisers ---------------------------------------------------------------------------------
def test_torch_and_longtail_initialisers():
    model = lrnn.Model()
    model += (R.out <= R.f["w":1, 64]) | [lrnn.Transformation.IDENTITY]
    w = np.asarray(model.build(Settings(initializer=Torch(), seed=4)).parameters()["$w"]).reshape(-1)
    bound = 1 / np.sqrt(64)
    assert np.all(np.abs(w) <= bound) and np.max(np.abs(w)) > bound / 2
    model = lrnn.Model()
    model += (R.out <= R.f["w":1, 400]) | [lrnn.Transformation.IDENTITY]
    w = np.asarray(model.build(Settings(initializer=Longtail(), seed=4)).parameters()["$w"]).reshape(-1)
    # 10 (1 - u^(1/51)): on [0, 10], median 10 (1 - 0.5^(1/51)) = 0.135
    assert np.all((w >= 0) & (w <= 10)) and 0.08 < np.median(w) < 0.2


# ---- gradient clipping ------------------------------------------------------------------------------
@pytest.mark.parametrize("clip", [{"clip_grad_value": 0.3}, {"clip_grad_norm": 0.5}])
def test_gradient_clipping_matches_torch_and_changes_the_step(clip):
    clipped = linear_model(Settings(batch_size=0, optimizer=SGD(lr=0.1), epochs=1, **clip))
    clipped.train(linear_dataset(), progress=False)
    plain = linear_model(Settings(batch_size=0, optimizer=SGD(lr=0.1), epochs=1))
    plain.train(linear_dataset(), progress=False)
    expected = torch_steps(clip_value=clip.get("clip_grad_value"), clip_norm=clip.get("clip_grad_norm"))
    assert np.allclose(weight(clipped), expected, atol=1e-12, rtol=0)
    assert not np.allclose(weight(clipped), weight(plain))


# ---- training results, online order, loss/validate ---------------------------------------------------
def test_online_training_in_order_matches_torch_step_by_step():
    model = linear_model(Settings(optimizer=SGD(lr=0.1), epochs=2))
    built = model.build_dataset(linear_dataset(), batch_size=1)
    results = model.train(built, progress=False)
    order = [[0], [1], [2], [0], [1], [2]]
    assert np.allclose(weight(model), torch_steps(batches=order), atol=1e-12, rtol=0)
    # Per-output (target, output, error) of the last epoch, each output as computed in
    # that epoch before its own step.
    w = torch_steps(batches=order[:3])
    outputs = []
    for i, (x, t) in enumerate(SAMPLES):
        outputs.append(float(np.dot(w, x)))
        w = w - 0.1 * 2 * (outputs[-1] - t) * np.array(x)
    assert [r[0] for r in results] == [t for _, t in SAMPLES]
    assert [r[1] for r in results] == pytest.approx(outputs, abs=1e-12)
    assert [r[2] for r in results] == pytest.approx([(o - t) ** 2 for o, (_, t) in zip(outputs, SAMPLES)], abs=1e-12)
    assert len(results[0]) == 3
    assert "shuffle" not in model.settings.options  # the dataset's order is not written into the settings


def test_loss_and_validate_do_not_train():
    model = linear_model(Settings(optimizer=SGD(lr=0.1)))
    expected = [(t, float(np.dot(W0, x)), (float(np.dot(W0, x)) - t) ** 2) for x, t in SAMPLES]
    validated = model.validate(linear_dataset())
    assert [v[0] for v in validated] == [e[0] for e in expected]
    assert [v[1] for v in validated] == pytest.approx([e[1] for e in expected], abs=1e-15)
    assert [v[2] for v in validated] == pytest.approx([e[2] for e in expected], abs=1e-15)
    assert model.loss(linear_dataset()) == pytest.approx(np.mean([e[2] for e in expected]), abs=1e-15)
    assert np.array_equal(weight(model), W0)


def test_build_dataset_keywords_and_ground():
    model = linear_model(Settings())
    built = model.ground(linear_dataset(), batch_size=2)
    assert built.batch_size == 2 and len(built) == 3
    with pytest.raises(ValueError, match="batch_size"):
        model.build_dataset(linear_dataset(), batch_size=0)
    # every sample writes the fact `f`: as learnable facts keyed by literal that is ambiguous
    # (tests/python/test_learnable_facts.py covers learnable facts themselves)
    with pytest.raises(LrnnError, match=r"learnable example fact f .*sample 0"):
        model.build_dataset(linear_dataset(), learnable_facts=True)


def test_reset_parameters_clone_and_seeds():
    def built(seed=None):
        model = lrnn.Model()
        model += (R.out <= R.f[1, 2]) | [lrnn.Transformation.IDENTITY]
        return model.build(Settings(optimizer=SGD(lr=0.1), epochs=3, seed=seed))

    model = built(seed=5)
    initial = model.parameters()
    clone = model.clone()
    assert isinstance(clone, lrnn.Model) and clone is not model
    model.train(linear_dataset(), progress=False)
    changed = model.parameters()
    assert not all(np.array_equal(initial[k], changed[k]) for k in initial)
    assert all(np.array_equal(initial[k], v) for k, v in clone.parameters().items())  # the clone did not move
    model.reset_parameters()
    assert all(np.array_equal(initial[k], v) for k, v in model.parameters().items())
    lrnn.initialize()
    assert lrnn.is_initialized()
    lrnn.manual_seed(11)
    try:
        a, b = built().parameters(), built().parameters()
        assert all(np.array_equal(a[k], b[k]) for k in a)
        lrnn.manual_seed(12)
        c = built().parameters()
        assert not all(np.array_equal(a[k], c[k]) for k in a)
    finally:
        lrnn_model._manual_seed = None


# ---- tensor and CSV datasets --------------------------------------------------------------------------
def test_data_logic_form():
    data = Data(x=[[0, 1], [1, 0], [1, 0]], edge_index=[[0, 2], [1, 0]], y=[3, 4, 5], y_mask=[0, 2],
                edge_attr=[[0, 0, 1], [1, 0, 0]])
    queries, facts = data.to_logic_form()
    assert [str(f) for f in facts] == [
        "<[0, 0, 1]> edge(0, 1).", "<[1, 0, 0]> edge(2, 0).",
        "<[0, 1]> node_feature(0).", "<[1, 0]> node_feature(1).", "<[1, 0]> node_feature(2).",
    ]
    assert [q.atom_str() for q in queries] == ["predict(0)", "predict(2)"]
    assert [float(q.weight.to_numpy()) for q in queries] == [3.0, 5.0]
    _, facts = data.to_logic_form(feature_name="feat", one_hot_decode_features=True, one_hot_decode_edge_features=True)
    assert [str(f) for f in facts] == ["<1> edge_2(0, 1).", "<1> edge_0(2, 0).", "<1> feat_1(0).", "<1> feat_0(1).",
                                       "<1> feat_0(2)."]
    query, _ = Data(x=[[1]], edge_index=[[], []], y=2).to_logic_form(one_hot_encode_labels=True, max_classes=3)
    assert np.array_equal(query.weight.to_numpy(), [0, 0, 1])
    tensors = TensorDataset([data])
    assert len(tensors.data) == 1 and len(tensors.to_dataset()) == 2 and len(tensors.to_dataset()[0]) == 5


def test_tensor_dataset_trains_a_model():
    data = Data(x=[[0.0], [1.0], [-1.0]], edge_index=[[0, 1, 1, 2], [1, 0, 2, 1]], y=[[1], [0], [1]], y_mask=[0, 1, 2])
    model = lrnn.Model()
    model += (R.predict(lrnn.V.X) <= (R.node_feature(lrnn.V.Y)[1, 1], R.edge(lrnn.V.Y, lrnn.V.X)))
    model.build(Settings(optimizer=SGD(0.01)))
    results = model.train(model.build_dataset(TensorDataset(data=[data])), epochs=2, progress=False)
    assert [r[0] for r in results] == [1.0, 0.0, 1.0]


def test_csv_files_and_modes():
    text = "a,b,c\n1,2,3\n6,R,s\n13,,\n"
    facts = CSVFile("rel", io.StringIO(text)).to_logic_form()
    assert [str(f) for f in facts] == ["rel(a, b, c).", "rel(1, 2, 3).", "rel(6, r, s).", "rel(13, 0, 0)."]
    facts = CSVFile("rel", io.StringIO(text), value_column="a", term_columns=["b", "c"], header=True, n_rows=2).to_logic_form()
    assert [f.atom_str() for f in facts] == ["rel(2, 3)", "rel(r, s)"]
    assert [float(f.weight.to_numpy()) for f in facts] == [1.0, 6.0]
    with pytest.raises(ValueError, match="'z'"):
        CSVFile._find_index_in_header(["a"], "z")
    rows = "1,2\n3,4\n"
    sources = [CSVFile(name, io.StringIO(rows)) for name in ("p", "q")]
    assert [len(s) for s in CSVDataset(sources, mode=Mode.ONE_EXAMPLE).to_dataset()] == [4]
    sources = [CSVFile(name, io.StringIO(rows)) for name in ("p", "q")]
    zipped = CSVDataset(sources, mode=Mode.ZIP).to_dataset()
    assert [[str(f) for f in s.example] for s in zipped] == [["p(1, 2).", "q(1, 2)."], ["p(3, 4).", "q(3, 4)."]]
    sources = [CSVFile(name, io.StringIO(rows)) for name in ("p", "q")]
    per_source = CSVDataset(sources, mode=Mode.EXAMPLE_PER_SOURCE).to_dataset()
    assert [[str(f) for f in s.example] for s in per_source] == [["p(1, 2).", "p(3, 4)."], ["q(1, 2).", "q(3, 4)."]]


# ---- built-in datasets and pictures ------------------------------------------------------------------------
def test_generated_xor_datasets_train():
    from lrnn.utils.data import XOR, XOR_Vectorized

    from lrnn.dataset import XOR as dataset_xor

    assert dataset_xor is XOR
    for loader in (XOR, XOR_Vectorized):
        model, dataset = loader()
        assert len(dataset) == 4
        model.build(Settings(optimizer=Adam(lr=0.1), epochs=300, seed=1))
        model.train(dataset, progress=False)
        assert np.array_equal(np.round(model(dataset)), [0, 1, 1, 0])


def test_xor_weights_are_numbered_as_pyneuralogics_template():
    """XOR's template is written in the order of PyNeuraLogic's naive/template.txt (the eight
    hidden rules, then the eight output rules), so weight i is its weight i: its state_dict
    (e.g. Java's initial weights) loads into the same places. Each atom and rule applies its
    tanh (docs/language.md), v_h is the output rule's head weight:
    xor = tanh(sum_h v_h tanh(tanh(tanh(wa_h a + wb_h b))))."""
    from lrnn.utils.data import XOR

    wa, wb, v = 0.1 * np.arange(1, 9), -0.05 * np.arange(1, 9), 0.2 - 0.03 * np.arange(1, 9)
    weights = {}
    for h in range(8):
        weights[2 * h], weights[2 * h + 1], weights[16 + h] = wa[h], wb[h], v[h]
    model, dataset = XOR()
    model.build(Settings())
    model.load_state_dict({"weights": weights})
    expected = [np.tanh(np.sum(v * np.tanh(np.tanh(np.tanh(wa * a + wb * b))))) for (a, b) in
                ((0, 0), (0, 1), (1, 0), (1, 1))]
    assert np.ravel(model(dataset)) == pytest.approx(expected, abs=1e-12)


@needs_shared
def test_trains_template_is_written_in_pyneuralogics_order(monkeypatch):
    """Weights are numbered in the order written, so the car rule's body follows PyNeuraLogic's
    simple/trains/template.txt (its state_dict loads into the same places)."""
    from lrnn.utils.data import Trains

    monkeypatch.setenv("LRNN_DATASETS", str(SHARED.parent))
    model, _ = Trains()
    lines = str(model).splitlines()
    body = ", ".join(f"{{1}} {a}(X, Y)" for a in ("shape", "length", "sides", "wheels", "loadnum", "loadshape", "roof"))
    assert f"vagon(X, Y) :- {body}. [activation=tanh]" in lines
    assert lines.index(f"vagon(X, Y) :- {body}. [activation=tanh]") > max(i for i, l in enumerate(lines) if "roof(X, Y, " in l)


@needs_shared
def test_shared_datasets_load(monkeypatch):
    from lrnn.utils.data import Family, Mutagenesis, Nations, Trains

    monkeypatch.setenv("LRNN_DATASETS", str(SHARED.parent))
    for loader, outputs in ((Family, 2), (Trains, 20), (Mutagenesis, 188)):
        model, dataset = loader()
        model.build(Settings(seed=1))
        assert len(model.build_dataset(dataset).queries) == outputs
    model, dataset = Nations()
    assert "embed_nation(cuba)" in str(model)
    monkeypatch.setenv("LRNN_DATASETS", "/nonexistent")
    monkeypatch.chdir("/")
    with pytest.raises(FileNotFoundError, match="LRNN_DATASETS"):
        Trains()


@needs_graphviz
def test_visualize_returns_png_bytes():
    from lrnn.utils.data import XOR_Vectorized
    from lrnn.utils.visualize import draw_model, draw_sample

    model, dataset = XOR_Vectorized()
    model.build(Settings())
    for picture in (draw_model(model, show=False), draw_sample(model.build_dataset(dataset)[0], show=False),
                    model.build_dataset(dataset)[0].draw(show=False)):
        assert isinstance(picture, bytes) and picture.startswith(b"\x89PNG")


# ---- the torch bridge -----------------------------------------------------------------------------------
def test_torch_function_gradcheck_and_training():
    torch = pytest.importorskip("torch")
    from lrnn.nn.torch_function import NeuraLogic

    model = lrnn.Model()
    model += (R.out <= (R.a[2, 3], R.b[2, 2])) | [lrnn.Transformation.TANH]
    model += (R.y <= R.out[1, 2]) | [lrnn.Transformation.SIGMOID]
    layer = NeuraLogic(model, [R.a[3,], R.b[2,]], R.y, lambda a, b: [R.a[a], R.b[b * 2]], Settings(seed=3),
                       dtype=torch.float64)
    assert len(list(layer.parameters())) == 3
    a = torch.tensor([0.5, -1.0, 0.25], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([1.5, -0.5], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, *w: layer(a, b), (a, b, *layer.parameters()), eps=1e-6, atol=1e-8)
    # The same network in torch gives the same output.
    w = [p.detach() for p in layer.parameters()]
    expected = torch.sigmoid(w[2] @ torch.tanh(w[0] @ a + w[1] @ (b * 2)))
    assert float(layer(a, b).detach()) == pytest.approx(float(expected.detach().reshape(())), abs=1e-12)
    # A tensor read by to_logic but not written as a fact's value is refused, not dropped.
    sneaky = NeuraLogic(model, [], R.y, lambda a, b: (np.asarray(a), [R.a[[1.0, 2.0, 3.0]], R.b[[1.0, 1.0]]])[1])
    with pytest.raises(ValueError, match="to_logic"):
        sneaky(a, b)


# ---- parity with PyNeuraLogic 0.9.2 (numbers recorded from the real package) ---------------------------
def test_online_training_matches_recorded_pyneuralogic_numbers():
    import json

    recorded = json.loads((Path(__file__).parent / "data" / "pyneuralogic_linear_training.json").read_text())
    assert len(recorded["runs"]) == 12
    for key, run in recorded["runs"].items():
        reduction, batch, clip = key.split("_")
        clip_options = {"value": {"clip_grad_value": 0.3}, "norm": {"clip_grad_norm": 0.5}}.get(clip[4:], {})
        model = linear_model(Settings(optimizer=SGD(lr=0.1), error_function=MSE(reduction=reduction), **clip_options))
        built = model.build_dataset(linear_dataset(), batch_size=int(batch[5:]))
        results = model.train(built, epochs=2, progress=False)
        assert np.allclose([list(r) for r in results], run["results"], atol=1e-12, rtol=0), key
        assert np.allclose(weight(model), np.ravel(run["weights"]["w"]), atol=1e-12, rtol=0), key
        assert model.loss(built) == pytest.approx(run["loss"], abs=1e-12), key
        assert np.allclose([list(r) for r in model.validate(built)], run["validate"], atol=1e-12, rtol=0), key


# ---- parameters() in PyNeuraLogic's form ---------------------------------------------------
def numbered_template():
    t = lrnn.Model()
    t += R.k[0.5].fixed()
    t += R.h(lrnn.V.X)[2, 3] <= (R.a(lrnn.V.X)[3, 3], R.b(lrnn.V.X))
    t += R.g(lrnn.V.X) <= (R.a(lrnn.V.X)["w":3, 3], R.b(lrnn.V.X))
    t += R.z[2.0]
    t += R.g2(lrnn.V.X) <= R.a(lrnn.V.X)["w":3, 3]
    t += R.q(lrnn.V.X)[1, 3] <= R.a(lrnn.V.X)
    return t.build(Settings(seed=1))


def test_parameters_number_weights_as_pyneuralogic_does():
    # recorded from PyNeuraLogic 0.9.2 for this template: weights numbered in the order
    # written, a rule's head weight before its body's, the fixed <0.5> taking index 0 but not
    # listed, the named $w one index however often it appears
    model = numbered_template()
    p = model.parameters()
    assert {k: np.shape(v) for k, v in p["weights"].items()} == {1: (2, 3), 2: (3, 3), 3: (3, 3), 4: (), 5: (1, 3)}
    assert p["weight_names"] == {1: "w1", 2: "w2", 3: "w", 4: "w4", 5: "w5"}
    assert "weights" in p and p.get("weights") is p["weights"] and p.get("rule0.head") is p["rule0.head"]
    assert np.array_equal(p["weights"][1], p["rule0.head"]) and np.array_equal(p["weights"][2], p["rule0.body0"])
    assert np.array_equal(p["weights"][3], p["$w"]) and float(p["weights"][4]) == 2.0
    # lrnn's own form is unchanged: iterating sees the names only
    assert sorted(p) == ["$w", "fact0.k", "fact1.z", "rule0.body0", "rule0.head", "rule3.head"]
    assert all(isinstance(v, np.ndarray) for v in p.values())


def test_module_weights_number_as_pyneuralogic_does():
    from lrnn.nn.module import GCNConv, MultiheadAttention

    def numbering(module):
        model = lrnn.Model()
        model += module
        p = model.build(Settings()).parameters()
        return {k: (p["weight_names"][k], np.shape(v)) for k, v in p["weights"].items()}

    # recorded from PyNeuraLogic 0.9.2: GCN's fixed `<1.0> h__edge(I, I).` takes index 0
    assert numbering(GCNConv(3, 2, "h", "f", "e")) == {1: ("w1", (2, 3))}
    assert numbering(MultiheadAttention(4, 2, "out", "q", "k", "v")) == {
        1: ("out_qw", (4, 4)), 2: ("out_vw", (4, 4)), 3: ("out_kw", (4, 4)), 4: ("w4", (4, 4))}


def test_load_state_dict_takes_pyneuralogic_indices():
    model = numbered_template()
    p = model.parameters()
    p["weights"][1] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    p["weights"][4] = 7.5
    model.load_state_dict(p)
    after = model.parameters()
    assert np.array_equal(after["rule0.head"], [[1, 2, 3], [4, 5, 6]])
    assert float(after["fact1.z"]) == 7.5
    assert np.array_equal(after["$w"], p["$w"])  # untouched weights keep their values
    # a plain PyNeuraLogic state dict ({"weights": {index: value}}) too
    model.load_state_dict({"weights": {5: [[0.25, 0.5, 0.75]]}})
    assert np.array_equal(model.parameters()["rule3.head"], [[0.25, 0.5, 0.75]])
    with pytest.raises(KeyError, match="index 0"):  # 0 is the fixed <0.5>: not a parameter
        model.load_state_dict({"weights": {0: 1.0}})
    with pytest.raises(LrnnError, match="shape"):
        model.load_state_dict({"weights": {1: [1.0, 2.0]}})


def test_rnn_weights_set_by_index_give_torchs_rnn():
    torch = pytest.importorskip("torch", reason="torch is the reference for the RNN cell")
    from lrnn.nn.module import RNN

    torch.manual_seed(0)
    rnn = torch.nn.RNN(3, 2, 1, bias=False).double()
    steps = torch.randn(4, 3, dtype=torch.float64)
    h0 = torch.randn(1, 2, dtype=torch.float64)
    model = lrnn.Model()
    model += RNN(3, 2, "h", "f", "h0", arity=0)
    model.build(Settings())
    p = model.parameters()
    p["weights"][0] = rnn.weight_ih_l0.tolist()  # PyNeuraLogic's order: input weight, then hidden
    p["weights"][1] = rnn.weight_hh_l0.tolist()
    model.load_state_dict(p)
    facts = [R.h0[h0[0].tolist()]] + [R.f(i + 1)[steps[i].tolist()] for i in range(4)]
    out = np.asarray(model(Dataset([Sample(R.h(4), facts)]))).reshape(-1)
    expected, _ = rnn(steps, h0)
    assert np.allclose(out, expected[-1].detach().numpy(), atol=1e-12)


def test_train_runs_one_epoch_unless_told():
    # PyNeuraLogic's Model.train(dataset, epochs=1)
    assert len(linear_model(Settings(optimizer=SGD(lr=0.1))).train(linear_dataset(), progress=False).epochs) == 1
    assert len(linear_model(Settings(optimizer=SGD(lr=0.1), epochs=3)).train(linear_dataset(), progress=False).epochs) == 3
    history = linear_model(Settings(optimizer=SGD(lr=0.1))).train(linear_dataset(), 4, progress=False)
    assert len(history.epochs) == 4
    assert len(history) == len(SAMPLES)  # PyNeuraLogic's list: one (target, output, error) per output


def test_data_logic_form_prints_values_as_given():
    query, facts = Data(x=[[0, 1], [1, 0]], edge_index=[[0], [1]], y=1).to_logic_form()
    assert str(query) == "1.0 predict."  # a one-entry label is a float, as PyNeuraLogic's float(y)
    assert [str(f) for f in facts] == ["<1> edge(0, 1).", "<[0, 1]> node_feature(0).", "<[1, 0]> node_feature(1)."]
    query, facts = Data(x=np.array([[0.0, 1.5]]), edge_index=[[], []], y=[0, 1]).to_logic_form()
    assert str(query) == "[0, 1] predict." and [str(f) for f in facts] == ["<[0.0, 1.5]> node_feature(0)."]
    query, _ = Data(x=[[1]], edge_index=[[], []], y=2).to_logic_form(one_hot_encode_labels=True, max_classes=3)
    assert str(query) == "[0.0, 0.0, 1.0] predict."
    assert str(R.p[1.0]) == "1.0 p." and str(R.p[1]) == "1 p."


def test_state_dict_weights_take_indices_and_test_takes_one_built_sample():
    from lrnn.core.constructs.function.function import TransformationFunction

    assert isinstance(lrnn.Transformation.TANH, TransformationFunction)  # PyNeuraLogic's annotation type
    model = lrnn.Model()
    model += (R.h(lrnn.V.X)[2, 3] <= R.f(lrnn.V.X)) | [lrnn.Transformation.IDENTITY]
    model += R.h / 1 | [lrnn.Transformation.IDENTITY]
    model.build(Settings())
    state = model.state_dict()
    w = np.arange(6.0).reshape(2, 3)
    state["weights"][0] = w  # PyNeuraLogic's index of the one weight
    assert 0 in state["weights"] and 1 not in state["weights"] and list(state["weights"]) == ["rule0.head"]
    assert state["weight_names"] == {0: "w0"}
    model.load_state_dict(state)
    rows = [[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]]
    built = model.build_dataset(Dataset([Sample(R.h(i), [R.f(i)[row]]) for i, row in enumerate(rows)]))
    for i, row in enumerate(rows):
        assert np.allclose(model.test(built[i]), w @ np.array(row), atol=1e-12)
    with pytest.raises(KeyError, match="index 3"):
        state["weights"][3] = w


def test_a_builtin_in_a_sum_is_a_condition_and_weights_number_through_sums():
    from lrnn import V
    from lrnn.nn.module import RNN

    def built(dsl):
        model = lrnn.Model()
        if dsl:  # PyNeuraLogic's recurrent rules written with `+`, the builtin inside the sum
            model += R.h(0) <= R.h0
            model += (R.h(V.T) <= R.f(V.T)[2, 3] + R.h(V.Z)[2, 2] + R.special.next(V.Z, V.T)) | [lrnn.Transformation.TANH]
        else:
            model += RNN(3, 2, "h", "f", "h0", arity=0)
        return model.build(Settings())

    dsl, module = built(True), built(False)
    p = dsl.parameters()
    assert {k: np.shape(v) for k, v in p["weights"].items()} == {0: (2, 3), 1: (2, 2)}
    w_in, w_h = np.arange(6.0).reshape(2, 3) / 10, np.array([[0.5, -0.25], [0.1, 0.3]])
    for model in (dsl, module):
        model.load_state_dict({"weights": {0: w_in, 1: w_h}})
    facts = [R.h0[[0.2, -0.1]], R.f(1)[[1.0, 0.0, 2.0]], R.f(2)[[0.5, 0.5, -1.0]]]
    data = Dataset([Sample(R.h(2), facts)])
    h = np.array([0.2, -0.1])
    for x in ([1.0, 0.0, 2.0], [0.5, 0.5, -1.0]):
        h = np.tanh(w_in @ np.array(x) + w_h @ h)
    assert np.allclose(np.asarray(dsl(data)).reshape(-1), h, atol=1e-12)
    assert np.allclose(np.asarray(module(data)).reshape(-1), h, atol=1e-12)
    with pytest.raises(ValueError, match="besides builtins"):
        R.special.next(V.Z, V.T) + R.special.next(V.T, V.Z)
    with pytest.raises(ValueError, match="needs literals with a value"):
        R.a(V.X) * R.special.next(V.X, V.Y)  # only a sum takes a builtin as its condition


def test_an_offset_is_numbered_after_its_rules_body():
    # PyNeuraLogic has no offsets; lrnn's is numbered where it is printed, after the body
    from lrnn import V, W

    model = lrnn.Model()
    model += R.h(V.X)[1, 2] <= (R.a(V.X)[2, 2], W[[0.5, 0.25]])
    p = model.build(Settings()).parameters()
    assert dict(p.numbering) == {0: "rule0.head", 1: "rule0.body0", 2: "rule0.offset"}
    assert np.array_equal(p["weights"][2], [0.5, 0.25])


def test_declared_offsets_are_numbered_after_every_rule():
    """Recorded from PyNeuraLogic 0.9.2 (Model(model_file=) of this text): the rules' weights
    0-3 in the order written, then the predicates' declared offsets in the order declared
    (4: a's, 5: b's), though `a / 0 {1}` is the first line."""
    text = "a / 0 {1}\n{1} h :- x.\nb / 0 {2,1}\n{3} out :- h.\n{1} a :- x.\n{2,1} b :- x.\n"
    model = lrnn.Model()
    model += lrnn.Template.from_string(text)
    p = model.build(Settings()).parameters()
    assert {k: np.shape(np.squeeze(v)) for k, v in p["weights"].items()} == {0: (), 1: (3,), 2: (), 3: (2,), 4: (), 5: (2,)}
    assert dict(p.numbering)[4] == "a/0.offset" and dict(p.numbering)[5] == "b/0.offset"
    # a DSL declaration's offset, and a declaration's metadata is not an offset
    dsl = lrnn.Model()
    dsl += R.q / 0 | [lrnn.Transformation.TANH]
    dsl += (R.p / 0)[[1.0, 2.0]]
    dsl += R.p[2, 1] <= R.x
    dsl += R.q[1, 2] <= R.p
    numbering = dict(dsl.build(Settings()).parameters().numbering)
    assert numbering == {0: "rule0.head", 1: "rule1.head", 2: "p/0.offset"}


@needs_shared
def test_mutagenesis_numbers_its_offsets_last(monkeypatch):
    """PyNeuraLogic's mutagenesis template: 21 rule weights, then the offsets of atom_embed (21)
    and bond_embed (22), as its state_dict numbers them."""
    from lrnn.utils.data import Mutagenesis

    monkeypatch.setenv("LRNN_DATASETS", str(SHARED.parent))
    model, _ = Mutagenesis()
    numbering = dict(model.build(Settings()).parameters().numbering)
    assert sorted(numbering) == list(range(23))
    assert (numbering[21], numbering[22]) == ("atom_embed/1.offset", "bond_embed/1.offset")


def test_default_training_is_pyneuralogics_online_steps_in_order():
    # No batch size anywhere (build_dataset, train, Settings): PyNeuraLogic's default, one
    # sample per step in the dataset's order, so the recorded PyNeuraLogic run of batch 1
    # is reproduced by a plain model.train(dataset) ...
    import json

    recorded = json.loads((Path(__file__).parent / "data" / "pyneuralogic_linear_training.json").read_text())
    run = recorded["runs"]["mean_batch1_clipnone"]
    model = linear_model(Settings(optimizer=SGD(lr=0.1), error_function=MSE(reduction="mean")))
    results = model.train(linear_dataset(), epochs=2, progress=False)
    assert np.allclose([list(r) for r in results], run["results"], atol=1e-12, rtol=0)
    assert np.allclose(weight(model), np.ravel(run["weights"]["w"]), atol=1e-12, rtol=0)
    # ... and Settings(batch_size=0) asks for one step over the whole set instead.
    whole = linear_model(Settings(batch_size=0, optimizer=SGD(lr=0.1), error_function=MSE(reduction="mean")))
    whole.train(linear_dataset(), epochs=2, progress=False)
    assert not np.allclose(weight(whole), weight(model), atol=1e-6)
