"""No silent wrong answers at the Python entry points (issues 11 and 14): unknown settings,
invalid learning rates, mis-shaped weights are errors naming the culprit; clone() is a model."""
import math

import numpy as np
import pytest

from lrnn import SGD, Adam, AdamW, R, Settings, Template, V
from lrnn.errors import LrnnError
from lrnn.model import Model


@pytest.mark.parametrize("key, suggestion", [
    ("epoch", "epochs"), ("optimiser", "optimizer"), ("seeds", "seed"), ("batchsize", "batch_size"),
])
def test_a_misspelled_setting_is_a_type_error_naming_the_closest_keyword(key, suggestion):
    with pytest.raises(TypeError) as err:
        Settings(**{key: 1})
    assert repr(key) in str(err.value) and repr(suggestion) in str(err.value)


def test_an_unknown_setting_lists_the_valid_ones():
    with pytest.raises(TypeError, match="'learning_rate'.*valid: optimizer, epochs"):
        Settings(learning_rate=0.5)
    settings = Settings()
    with pytest.raises(TypeError, match="'colour'"):
        settings["colour"] = "blue"


def test_gradient_clipping_takes_positive_numbers():
    # Honoured by the engine (tests/python/test_pnl_model.py checks the steps against torch).
    assert Settings(clip_grad_value=1.0).clip_grad_value == 1.0
    assert Settings(clip_grad_norm=2.5)["clip_grad_norm"] == 2.5
    for bad in (0, -1.0, float("inf"), "1"):
        with pytest.raises(ValueError, match="clip_grad_value"):
            Settings(clip_grad_value=bad)
    Settings(clip_grad_norm=None)  # PyNeuraLogic's default: no clipping


def test_pyneuralogic_build_options_are_accepted():
    s = Settings(iso_value_compression=False, chain_pruning=True)
    assert s["iso_value_compression"] is False


@pytest.mark.parametrize("optimizer", [SGD, Adam, AdamW])
def test_learning_rate_zero_is_allowed_and_negative_nan_inf_are_not(optimizer):
    assert optimizer(lr=0).lr == 0.0
    for bad in (-0.1, math.nan, math.inf, "0.1"):
        with pytest.raises(ValueError, match="learning rate"):
            optimizer(lr=bad)


def test_sgd_with_rate_zero_trains_without_moving_the_weights():
    template = Template()
    template += R.q[1, 2] <= R.x
    model = template.build(Settings(optimizer=SGD(lr=0), epochs=3, seed=1))
    from lrnn import Dataset
    data = Dataset()
    data.add([R.q[1.0]], [R.x[[1.0, 2.0]]])
    before = model.parameters()
    model.train(data, progress=False)
    after = model.parameters()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def built_model():
    template = Template()
    template += R.q[1, 2] <= R.h
    template += R.h[2, 3] <= R.x
    return template.build(Settings(seed=3))


def test_load_state_dict_refuses_a_transposed_weight():
    model = built_model()
    weights = model.state_dict()["weights"]
    name = next(k for k, v in weights.items() if np.shape(v) == (2, 3))
    with pytest.raises(LrnnError, match=r"\(2, 3\).*\(3, 2\)"):
        model.load_state_dict({name: np.zeros((3, 2))})
    model.load_state_dict({name: np.ones((2, 3))})
    assert np.array_equal(model.parameters()[name], np.ones((2, 3)))


def test_clone_of_a_built_model_is_a_built_model_with_the_same_weights():
    model = built_model()
    copy = model.clone()
    assert isinstance(copy, Model) and copy.built
    for name, value in model.parameters().items():
        assert np.array_equal(copy.parameters()[name], value)
    copy.load_state_dict({name: np.zeros_like(value) for name, value in copy.parameters().items()})
    assert any(np.any(v != 0) for v in model.parameters().values())  # the original is untouched
    assert str(copy) == str(model)


def test_max_ground_rules_setting_limits_grounding_when_a_dataset_is_built():
    from lrnn import Dataset

    template = Template()
    template += R.q[1, 1] <= (R.e(V.X, V.Y), R.e(V.Y, V.Z))
    data = Dataset()
    data.add([R.q[1.0]], [R.e(i, j)[1.0] for i in range(4) for j in range(4)])
    limited = template.build(Settings(max_ground_rules=10, seed=1))
    with pytest.raises(LrnnError, match="grounding exceeded 10 ground rules") as info:
        limited.build_dataset(data)
    assert info.value.kind == "limit"
    # Under the default limit the same data builds: 4^3 = 64 ground rules.
    assert len(template.build(Settings(seed=1)).build_dataset(data)) == 1


def test_an_out_of_range_setting_is_refused_by_the_engine_naming_it():
    template = Template()
    template += R.q[1, 1] <= R.x
    from lrnn import Dataset

    data = Dataset()
    data.add([R.q[1.0]], [R.x[1.0]])
    model = template.build(Settings(seed=1, gamma=2.0))
    with pytest.raises(LrnnError, match="setting 'gamma' must be in \\(0, 1\\]"):
        model.train(data, progress=False)
