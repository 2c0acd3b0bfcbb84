"""Hooks a Trainer calls around its epochs (PyNeuraLogic's callbacks): `on_train_begin`,
`on_epoch_end(trainer, epoch, logs)` (epoch 0-based; logs hold train_loss, val_loss when
validating, lr and train_/val_ metrics), `on_train_end`. Setting `trainer.stop_training`
ends the run before the next epoch."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, Optional, Union


class TrainerCallback:
    def on_train_begin(self, trainer: Any) -> None:
        pass

    def on_epoch_end(self, trainer: Any, epoch: int, logs: Dict[str, Any]) -> None:
        pass

    def on_train_end(self, trainer: Any) -> None:
        pass


class EarlyStoppingCallback(TrainerCallback):
    """Stops when the validation loss has not dropped by more than `min_delta` below its
    best for `patience` epochs in a row (no validation loss: never stops)."""

    def __init__(self, patience: int, min_delta: float = 0.0) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"patience is a whole number of epochs >= 1, got {patience!r}")
        self.patience = patience
        self.min_delta = min_delta
        self._best = math.inf
        self._waited = 0

    def on_train_begin(self, trainer: Any) -> None:
        self._best, self._waited = math.inf, 0

    def on_epoch_end(self, trainer: Any, epoch: int, logs: Dict[str, Any]) -> None:
        loss = logs.get("val_loss")
        if loss is None:
            return
        if loss < self._best - self.min_delta:
            self._best, self._waited = loss, 0
            return
        self._waited += 1
        if self._waited >= self.patience:
            trainer.stop_training = True


class CheckpointCallback(TrainerCallback):
    """Saves the model (`model.save`) into `directory/filename` whenever the validation loss
    reaches a new best."""

    def __init__(self, directory: Union[str, Path], filename: str = "best.pkl") -> None:
        self.directory = Path(directory)
        self.filename = filename
        self._best = math.inf

    @property
    def path(self) -> Path:
        return self.directory / self.filename

    def on_train_begin(self, trainer: Any) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._best = math.inf

    def on_epoch_end(self, trainer: Any, epoch: int, logs: Dict[str, Any]) -> None:
        loss = logs.get("val_loss")
        if loss is not None and loss < self._best:
            self._best = loss
            trainer.model.save(str(self.path))


class ProgressCallback(TrainerCallback):
    """A tqdm bar of `epochs` steps showing the losses, the rate and validation metrics."""

    def __init__(self, epochs: int) -> None:
        self._epochs = epochs
        self._bar: Optional[Any] = None

    def on_train_begin(self, trainer: Any) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=self._epochs, desc="Training", unit="epoch")

    def on_epoch_end(self, trainer: Any, epoch: int, logs: Dict[str, Any]) -> None:
        if self._bar is None:
            return
        shown = {k: f"{v:.4f}" for k, v in logs.items() if k in ("train_loss", "val_loss", "lr") or k.startswith("val_")}
        self._bar.set_postfix(shown, refresh=False)
        self._bar.update(1)

    def on_train_end(self, trainer: Any) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
