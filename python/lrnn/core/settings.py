"""Settings: how a template is built and trained, as PyNeuraLogic's `Settings(...)`.

Anything left as None takes the engine's default, which is also the CLI's default, so a
model trained from Python and one trained by `lrnn train` with the same options match.
"""

from __future__ import annotations

import difflib
import math
import numbers
import weakref
from typing import Any, Dict, Optional

from lrnn.nn.init import Initializer
from lrnn.nn.loss import ErrorFunction
from lrnn.optim import Optimizer


# Options without a PyNeuraLogic keyword of their own that the engine reads (by name).
ENGINE_OPTIONS = ("schedule", "patience", "step_size", "gamma", "max_ground_rules", "max_atoms", "max_memory",
                  "shuffle", "dtype",
                  # crossentropy's label smoothing; the noam schedule's warm-up steps and d_model
                  # (docs/seq2seq.md)
                  "label_smoothing", "warmup", "d_model",
                  "query_batch_size", "fanout",
                  # link prediction (docs/big_graphs.md "Link prediction and knowledge-base completion")
                  "link_prediction", "negatives", "corrupt", "margin", "ranking", "link_chunk")
# The scalar types of the engine's passes (Settings(dtype=...); float64 is the default).
DTYPES = ("float32", "float64")


def check_dtype(value: Any, where: str = "Settings(dtype=...)") -> str:
    """`value` as one of DTYPES (also a numpy or torch dtype of that name); anything else is
    a ValueError naming the closest valid value."""
    name = value.__name__ if isinstance(value, type) else str(value).replace("torch.", "")
    if name in DTYPES:
        return name
    close = difflib.get_close_matches(name, DTYPES, n=1, cutoff=0.0)
    raise ValueError(f"{where} takes 'float32' or 'float64', got {value!r}; did you mean {close[0]!r}?")


# PyNeuraLogic's settings that tune its Java engine's building (compression, chain pruning,
# the choice of grounder): accepted so its code runs, and ignored. lrnn never prunes: every
# network computes what docs/language.md says, where PyNeuraLogic's chain pruning (on by default)
# can drop an activation (see the Settings docstring).
PYNEURALOGIC_BUILD_OPTIONS = ("iso_value_compression", "chain_pruning", "prune_only_identities", "grounder")
# Gradient clipping, honoured by the engine (torch's clip_grad_value_ then clip_grad_norm_).
CLIP_OPTIONS = ("clip_grad_norm", "clip_grad_value")
KEYWORDS = ("optimizer", "epochs", "error_function", "initializer", "seed", "batch_size")
KNOWN = KEYWORDS + ENGINE_OPTIONS + PYNEURALOGIC_BUILD_OPTIONS + CLIP_OPTIONS


# The integer settings' upper bounds: what the engine's C++ fields hold (int, uint64_t, size_t).
_INTEGER_BOUNDS = {"epochs": (2**31 - 1,), "seed": (2**64 - 1,), "batch_size": (2**63 - 1, "0: the whole set per step")}


def _integer(name: str, value: Any, hi: int, note: str = "") -> int:
    """An integer setting in [0, hi] (hi: what the engine's C++ field holds): -1 or 2**64 for the
    seed, inf, nan or 2.5 epochs are a ValueError naming the setting, not an OverflowError or
    nanobind's `incompatible function arguments` later."""
    integral = isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral or not 0 <= value <= hi:
        extra = f"; {note}" if note else ""
        raise ValueError(f"{name} must be an integer in [0, {hi}]{extra}, got {value!r}")
    return int(value)


def check_memory_size(value: Any, where: str = "Settings(max_memory=...)") -> None:
    """A memory budget as the engine reads it: a size such as "4G", "512M", "0.5T" or a number
    of bytes > 0; anything else ("", "-1", "4X", 0, True) is a ValueError naming `where`."""
    from lrnn import _core

    if isinstance(value, str):
        _core.parse_memory_size(value, where)  # raises LrnnError (a ValueError) naming `where`
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 < value < 2**64:
        raise ValueError(f'{where} takes a size such as "4G", "512M", "0.5T" or a number of bytes > 0, got {value!r}')


def _check_option(key: str, value: Any) -> None:
    if key == "dtype" and value is not None:
        check_dtype(value)
    if key == "max_memory" and value is not None:
        check_memory_size(value)
    if key == "shuffle" and not isinstance(value, bool):
        raise ValueError(f"Settings(shuffle=...) takes True or False, got {value!r}")
    if key == "label_smoothing" and value is not None and (
            isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1):
        raise ValueError(f"Settings(label_smoothing=...) takes a number in [0, 1] (torch's "
                         f"CrossEntropyLoss(label_smoothing=)), got {value!r}")
    if key in ("warmup", "d_model") and value is not None and (
            isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value < 2**31):
        raise ValueError(f"Settings({key}=...) takes an integer >= 1, got {value!r}")
    if key in ENGINE_OPTIONS or key in PYNEURALOGIC_BUILD_OPTIONS:
        return
    if key in CLIP_OPTIONS:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise ValueError(f"Settings({key}=...) takes a finite number > 0 or None, got {value!r}")
        return
    close = difflib.get_close_matches(key, KNOWN, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid: {', '.join(KNOWN)}"
    raise TypeError(f"Settings got an unexpected keyword argument {key!r}{hint}")


def _normalized(key: str, value: Any) -> Any:
    """The value the engine reads: a dtype by its name ("float32" for np.float32 too)."""
    return check_dtype(value) if key == "dtype" and value is not None else value


def _uniform() -> type:
    from lrnn.nn.init import Uniform

    return Uniform


def _engine_default(key: str) -> Any:
    from lrnn import _core

    return _core.default_settings()[key]


def _subclass_named(base: type, name: str, name_of) -> type:
    """The subclass of `base` whose engine name is `name` (the engine's default, read from
    `_core.default_settings()`, so the Python defaults cannot drift from the CLI's)."""
    pending = [base]
    while pending:
        cls = pending.pop()
        if name_of(cls) == name:
            return cls
        pending.extend(cls.__subclasses__())
    raise RuntimeError(f"the engine's default {name!r} has no {base.__name__} class in lrnn")


def _default_optimizer() -> Optimizer:
    cls = _subclass_named(Optimizer, _engine_default("optimizer"), lambda c: c.__dict__.get("kind"))
    return cls(lr=_engine_default("lr"))


def _default_error_function() -> ErrorFunction:
    cls = _subclass_named(ErrorFunction, _engine_default("loss"), lambda c: c.__dict__.get("name"))
    return cls()


def _default_initializer() -> Initializer:
    cls = _subclass_named(Initializer, _engine_default("initializer"), lambda c: c.__dict__.get("kind"))
    return cls()


class SettingsProxy:
    """What a build sees of a Settings (PyNeuraLogic's proxy): a copy that follows later
    changes of the Settings it came from (`settings.create_proxy()`)."""

    def __init__(self, settings: "Settings"):
        self._copy_from(settings)

    def _copy_from(self, settings: "Settings") -> None:
        self.optimizer = settings.optimizer
        self.error_function = settings.error_function
        self.initializer = settings.initializer
        self.epochs = settings.epochs
        self.seed = settings.seed
        self.batch_size = settings.batch_size
        self.options = dict(settings.options)

    @property
    def initializer_uniform_scale(self) -> float:
        return getattr(self.initializer, "scale", 1.0)

    def __getitem__(self, key: str) -> Any:
        return self.options[key]


class Settings:
    """Every field left unset takes the engine's default, read from the engine
    (`_core.default_settings()`): today `optimizer` reads as Adam with the engine's rate,
    `error_function` as MSE(), `initializer` as Glorot().

    PyNeuraLogic's build options `chain_pruning`, `iso_value_compression`,
    `prune_only_identities` and `grounder` are accepted and ignored: lrnn never prunes, so
    its outputs always follow docs/language.md. PyNeuraLogic's chain pruning (on by default) is
    lossy: with `(R.out <= R.h) | [F.tanh]`, `R.out / 0 | [F.tanh]` and the fact `R.h[1]`,
    PyNeuraLogic 0.9.2 with `chain_pruning=True` gives tanh(1) = 0.7616 (it drops a tanh of
    the chain), while `chain_pruning=False` and lrnn (either way) give tanh(tanh(1)) = 0.6420.
    Code whose results were tuned on PyNeuraLogic's pruned networks can therefore differ.

    `max_memory` ("4G", "512M", "0.5T" or bytes) is the memory budget (docs/cli.md "Memory
    budget", the CLI's `--max-memory`): a stage that would take lrnn's arrays (weights and
    their optimizer state, ground atoms and rules, networks, workspaces, stored facts, array
    values written in a template) past it stops with an LrnnError of kind "limit" naming the
    rule, literal or file at fault. It is one per process: building or training a model with
    it sets it (`lrnn.set_max_memory()` sets it directly); unset, it stays as it is, by default
    80% of the memory available when lrnn started. Not counted: Python's and torch's own
    memory, and lrnn's small allocations. `max_ground_rules` and `max_atoms` bound one
    sample's grounding (a Limit error naming the rule past them)."""

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
        self._proxies: "weakref.WeakSet[SettingsProxy]" = weakref.WeakSet()
        self._optimizer: Optional[Optimizer] = None
        self._error_function: Optional[ErrorFunction] = None
        self._initializer: Optional[Initializer] = None
        self.optimizer = optimizer
        self.error_function = error_function
        self.initializer = initializer
        self.epochs = epochs
        self.seed = seed
        self.batch_size = batch_size
        # Engine options without a PyNeuraLogic keyword (ENGINE_OPTIONS), passed through by
        # name; also settable with settings["name"] = value. Unknown names are TypeErrors.
        for key, value in options.items():
            _check_option(key, value)
        self.options: Dict[str, Any] = {k: _normalized(k, v) for k, v in options.items()}

    # ---- the three objects, with the engine's defaults when unset -------------------------
    @property
    def optimizer(self) -> Optimizer:
        if self._optimizer is None:
            return _default_optimizer()
        return self._optimizer

    @optimizer.setter
    def optimizer(self, optimizer: Optional[Optimizer]) -> None:
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer= takes SGD(...), Adam(...) or AdamW(...), got {optimizer!r}")
        self._optimizer = optimizer
        self._changed()

    @property
    def error_function(self) -> ErrorFunction:
        if self._error_function is None:
            return _default_error_function()
        return self._error_function

    @error_function.setter
    def error_function(self, error_function: Optional[ErrorFunction]) -> None:
        if error_function is not None and not isinstance(error_function, ErrorFunction):
            raise TypeError(f"error_function= takes MSE(), CrossEntropy() or SoftEntropy(), got {error_function!r}")
        self._error_function = error_function
        self._changed()

    @property
    def initializer(self) -> Initializer:
        if self._initializer is None:
            return _default_initializer()
        return self._initializer

    @initializer.setter
    def initializer(self, initializer: Optional[Initializer]) -> None:
        if initializer is not None and not isinstance(initializer, Initializer):
            raise TypeError(
                f"initializer= takes Uniform(), Normal(), Glorot(), He(), Constant(), Longtail() or Torch(), got {initializer!r}"
            )
        self._initializer = initializer
        self._changed()

    @property
    def clip_grad_norm(self) -> Optional[float]:
        return self.options.get("clip_grad_norm")

    @clip_grad_norm.setter
    def clip_grad_norm(self, value: Optional[float]) -> None:
        self["clip_grad_norm"] = value

    @property
    def clip_grad_value(self) -> Optional[float]:
        return self.options.get("clip_grad_value")

    @clip_grad_value.setter
    def clip_grad_value(self, value: Optional[float]) -> None:
        self["clip_grad_value"] = value

    @property
    def initializer_uniform_scale(self) -> Optional[float]:
        """PyNeuraLogic's name for Uniform's scale (None for other initialisers)."""
        return getattr(self._initializer, "scale", None) if isinstance(self._initializer, _uniform()) else None

    @initializer_uniform_scale.setter
    def initializer_uniform_scale(self, scale: float) -> None:
        if not isinstance(self._initializer, _uniform()):
            raise ValueError(f"initializer_uniform_scale is the scale of Uniform(); the initializer is {self.initializer!r}")
        self.initializer = _uniform()(scale)

    def __setattr__(self, key: str, value: Any) -> None:
        # A typo (settings.optimiser = ...) would otherwise make a silent new attribute.
        if not key.startswith("_") and key not in KNOWN and key not in ("options", "initializer_uniform_scale"):
            _check_option(key, value)
            self[key] = value
            return
        if key in _INTEGER_BOUNDS and value is not None:
            value = _integer(key, value, *_INTEGER_BOUNDS[key])
        object.__setattr__(self, key, value)
        if key in ("epochs", "seed", "batch_size"):
            self._changed()

    # ---- proxies (PyNeuraLogic's: a built model's view that follows the settings) ----------
    def create_proxy(self) -> SettingsProxy:
        proxy = SettingsProxy(self)
        self._proxies.add(proxy)
        return proxy

    def create_disconnected_proxy(self) -> SettingsProxy:
        return SettingsProxy(self)

    def _changed(self) -> None:
        proxies = self.__dict__.get("_proxies")
        if proxies is None or "options" not in self.__dict__:
            return
        for proxy in list(proxies):
            proxy._copy_from(self)

    def __setitem__(self, key: str, value: Any) -> None:
        _check_option(key, value)
        self.options[key] = _normalized(key, value)
        self._changed()

    def __getitem__(self, key: str) -> Any:
        return self.options[key]

    def __repr__(self) -> str:
        fields = [
            f"{k}={getattr(self, k)!r}"
            for k in ("optimizer", "epochs", "error_function", "initializer", "seed", "batch_size")
            if self.__dict__.get(k, self.__dict__.get("_" + k)) is not None
        ]
        fields += [f"{k}={v!r}" for k, v in self.options.items()]
        return f"Settings({', '.join(fields)})"
