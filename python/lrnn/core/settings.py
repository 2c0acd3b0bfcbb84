"""Settings: how a template is built and trained, as PyNeuraLogic's `Settings(...)`.

Anything left as None takes the engine's default, which is also the CLI's default, so a
model trained from Python and one trained by `lrnn train` with the same options match.
"""

from __future__ import annotations

import difflib
from typing import Any, Dict, Optional

from lrnn.nn.init import Initializer
from lrnn.nn.loss import ErrorFunction
from lrnn.optim import Optimizer


# Options without a PyNeuraLogic keyword of their own that the engine reads (by name).
ENGINE_OPTIONS = ("schedule", "patience", "step_size", "gamma", "max_ground_rules")
# PyNeuraLogic's settings that only tune its Java engine's building (lossless compression,
# pruning, the choice of grounder): lrnn's results do not depend on them, so they are
# accepted for compatibility and have no effect.
PYNEURALOGIC_BUILD_OPTIONS = ("iso_value_compression", "chain_pruning", "prune_only_identities", "grounder")
# PyNeuraLogic settings that would change the numbers but that the engine does not honour
# yet: refused rather than silently ignored.
UNSUPPORTED_OPTIONS = ("clip_grad_norm", "clip_grad_value")
KEYWORDS = ("optimizer", "epochs", "error_function", "initializer", "seed", "batch_size")


def _check_option(key: str, value: Any) -> None:
    if key in ENGINE_OPTIONS or key in PYNEURALOGIC_BUILD_OPTIONS:
        return
    if key in UNSUPPORTED_OPTIONS:
        if value is None:
            return
        raise NotImplementedError(
            f"Settings({key}=...): gradient clipping is not supported by the lrnn engine yet; "
            "training without it would silently give other numbers than asked for"
        )
    known = KEYWORDS + ENGINE_OPTIONS + PYNEURALOGIC_BUILD_OPTIONS + UNSUPPORTED_OPTIONS
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid: {', '.join(known)}"
    raise TypeError(f"Settings got an unexpected keyword argument {key!r}{hint}")


class Settings:
    def __init__(
        self,
        *,
        optimizer: Optional[Optimizer] = None,
        epochs: Optional[int] = None,
        error_function: Optional[ErrorFunction] = None,
        initializer: Optional[Initializer] = None,
        seed: Optional[int] = None,
        batch_size: Optional[int] = None,
        **options: Any,
    ):
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer= takes SGD(...), Adam(...) or AdamW(...), got {optimizer!r}")
        if error_function is not None and not isinstance(error_function, ErrorFunction):
            raise TypeError(f"error_function= takes MSE() or CrossEntropy(), got {error_function!r}")
        if initializer is not None and not isinstance(initializer, Initializer):
            raise TypeError(f"initializer= takes Uniform(), Normal(), Glorot(), He() or Constant(), got {initializer!r}")
        if epochs is not None and (isinstance(epochs, bool) or int(epochs) != epochs or epochs < 0):
            raise ValueError(f"epochs must be a non-negative integer, got {epochs!r}")
        if batch_size is not None and (int(batch_size) != batch_size or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.optimizer = optimizer
        self.epochs = None if epochs is None else int(epochs)
        self.error_function = error_function
        self.initializer = initializer
        self.seed = None if seed is None else int(seed)
        self.batch_size = None if batch_size is None else int(batch_size)
        # Engine options without a PyNeuraLogic keyword (ENGINE_OPTIONS), passed through by
        # name; also settable with settings["name"] = value. Unknown names are TypeErrors.
        for key, value in options.items():
            _check_option(key, value)
        self.options: Dict[str, Any] = dict(options)

    def __setitem__(self, key: str, value: Any) -> None:
        _check_option(key, value)
        self.options[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.options[key]

    def __repr__(self) -> str:
        fields = [
            f"{k}={getattr(self, k)!r}"
            for k in ("optimizer", "epochs", "error_function", "initializer", "seed", "batch_size")
            if getattr(self, k) is not None
        ]
        fields += [f"{k}={v!r}" for k, v in self.options.items()]
        return f"Settings({', '.join(fields)})"
