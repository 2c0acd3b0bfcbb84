"""Optimizers, as in `neuralogic.optim` (also importable from `lrnn.nn.optim`)."""

from __future__ import annotations

import math
from typing import Tuple


class Optimizer:
    kind = ""

    def __init__(self, lr: float, weight_decay: float = 0.0):
        # 0 is a valid rate (a frozen run, as in PyNeuraLogic and torch); negative, NaN and
        # infinite rates would train to nonsense, so they are refused here.
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr < 0:
            raise ValueError(f"the learning rate must be a finite number >= 0, got {lr!r}")
        if not isinstance(weight_decay, (int, float)) or not math.isfinite(weight_decay) or weight_decay < 0:
            raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
        self.lr = float(lr)
        self.weight_decay = float(weight_decay)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lr={self.lr})"


class SGD(Optimizer):
    kind = "sgd"

    def __init__(self, lr: float = 0.1, momentum: float = 0.0, weight_decay: float = 0.0):
        super().__init__(lr, weight_decay)
        self.momentum = float(momentum)


class Adam(Optimizer):
    kind = "adam"

    def __init__(
        self,
        lr: float = 0.001,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        super().__init__(lr, weight_decay)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)


class AdamW(Adam):
    """Adam with decoupled weight decay."""

    kind = "adamw"

    def __init__(
        self,
        lr: float = 0.001,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ):
        super().__init__(lr, betas, eps, weight_decay)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
