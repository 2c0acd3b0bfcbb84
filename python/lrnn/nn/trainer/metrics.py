"""Batch metrics a Trainer can log besides the loss (PyNeuraLogic's `Metric` names):
regression errors over every entry, and classification scores over per-sample classes (a
one-entry value is class 1 when >= 0.5, a vector is its argmax)."""

from __future__ import annotations

import difflib
import enum
from typing import Any, Callable, Dict, List, Sequence, Union

import numpy as np


class Metric(str, enum.Enum):
    MAE = "mae"
    MSE = "mse"
    RMSE = "rmse"
    R2 = "r2"
    ACCURACY = "accuracy"
    PRECISION_MACRO = "precision_macro"
    RECALL_MACRO = "recall_macro"
    F1_MACRO = "f1_macro"

    def __str__(self) -> str:
        return self.value


def _entries(values: Sequence[Any]) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in values]) if len(values) else np.zeros(0)


def _classes(values: Sequence[Any]) -> np.ndarray:
    """One class per sample: threshold 0.5 for a one-entry value, argmax for a vector."""
    out = []
    for v in values:
        flat = np.ravel(np.asarray(v, dtype=np.float64))
        out.append(int(flat[0] >= 0.5) if flat.size == 1 else int(np.argmax(flat)))
    return np.asarray(out)


def _squared(t: Sequence[Any], o: Sequence[Any]) -> float:
    return float(np.mean((_entries(t) - _entries(o)) ** 2))


def _r2(t: Sequence[Any], o: Sequence[Any]) -> float:
    target, output = _entries(t), _entries(o)
    residual = float(np.sum((target - output) ** 2))
    spread = float(np.sum((target - target.mean()) ** 2))
    if spread == 0:
        return 1.0 if residual == 0 else 0.0
    return 1.0 - residual / spread


def _macro(kind: str) -> Callable[[Sequence[Any], Sequence[Any]], float]:
    def score(t: Sequence[Any], o: Sequence[Any]) -> float:
        truth, guess = _classes(t), _classes(o)
        per_class: List[float] = []
        for c in np.unique(np.concatenate([truth, guess])):
            hit = int(np.sum((truth == c) & (guess == c)))
            predicted, actual = int(np.sum(guess == c)), int(np.sum(truth == c))
            precision = hit / predicted if predicted else 0.0
            recall = hit / actual if actual else 0.0
            if kind == "precision":
                per_class.append(precision)
            elif kind == "recall":
                per_class.append(recall)
            else:
                per_class.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
        return float(np.mean(per_class)) if per_class else 0.0

    return score


_METRICS: Dict[str, Callable[[Sequence[Any], Sequence[Any]], float]] = {
    "mae": lambda t, o: float(np.mean(np.abs(_entries(t) - _entries(o)))),
    "mse": _squared,
    "rmse": lambda t, o: float(np.sqrt(_squared(t, o))),
    "r2": _r2,
    "accuracy": lambda t, o: float(np.mean(_classes(t) == _classes(o))),
    "precision_macro": _macro("precision"),
    "recall_macro": _macro("recall"),
    "f1_macro": _macro("f1"),
}


def check_metrics(names: Sequence[Union[str, Metric]]) -> List[str]:
    """The names as strings; an unknown one is a ValueError naming the closest."""
    out = []
    for name in names:
        key = str(name)
        if key not in _METRICS:
            close = difflib.get_close_matches(key, list(_METRICS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown metric {key!r}{hint}; known: {sorted(_METRICS)}")
        out.append(key)
    return out


def compute_metrics(targets: Sequence[Any], outputs: Sequence[Any],
                    names: Sequence[Union[str, Metric]]) -> Dict[str, float]:
    """{name: value} of each metric over the whole batch of (target, output) pairs."""
    if len(targets) != len(outputs):
        raise ValueError(f"{len(targets)} targets but {len(outputs)} outputs")
    return {key: _METRICS[key](targets, outputs) for key in check_metrics(names)}
