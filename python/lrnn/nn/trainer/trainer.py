"""PyNeuraLogic's `Trainer`: epochs of `model.train(built, epochs=1)` (each query's output
and error from that epoch's forward pass), validation by `model.validate` (no training, so
the optimizer's state is untouched), and the callbacks."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from lrnn.nn.trainer.callbacks import CheckpointCallback, EarlyStoppingCallback, ProgressCallback, TrainerCallback
from lrnn.nn.trainer.metrics import Metric, check_metrics, compute_metrics


@dataclasses.dataclass
class TrainerHistory:
    """Per epoch: the mean error over the training queries (and validation queries), the
    learning rate the epoch trained with, and the metrics by name; the best validation
    epoch (0-based) and whether early stopping ended the run."""

    train_losses: List[float] = dataclasses.field(default_factory=list)
    val_losses: List[float] = dataclasses.field(default_factory=list)
    train_metrics: Dict[str, List[float]] = dataclasses.field(default_factory=dict)
    val_metrics: Dict[str, List[float]] = dataclasses.field(default_factory=dict)
    learning_rates: List[float] = dataclasses.field(default_factory=list)
    best_epoch: int = 0
    best_val_loss: float = math.inf
    stopped_early: bool = False


def _mean_error(results: Sequence[Tuple[Any, Any, float]]) -> float:
    errors = [r[2] for r in results]
    return float(np.mean(errors)) if errors else math.nan


def _targeted(results: Sequence[Tuple[Any, Any, float]]) -> Tuple[List[Any], List[Any]]:
    kept = [r for r in results if r[0] is not None]
    return [r[0] for r in kept], [r[1] for r in kept]


class Trainer:
    """`Trainer(model).fit(train, val=None, epochs=1, ...)` and `test(dataset)` over a built
    lrnn Model."""

    def __init__(self, module: Any) -> None:
        if not getattr(module, "built", False):
            raise ValueError("The model must be built before creating a Trainer. Call model.build(settings) first.")
        self.model = module
        self.stop_training = False

    def _built(self, dataset: Any, batch_size: int) -> Any:
        from lrnn.core.builder.static_graph import StaticGraphDataset
        from lrnn.engine.built import BuiltDataset

        if dataset is None or isinstance(dataset, (BuiltDataset, StaticGraphDataset)):
            return dataset
        return self.model.build_dataset(dataset, batch_size=batch_size)

    def _callbacks(self, epochs: int, patience: Optional[int], min_delta: float, checkpoint_dir: Any,
                   silent: bool, extra: Optional[Sequence[TrainerCallback]]) -> List[TrainerCallback]:
        out: List[TrainerCallback] = []
        if patience is not None:
            out.append(EarlyStoppingCallback(patience, min_delta))
        if checkpoint_dir is not None:
            out.append(CheckpointCallback(checkpoint_dir))
        if not silent:
            out.append(ProgressCallback(epochs))
        return out + list(extra or [])

    def fit(self, train_dataset: Any, val_dataset: Any = None, *, epochs: int = 1, batch_size: int = 1,
            early_stopping_patience: Optional[int] = None, min_delta: float = 0.0,
            checkpoint_dir: Optional[Union[str, Path]] = None, metrics: Optional[Sequence[Union[str, Metric]]] = None,
            silent: bool = False, callbacks: Optional[Sequence[TrainerCallback]] = None) -> TrainerHistory:
        """Trains `epochs` epochs (online, `batch_size` samples a step, in the dataset's order
        when the dataset is built here) and returns the TrainerHistory. Early stopping and
        checkpoints follow the validation loss. The optimizer's rate decay is the engine's
        schedule: it advances once per epoch, as PyNeuraLogic's `decay(epoch)` does."""
        names = check_metrics(metrics or [])
        train, val = self._built(train_dataset, batch_size), self._built(val_dataset, batch_size)
        hooks = self._callbacks(epochs, early_stopping_patience, min_delta, checkpoint_dir, silent, callbacks)
        history = TrainerHistory()
        self.stop_training = False
        for hook in hooks:
            hook.on_train_begin(self)
        for epoch in range(epochs):
            if self.stop_training:
                history.stopped_early = True
                break
            logs = self._epoch(train, val, names, history, epoch)
            for hook in hooks:
                hook.on_epoch_end(self, epoch, logs)
        for hook in hooks:
            hook.on_train_end(self)
        return history

    def _epoch(self, train: Any, val: Any, names: List[str], history: TrainerHistory, epoch: int) -> Dict[str, Any]:
        trained = self.model.train(train, epochs=1, progress=False)
        results = list(trained)
        logs: Dict[str, Any] = {"train_loss": _mean_error(results)}
        history.train_losses.append(logs["train_loss"])
        sets = [("train", results)]
        if val is not None:
            checked = self.model.validate(val)
            logs["val_loss"] = _mean_error(checked)
            history.val_losses.append(logs["val_loss"])
            if logs["val_loss"] < history.best_val_loss:
                history.best_val_loss, history.best_epoch = logs["val_loss"], epoch
            sets.append(("val", checked))
        logs["lr"] = float(trained.learning_rates[-1]) if trained.learning_rates else math.nan
        history.learning_rates.append(logs["lr"])
        for prefix, rows in sets:
            targets, outputs = _targeted(rows)
            if not names or not outputs:
                continue
            store = history.train_metrics if prefix == "train" else history.val_metrics
            for name, value in compute_metrics(targets, outputs, names).items():
                store.setdefault(name, []).append(value)
                logs[f"{prefix}_{name}"] = value
        return logs

    def test(self, dataset: Any, *, batch_size: int = 1) -> List[Any]:
        """The output of every query (no training)."""
        built = self._built(dataset, batch_size)
        return [output for _, output, _ in self.model.validate(built)]
