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


def test_diverged_training_raises_as_the_cli_refuses_it():
    # Issue 32: SGD(lr=1e6) returned a history ending in nan with NaN weights, no exception.
    template = Template()
    template += R.q[1, 2] <= R.x
    model = template.build(Settings(optimizer=SGD(lr=1e6), epochs=30, seed=1))
    from lrnn import Dataset
    data = Dataset()
    data.add([R.q[1.0]], [R.x[[1.0, 2.0]]])
    with pytest.raises(LrnnError, match="training diverged: after 30 epochs the training loss is .*smaller learning rate"):
        model.train(data, progress=False)
    ok = template.build(Settings(optimizer=SGD(lr=0.01), epochs=30, seed=1))
    assert math.isfinite(ok.train(data, progress=False).train_losses[-1])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_load_state_dict_refuses_values_that_are_not_finite(bad):
    # Issue 32: NaN arrays loaded (save refuses them), so the model computed NaN silently.
    model = built_model()
    name = next(iter(model.state_dict()["weights"]))
    value = np.ones(np.shape(model.parameters()[name]))
    value.flat[1] = bad
    with pytest.raises(LrnnError, match=f"parameter '.*' value 1 is .*: weights must be finite"):
        model.load_state_dict({name: value})


@pytest.mark.parametrize("key, bad", [
    ("seed", -1), ("seed", 2**64), ("seed", 1.5), ("seed", "1"), ("epochs", math.inf), ("epochs", math.nan),
    ("epochs", -1), ("epochs", 2**31), ("batch_size", -1), ("batch_size", True),
])
def test_integer_settings_out_of_range_are_value_errors_naming_the_setting(key, bad):
    # Issue 32: seed=-1 was nanobind's `incompatible function arguments` naming no setting,
    # epochs=inf an OverflowError.
    with pytest.raises(ValueError, match=f"{key} must be an integer in \\[0, "):
        Settings(**{key: bad})
    settings = Settings()
    with pytest.raises(ValueError, match=f"{key} must be an integer"):
        setattr(settings, key, bad)


def test_integer_settings_take_their_whole_range():
    s = Settings(seed=2**64 - 1, epochs=np.int64(3), batch_size=4.0)
    assert (s.seed, s.epochs, s.batch_size) == (2**64 - 1, 3, 4)
    template = Template()
    template += R.q[1, 2] <= R.x
    template.build(Settings(seed=2**64 - 1))


@pytest.mark.parametrize("betas", ["", (0.9,), (0.9, 1.0), (0.9, "x"), None])
def test_adam_betas_must_be_a_pair_in_the_unit_interval(betas):
    # Issue 32: Adam(betas='') raised IndexError.
    with pytest.raises(ValueError, match="betas"):
        Adam(betas=betas)
    assert Adam(betas=[0.5, 0.6]).betas == (0.5, 0.6)
