"""Optimizers, as in `neuralogic.optim` (also importable from `lrnn.nn.optim`)."""

from __future__ import annotations

import math
from typing import Optional, Tuple


class Optimizer:
    kind = ""

    def __init__(self, lr: float, weight_decay: float = 0.0, lr_decay: Optional["LRDecay"] = None):
        # 0 is a valid rate (a frozen run, as in PyNeuraLogic and torch); negative, NaN and
        # infinite rates would train to nonsense, so they are refused here.
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr < 0:
            raise ValueError(f"the learning rate must be a finite number >= 0, got {lr!r}")
        if not isinstance(weight_decay, (int, float)) or not math.isfinite(weight_decay) or weight_decay < 0:
            raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
        self.lr = float(lr)
        self.initial_lr = self.lr
        self.weight_decay = float(weight_decay)
        if lr_decay is not None and not isinstance(lr_decay, LRDecay):
            raise TypeError(f"lr_decay= takes ArithmeticLR(...) or GeometricLR(...), got {lr_decay!r}")
        self._lr_decay = lr_decay
        if lr_decay is not None:
            lr_decay._attach(self)

    def initialize(self) -> "Optimizer":
        """PyNeuraLogic's hook before use: the rate starts again from the initial one."""
        self.lr = self.initial_lr
        if self._lr_decay is not None:
            self._lr_decay.restart()
        return self

    def get_lr_decay(self) -> Optional["LRDecay"]:
        return self._lr_decay

    def schedule_options(self) -> dict:
        """The engine's schedule settings for this optimizer's decay (constant without one)."""
        return {"schedule": "constant"} if self._lr_decay is None else self._lr_decay.schedule_options()

    def __repr__(self) -> str:
        decay = "" if self._lr_decay is None else f", lr_decay={self._lr_decay}"
        return f"{type(self).__name__}(lr={self.initial_lr}{decay})"


def _finite_number(name: str, value: object, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False,
                   hi_open: bool = False) -> float:
    """A hyper-parameter that must be a real number in its range: a ValueError naming it
    (rather than an IndexError or a TypeError from float(), or a nonsense run)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
    if not ok:
        bounds = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ValueError(f"{name} must be a finite number in {bounds}, got {value!r}")
    return float(value)


def _betas(betas: object) -> Tuple[float, float]:
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"betas must be a pair of numbers in [0, 1), e.g. (0.9, 0.999), got {betas!r}")
    return (_finite_number("betas[0]", betas[0], hi=1.0, hi_open=True),
            _finite_number("betas[1]", betas[1], hi=1.0, hi_open=True))


class SGD(Optimizer):
    kind = "sgd"

    def __init__(self, lr: float = 0.1, momentum: float = 0.0, weight_decay: float = 0.0,
                 lr_decay: Optional["LRDecay"] = None):
        super().__init__(lr, weight_decay, lr_decay)
        self.momentum = _finite_number("momentum", momentum, hi=1.0, hi_open=True)


class Adam(Optimizer):
    kind = "adam"

    def __init__(
        self,
        lr: float = 0.001,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        lr_decay: Optional["LRDecay"] = None,
    ):
        super().__init__(lr, weight_decay, lr_decay)
        self.betas = _betas(betas)
        self.eps = _finite_number("eps", eps, lo_open=True)


class AdamW(Adam):
    """Adam with decoupled weight decay."""

    kind = "adamw"

    def __init__(
        self,
        lr: float = 0.001,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        lr_decay: Optional["LRDecay"] = None,
    ):
        super().__init__(lr, betas, eps, weight_decay, lr_decay)


class LRDecay:
    """A learning-rate decay attached to an optimizer (PyNeuraLogic's lr_scheduler).
    Training applies it per epoch in the engine (its `schedule_options`); `decay(epoch)`
    applies one step by hand to `optimizer.lr`, as PyNeuraLogic's does."""

    def __init__(self) -> None:
        self._optimizer: Optional[Optimizer] = None

    def _attach(self, optimizer: Optimizer) -> None:
        if self._optimizer is not None and self._optimizer is not optimizer:
            raise ValueError(f"{self} is already attached to another optimizer; make one per optimizer")
        self._optimizer = optimizer

    def _require_optimizer(self) -> Optimizer:
        if self._optimizer is None:
            raise ValueError(f"{self} is not attached to an optimizer: pass it as lr_decay= of one")
        return self._optimizer

    def restart(self) -> None:
        """The optimizer's rate back to its initial one."""
        optimizer = self._require_optimizer()
        optimizer.lr = optimizer.initial_lr

    def decay(self, epoch: int) -> None:
        raise NotImplementedError

    def schedule_options(self) -> dict:
        raise NotImplementedError


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return value


class ArithmeticLR(LRDecay):
    """lr_i = lr_{i-1} - lr_0 / max_steps after every epoch, down to 0."""

    def __init__(self, max_steps: int):
        super().__init__()
        self.max_steps = _positive_int(max_steps, "ArithmeticLR's max_steps")

    def decay(self, epoch: int) -> None:
        optimizer = self._require_optimizer()
        optimizer.lr = max(0.0, optimizer.lr - optimizer.initial_lr / self.max_steps)

    def schedule_options(self) -> dict:
        return {"schedule": "linear", "step_size": self.max_steps}

    def __str__(self) -> str:
        return f"ArithmeticLR(max_steps={self.max_steps})"

    __repr__ = __str__


class GeometricLR(LRDecay):
    """lr_i = lr_{i-1} * decay_rate after every `steps`-th epoch."""

    def __init__(self, decay_rate: float, steps: int):
        super().__init__()
        if isinstance(decay_rate, bool) or not isinstance(decay_rate, (int, float)) or not 0 < decay_rate <= 1:
            raise ValueError(f"GeometricLR's decay_rate must be in (0, 1], got {decay_rate!r}")
        self.decay_rate = float(decay_rate)
        self.steps = _positive_int(steps, "GeometricLR's steps")

    def decay(self, epoch: int) -> None:
        optimizer = self._require_optimizer()
        if epoch % self.steps == 0:
            optimizer.lr = optimizer.lr * self.decay_rate

    def schedule_options(self) -> dict:
        return {"schedule": "step", "step_size": self.steps, "gamma": self.decay_rate}

    def __str__(self) -> str:
        return f"GeometricLR(decay_rate={self.decay_rate}, steps={self.steps})"

    __repr__ = __str__


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "LRDecay", "ArithmeticLR", "GeometricLR"]
