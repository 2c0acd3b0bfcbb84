"""PyNeuraLogic's static graph datasets (`model.build_static_dataset`, issue 11): samples of
one structure trained one at a time in order, train() returning every epoch's results."""

import pytest

from lrnn.core import Model, R, Settings, Transformation, V
from lrnn.core.builder.static_graph import StaticGraphDataset, build_static_graph_dataset
from lrnn.dataset import Dataset, Sample
from lrnn.nn.loss import MSE
from lrnn.nn.optim import SGD

FEATURES = [(1.0, -1.0), (-1.0, 1.0), (0.5, 2.0)]
TARGETS = [1.0, 0.0, 0.25]


def _dataset():
    shared = [R.edge(0, 1), R.edge(1, 0)]
    return Dataset([Sample(R.predict(0)[t], shared + [R.feat(0)[a], R.feat(1)[b]]) for (a, b), t in zip(FEATURES, TARGETS)])


def _model():
    model = Model()
    model += (R.predict(V.X)["w":0.7] <= (R.edge(V.X, V.Y), R.feat(V.Y))) | [Transformation.IDENTITY]
    model += R.predict / 1 | [Transformation.IDENTITY]
    return model.build(Settings(optimizer=SGD(lr=0.1), error_function=MSE(reduction="sum")))


def test_static_training_is_in_order_sample_by_sample_and_returns_every_epoch():
    static_model, plain_model = _model(), _model()
    static = static_model.build_static_dataset(_dataset())
    assert isinstance(static, StaticGraphDataset) and len(static) == 3
    history = static_model.train(static, epochs=2, progress=False)
    assert len(history) == 6 and [float(t) for t, _, _ in history] == TARGETS * 2

    # the same by hand: one SGD step per sample, in order; the rule weight scales the summed
    # body, predict(0) = w * (edge(0, 1) + feat(1)) = w * (1 + x)
    w, expected = 0.7, []
    for _ in range(2):
        for (_, x), t in zip(FEATURES, TARGETS):
            y = w * (1 + x)
            expected.append(y)
            w -= 0.1 * 2 * (y - t) * (1 + x)
    assert [float(o) for _, o, _ in history] == pytest.approx(expected, abs=1e-12)
    assert float(static_model.state_dict()["weights"]["$w"]) == pytest.approx(w, abs=1e-12)

    plain = plain_model.train(plain_model.build_dataset(_dataset(), batch_size=1), epochs=2, progress=False)
    assert [float(o) for _, o, _ in plain] == pytest.approx(expected[3:], abs=1e-12)
    assert len(static_model.test(static)) == 3


def test_fact_mappings_and_targets_are_as_written():
    static = build_static_graph_dataset(_model(), _dataset())
    assert static.targets == TARGETS
    assert [[value for _, value in mapping] for mapping in static.fact_mappings] == [
        [1.0, 1.0, a, b] for a, b in FEATURES
    ]
    assert static.static_sample.index == 0


def test_what_a_static_graph_cannot_hold_is_refused():
    model = _model()
    with pytest.raises(NotImplementedError, match="batch_size must be 1"):
        model.build_static_dataset(_dataset(), batch_size=2)
    two_queries = Dataset([Sample([R.predict(0)[1.0], R.predict(1)[0.0]], [R.edge(0, 1), R.feat(1)[1.0]])])
    with pytest.raises(NotImplementedError, match="several queries"):
        model.build_static_dataset(two_queries)
    with pytest.raises(ValueError, match="at least one sample"):
        model.build_static_dataset(Dataset())
