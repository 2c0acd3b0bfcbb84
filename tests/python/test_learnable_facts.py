"""Learnable example facts (issue 11): `build_dataset(ds, learnable_facts=True)` makes the
values written on example facts parameters of the data, trained with the model and saved
with `BuiltDataset.state_dict()` keyed by ground literal. Trained values are checked against
the same embedding model in PyTorch (float64)."""

import numpy as np
import pytest

from lrnn.core import Combination, Model, R, Settings, Transformation, V
from lrnn.dataset import Dataset, Sample
from lrnn.errors import LrnnError
from lrnn.nn.loss import MSE
from lrnn.nn.optim import SGD, Adam

W = [[0.5, -0.5]]
FACTS = {"a": [0.3, 0.7], "b": [0.1, 0.9]}
TARGETS = {"a": 1.0, "b": 0.4}


def _model(optimizer, reduction="sum", batch_size=0):
    # batch_size=0: one step over the whole set (None: PyNeuraLogic's online default)
    model = Model()
    model += (R.out(V.X)["w":W] <= R.emb(V.X)) | [Combination.SUM, Transformation.IDENTITY]
    model += R.out / 1 | [Transformation.IDENTITY]
    return model.build(Settings(batch_size=batch_size, optimizer=optimizer, error_function=MSE(reduction=reduction)))


def _data(built, **kwargs):
    samples = [Sample(R.out(k)[TARGETS[k]], [R.emb(k)[FACTS[k]]]) for k in FACTS]
    return built.build_dataset(Dataset(samples), learnable_facts=True, **kwargs)


def test_one_sgd_step_moves_each_fact_by_its_gradient():
    built = _model(SGD(lr=0.5))
    data = _data(built)
    built.train(data, epochs=1)
    # full batch, summed MSE: d/d emb(k) = 2 (w . e_k - t_k) w, d/dw = sum_k 2 (w . e_k - t_k) e_k
    w = np.array(W[0])
    residual = {k: 2 * (w @ np.array(FACTS[k]) - TARGETS[k]) for k in FACTS}
    saved = data.state_dict()["weights"]
    for k in FACTS:
        np.testing.assert_allclose(saved[f"emb({k})"], np.array(FACTS[k]) - 0.5 * residual[k] * w, atol=1e-12)
    w_after = w - 0.5 * sum(residual[k] * np.array(FACTS[k]) for k in FACTS)
    np.testing.assert_allclose(np.ravel(built.state_dict()["weights"]["$w"]), w_after, atol=1e-12)


@pytest.mark.parametrize("batch_size", [None, 1])
def test_adam_training_matches_torch_embeddings(batch_size):
    torch = pytest.importorskip("torch", reason="torch is the reference for this test")
    # None: the whole set per step (Settings(batch_size=0)); 1: build_dataset's online steps
    built = _model(Adam(lr=0.1), reduction="mean", batch_size=0 if batch_size is None else None)
    data = _data(built, batch_size=batch_size) if batch_size else _data(built)
    built.train(data, epochs=6)

    emb = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in FACTS.items()}
    w = torch.tensor(W[0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w, *emb.values()], lr=0.1)
    for p in [w, *emb.values()]:
        p.grad = torch.zeros_like(p)
    batches = [list(FACTS)] if batch_size is None else [[k] for k in FACTS]
    for _ in range(6):
        for batch in batches:
            # zero, not None (and zero from the start): every parameter steps every batch (Adam's
            # moments move a fact the batch does not hold), as lrnn steps the model's weights and the data's
            opt.zero_grad(set_to_none=False)
            loss = torch.stack([(w @ emb[k] - TARGETS[k]) ** 2 for k in batch]).mean()
            loss.backward()
            opt.step()
    saved = data.state_dict()["weights"]
    for k in FACTS:
        np.testing.assert_allclose(saved[f"emb({k})"], emb[k].detach().numpy(), atol=1e-9)
    np.testing.assert_allclose(np.ravel(built.state_dict()["weights"]["$w"]), w.detach().numpy(), atol=1e-9)
    outputs = [float(o) for o in built(data)]
    np.testing.assert_allclose(outputs, [float((w @ emb[k]).detach()) for k in FACTS], atol=1e-9)


def test_state_dict_restores_a_trained_dataset_into_a_fresh_model():
    built = _model(SGD(lr=0.2))
    data = _data(built)
    built.train(data, epochs=10)
    trained = [float(o) for o in built(data)]
    model_state, data_state = built.state_dict(), data.state_dict()

    fresh = _model(SGD(lr=0.2))
    fresh.load_state_dict(model_state)
    fresh_data = _data(fresh)
    before = [float(o) for o in fresh(fresh_data)]
    assert max(abs(x - y) for x, y in zip(before, trained)) > 1e-3, "the model alone does not restore the data"
    report = fresh_data.load_state_dict(data_state)
    assert report.missing_keys == [] and report.unexpected_keys == []
    assert [float(o) for o in fresh(fresh_data)] == pytest.approx(trained, abs=1e-12)


def test_mismatched_keys_and_shapes_are_refused_or_reported():
    built = _model(SGD(lr=0.2))
    data = _data(built)
    with pytest.raises(ValueError, match="do not match this dataset"):
        data.load_state_dict({"weights": {"emb(a)": [1.0, 2.0]}})
    report = data.load_state_dict({"weights": {"emb(a)": [1.0, 2.0], "emb(z)": [0.0, 0.0]}}, strict=False)
    assert report.missing_keys == ["emb(b)"] and report.unexpected_keys == ["emb(z)"]
    assert data.state_dict()["weights"] == {"emb(a)": [1.0, 2.0], "emb(b)": FACTS["b"]}
    with pytest.raises(ValueError, match="shape"):
        data.load_state_dict({"weights": {"emb(a)": [1.0, 2.0, 3.0], "emb(b)": [0.0, 0.0]}})


def test_a_named_weight_is_one_parameter_and_refuses_two_values():
    built = _model(SGD(lr=0.1))
    data = built.build_dataset(
        Dataset([Sample(R.out(k)[TARGETS[k]], [R.emb(k)["shared":[0.2, 0.4]]]) for k in FACTS]),
        learnable_facts=True,
    )
    parameters = data._example_parameters()
    assert parameters["emb(a)"].index == parameters["emb(b)"].index
    built.train(data, epochs=1)
    # y = 0.5 * 0.2 - 0.5 * 0.4 = -0.1 for both: the summed gradient 2 (-1.1) w + 2 (-0.5) w = -3.2 w
    expected = [0.2 + 0.1 * 3.2 * 0.5, 0.4 - 0.1 * 3.2 * 0.5]
    assert data.state_dict()["weights"]["emb(a)"] == pytest.approx(expected, abs=1e-12)
    assert data.state_dict()["weights"]["emb(b)"] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="share one weight"):
        data.load_state_dict({"weights": {"emb(a)": [1.0, 2.0], "emb(b)": [3.0, 4.0]}})


def test_one_literal_learnable_in_two_samples_is_refused():
    built = _model(SGD(lr=0.1))
    dataset = Dataset([Sample(R.out("a")[1.0], [R.emb("a")[FACTS["a"]]]),
                       Sample(R.out("a")[0.0], [R.emb("a")[FACTS["b"]]])])
    with pytest.raises(LrnnError, match=r"emb\(a\).*sample 0"):
        built.build_dataset(dataset, learnable_facts=True)
    assert built.build_dataset(dataset).state_dict()["weights"] == {}  # constants: fine without the flag


def test_dimension_only_example_values_need_learnable_facts():
    built = _model(SGD(lr=0.1))
    dataset = Dataset([Sample(R.out("a")[1.0], [R.emb("a")[2, ]])])
    with pytest.raises(LrnnError, match="must be a number, vector or matrix"):
        built.build_dataset(dataset)
    drawn = built.build_dataset(dataset, learnable_facts=True).state_dict()["weights"]["emb(a)"]
    assert len(drawn) == 2 and any(v != 0.0 for v in drawn)


def test_ground_network_of_a_learnable_dataset_is_refused():
    built = _model(SGD(lr=0.1))
    data = _data(built)
    with pytest.raises(LrnnError, match="learnable facts"):
        built.ground_network(data)


def test_fact_gradients_agree_with_finite_differences_through_a_graph_layer():
    """A neighbour sum under a matrix weight, over hidden edges, then tanh (facts reach the
    queries through several groundings each):
    one SGD step at lr 1 moves each fact by minus its gradient, which central differences
    of the summed loss must match."""

    def build():
        model = Model()
        model += (R.agg(V.X)["W":[[0.4, -0.3], [0.2, 0.5]]] <= (R.emb(V.Y), R._edge(V.X, V.Y))) | [
            Combination.SUM, Transformation.IDENTITY]
        model += (R.out(V.X)["v":[[0.7, -0.6]]] <= R.agg(V.X)) | [Transformation.TANH]
        model += R.out / 1 | [Transformation.IDENTITY]
        model += R.agg / 1 | [Transformation.IDENTITY]
        return model.build(Settings(batch_size=0, optimizer=SGD(lr=1.0), error_function=MSE(reduction="sum")))

    facts = {"a": [0.3, -0.8], "b": [0.5, 0.1], "c": [-0.4, 0.9]}
    edges = [("a", "b"), ("b", "a"), ("b", "c"), ("a", "c")]
    sample = Sample([R.out("a")[0.3], R.out("b")[-0.2]],
                    [R.edge(x, y) for x, y in edges] + [R.emb(k)[v] for k, v in facts.items()])

    def loss_at(values):
        built = build()
        data = built.build_dataset(Dataset([sample]), learnable_facts=True)
        data.load_state_dict({"weights": values})
        return built.loss(data)

    built = build()
    data = built.build_dataset(Dataset([sample]), learnable_facts=True)
    start = data.state_dict()["weights"]
    assert set(start) == {"emb(a)", "emb(b)", "emb(c)"}
    built.train(data, epochs=1)
    stepped = data.state_dict()["weights"]
    h = 1e-6
    for literal, value in start.items():
        for i in range(len(value)):
            up = {k: list(v) for k, v in start.items()}
            down = {k: list(v) for k, v in start.items()}
            up[literal][i] += h
            down[literal][i] -= h
            numeric = (loss_at(up) - loss_at(down)) / (2 * h)
            analytic = start[literal][i] - stepped[literal][i]
            assert analytic == pytest.approx(numeric, abs=1e-7), (literal, i)
            assert abs(analytic) > 1e-4, "every fact reaches a query here"
