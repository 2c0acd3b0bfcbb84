"""PyNeuraLogic's `neuralogic.nn.trainer`: an epoch loop over a built model
(`Trainer(model).fit(train, val, epochs=...)`) with early stopping, checkpoints, a progress
bar, extra metrics and callbacks, over lrnn's `Model.train` / `Model.validate`."""

from lrnn.nn.trainer.callbacks import CheckpointCallback, EarlyStoppingCallback, ProgressCallback, TrainerCallback
from lrnn.nn.trainer.metrics import Metric, compute_metrics
from lrnn.nn.trainer.trainer import Trainer, TrainerHistory

__all__ = [
    "Trainer", "TrainerHistory", "TrainerCallback", "EarlyStoppingCallback", "CheckpointCallback",
    "ProgressCallback", "Metric", "compute_metrics",
]
