"""PyNeuraLogic's `neuralogic.nn.trainer.Trainer` on lrnn (issue 11): the epoch loop over
Model.train / Model.validate, its history, early stopping, checkpoints, metrics, callbacks."""

import math

import numpy as np
import pytest

import lrnn
from lrnn import R, Settings
from lrnn.dataset import Dataset, Sample
from lrnn.nn.optim import SGD
from lrnn.nn.trainer import (
    EarlyStoppingCallback, Metric, Trainer, TrainerCallback, TrainerHistory, compute_metrics,
)

SAMPLES = [([1.0, 2.0], 1.0), ([0.5, -1.0], 0.0), ([2.0, 1.5], 0.0)]


def linear_model(lr=0.1):
    model = lrnn.Model()
    model += (R.out <= R.f["w":[[0.3, -0.2]]]) | [lrnn.Transformation.IDENTITY]
    model += R.out / 0 | [lrnn.Transformation.IDENTITY]
    return model.build(Settings(optimizer=SGD(lr=lr)))


def dataset(samples=SAMPLES):
    return Dataset([Sample(R.out[t], [R.f[x]]) for x, t in samples])


def online_sgd(epochs, lr=0.1):
    """The same model trained online in numpy: per epoch the mean of each sample's squared
    error before its own step, then the weights."""
    w = np.array([0.3, -0.2])
    losses = []
    for _ in range(epochs):
        errors = []
        for x, t in SAMPLES:
            x = np.array(x)
            y = w @ x
            errors.append((y - t) ** 2)
            w = w - lr * 2 * (y - t) * x
        losses.append(float(np.mean(errors)))
    return losses, w


def test_fit_trains_online_and_reports_the_mean_error_per_epoch():
    model = linear_model()
    history = Trainer(model).fit(dataset(), epochs=3, silent=True)
    losses, w = online_sgd(3)
    assert isinstance(history, TrainerHistory)
    np.testing.assert_allclose(history.train_losses, losses, rtol=1e-12)
    np.testing.assert_allclose(np.ravel(model.parameters()["$w"]), w, rtol=1e-12)
    assert history.learning_rates == [0.1, 0.1, 0.1]
    assert history.val_losses == [] and not history.stopped_early


def test_validation_does_not_train_and_tracks_the_best_epoch():
    model = linear_model()
    val = dataset([([1.0, 1.0], 0.5)])
    history = Trainer(model).fit(dataset(), val, epochs=4, silent=True)
    _, w = online_sgd(4)
    np.testing.assert_allclose(np.ravel(model.parameters()["$w"]), w, rtol=1e-12)  # validation left them
    assert len(history.val_losses) == 4
    assert history.best_val_loss == min(history.val_losses)
    assert history.best_epoch == int(np.argmin(history.val_losses))
    assert history.val_losses[-1] == pytest.approx((w.sum() - 0.5) ** 2, rel=1e-12)


def test_early_stopping_ends_the_run():
    model = linear_model(lr=0.0)  # nothing changes, so the validation loss never improves
    history = Trainer(model).fit(dataset(), dataset(), epochs=10, early_stopping_patience=2, silent=True)
    assert history.stopped_early
    assert len(history.train_losses) == 3  # the best, then two epochs without improvement


def test_checkpoint_saves_the_best_model(tmp_path):
    model = linear_model()
    Trainer(model).fit(dataset(), dataset(), epochs=2, checkpoint_dir=tmp_path, silent=True)
    assert (tmp_path / "best.pkl").is_file()
    loaded = lrnn.Model.load(tmp_path / "best.pkl")
    assert set(loaded.parameters()) == set(model.parameters())


def test_metrics_and_callbacks_see_every_epoch():
    seen = []

    class Record(TrainerCallback):
        def on_epoch_end(self, trainer, epoch, logs):
            seen.append((epoch, sorted(logs)))

    model = linear_model()
    history = Trainer(model).fit(dataset(), dataset(), epochs=2, metrics=[Metric.MAE, "accuracy"], silent=True,
                                 callbacks=[Record()])
    assert [e for e, _ in seen] == [0, 1]
    assert seen[0][1] == ["lr", "train_accuracy", "train_loss", "train_mae", "val_accuracy", "val_loss", "val_mae"]
    assert len(history.train_metrics["mae"]) == 2 and len(history.val_metrics["accuracy"]) == 2


def test_compute_metrics_per_sample_classes():
    targets, outputs = [1.0, 0.0, 1.0, 0.0], [0.9, 0.2, 0.4, 0.6]
    m = compute_metrics(targets, outputs, ["accuracy", "mae", "mse", "rmse", "r2", "f1_macro"])
    assert m["accuracy"] == 0.5
    assert m["mae"] == pytest.approx(np.mean([0.1, 0.2, 0.6, 0.6]))
    assert m["rmse"] == pytest.approx(math.sqrt(m["mse"]))
    assert m["r2"] == pytest.approx(1 - np.sum((np.array(targets) - outputs) ** 2) / 1.0)
    assert m["f1_macro"] == pytest.approx(0.5)
    vectors = compute_metrics([[0, 1, 0], [1, 0, 0]], [[0.1, 0.7, 0.2], [0.1, 0.2, 0.7]], [Metric.ACCURACY])
    assert vectors == {"accuracy": 0.5}


def test_unknown_metric_and_unbuilt_model_are_refused():
    with pytest.raises(ValueError, match="did you mean 'accuracy'"):
        Trainer(linear_model()).fit(dataset(), metrics=["acuracy"], silent=True)
    with pytest.raises(ValueError, match="must be built"):
        Trainer(lrnn.Model())
    with pytest.raises(ValueError, match="patience"):
        EarlyStoppingCallback(0)


def test_test_gives_every_output_without_training():
    model = linear_model()
    outputs = Trainer(model).test(dataset())
    np.testing.assert_allclose(outputs, [0.3 * x[0] - 0.2 * x[1] for x, _ in SAMPLES], rtol=1e-12)
