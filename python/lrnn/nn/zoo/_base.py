"""The base of the zoo's layers (lrnn.nn.zoo): masks, and `ZooModule`, which generates a module
of the C++ zoo's registry by name (`_core.zoo_module(zoo_name, parameters)`,
include/lrnn/zoo.hpp), runs it with the lrnn engine on NumPy arrays, and reads and writes its
weights, also in the layout of the matching torch.nn module.

`.rules()` is the template a module runs (printable, editable text), `load_torch(m)` copies
the weights of the matching torch.nn module, and calling it on a NumPy [n, d] array returns the
[n, d] output. A mask is a body literal of the score rule, so masked pairs are never grounded
or computed. Sequences of a length seen before reuse their grounded plan (no grounding after
the first call per length and mask).

    >>> import lrnn.nn
    >>> print(lrnn.nn.MultiheadAttention(16, 4).rules())
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from lrnn import _core
from lrnn.nn._dtype import DtypeSwitch


class Mask:
    """Body literals restricting which keys J a query I attends to (variables I and J)."""

    def __init__(self, literals: Sequence[str] = (), facts: Sequence[str] = ()):
        self.literals: Tuple[str, ...] = tuple(literals)
        self.facts: Tuple[str, ...] = tuple(facts)  # example facts the literals read

    @staticmethod
    def causal() -> "Mask":
        """J <= I."""
        return Mask(_core.zoo_mask("causal", 0))

    @staticmethod
    def window(w: int) -> "Mask":
        """0 <= I - J <= w (sliding window)."""
        return Mask(_core.zoo_mask("window", int(w)))

    @staticmethod
    def strided(s: int) -> "Mask":
        """(I - J) mod s == 0."""
        return Mask(_core.zoo_mask("strided", int(s)))

    @staticmethod
    def custom(literals: str) -> "Mask":
        """Arbitrary literals in the text format, e.g. "@neq(I, J)"."""
        return Mask(_core.zoo_custom_mask(literals))

    @staticmethod
    def from_array(allowed: np.ndarray, predicate: str = "mask_allowed") -> "Mask":
        """A boolean [n, m] array, True where query i may attend to key j (the opposite of
        torch.nn.MultiheadAttention's boolean attn_mask). Becomes hidden facts."""
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.ndim != 2:
            raise ValueError(f"a mask array must be 2-D [n, m], got shape {allowed.shape}")
        ii, jj = np.nonzero(allowed)
        facts = [f"{predicate}({i}, {j})" for i, j in zip(ii.tolist(), jj.tolist())]
        return Mask([f"*{predicate}(I, J)"], facts)

    def __and__(self, other: "Mask") -> "Mask":
        lits = list(self.literals) + [l for l in other.literals if l not in self.literals]
        return Mask(lits, self.facts + other.facts)

    def __bool__(self) -> bool:
        return bool(self.literals)

    def __repr__(self) -> str:
        return f"Mask({list(self.literals)!r})"


MaskLike = Union[None, Mask, str, np.ndarray]


def _as_mask(mask: MaskLike) -> Mask:
    if mask is None:
        return Mask()
    if isinstance(mask, Mask):
        return mask
    if isinstance(mask, str):
        if mask == "causal":
            return Mask.causal()
        return Mask.custom(mask)
    return Mask.from_array(mask)


def _as_2d(x, name: str) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor (its values; no autograd through here)
        x = x.detach().cpu().double().numpy()
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D [n, d] array, got shape {a.shape}")
    return a


def positional_encoding(n: int, d: int) -> np.ndarray:
    """Sinusoidal positional encoding (base 10000), [n, d]."""
    return _core.zoo_positional_encoding(int(n), int(d))


def zoo_modules() -> Dict[str, List[Tuple[str, str, Any, str, int]]]:
    """Every module of the C++ registry: name -> [(parameter, type, default or None, doc,
    minimum), ...]."""
    global _SCHEMAS
    if _SCHEMAS is None:
        _SCHEMAS = {name: [tuple(p) for p in params] for name, _doc, params in _core.zoo_modules()}
    return _SCHEMAS


_SCHEMAS: Optional[Dict[str, List[Tuple[str, str, Any, str, int]]]] = None


class ZooModule(DtypeSwitch):
    """A module of the C++ zoo's registry (its name: `zoo_name`), run by the lrnn engine: one
    engine model per mask, weights shared by copying.

    A subclass is a layer in one file: its docstring, its constructor (keeping each argument
    named like a registry parameter as an attribute of that name) and `__call__`. The
    parameters sent to the generator are those attributes plus the call's mask as `mask`;
    a subclass whose arguments differ from the registry's overrides `_zoo_parameters`."""

    #: the name the module is registered under (LRNN_ZOO_MODULE in src/zoo/)
    zoo_name: str = ""

    def __repr__(self) -> str:
        from lrnn.nn._repr import constructor_repr

        return constructor_repr(self)

    def __init__(self, seed: int = 1, dtype: str = "float64"):
        from lrnn.core.settings import check_dtype

        self._seed = seed
        # The scalar type of the engine's passes (weights and gradients stay float64).
        self._dtype = check_dtype(dtype, f"{type(self).__name__}(dtype=...)")
        self._default_mask = Mask()
        self._models: Dict[Tuple[str, ...], Tuple[object, object]] = {}
        self._main_key: Tuple[str, ...] = ()
        self._last = None

    def _zoo_parameters(self, mask: Mask) -> Dict[str, Any]:
        """The registry parameters: the attributes named like them, and `mask` from the call."""
        schema = zoo_modules().get(self.zoo_name)
        if schema is None:
            raise ValueError(f"{type(self).__name__}: no zoo module '{self.zoo_name}' is registered")
        kept = vars(self)
        params = {name: kept[name] for name, *_ in schema if name in kept}
        if any(name == "mask" for name, *_ in schema):
            params["mask"] = list(mask.literals)
        return params

    def _generate(self, mask: Mask):
        return _core.zoo_module(self.zoo_name, self._zoo_parameters(mask))

    def _model_for(self, mask: Mask):
        key = mask.literals
        if not self._models:
            module = self._generate(mask)
            self._models[key] = (module, _core.ZooSequenceModel(module, self._seed))
            self._models[key][1].dtype = self._dtype
            self._main_key = key
        if key not in self._models:
            module = self._generate(mask)
            self._models[key] = (module, _core.ZooSequenceModel(module, self._seed))
            self._models[key][1].dtype = self._dtype
        module, model = self._models[key]
        if key != self._main_key:  # the main model holds the weights
            main = self._models[self._main_key][1]
            for name in main.parameter_names():
                model.set_parameter(name, main.parameter(name))
        return module, model

    def _engine_models(self):
        return [model for _, model in self._models.values()]

    @property
    def module(self):
        return self._model_for(self._default_mask)[0]

    @property
    def _model(self):
        return self._model_for(self._default_mask)[1]

    def rules(self) -> str:
        """The template this module runs, in the text format."""
        return self.module.text()

    def __str__(self) -> str:
        return self.rules()

    # ---- weights ---------------------------------------------------------------------
    def parameters(self) -> Dict[str, np.ndarray]:
        """Every weight by name (without '$'), as [rows, cols] arrays (copies)."""
        m = self._model
        return {name: np.array(m.parameter(name)) for name in m.parameter_names()}

    def set_parameter(self, name: str, value) -> None:
        m = self._model
        m.set_parameter(name, _as_2d(np.reshape(np.asarray(value, dtype=np.float64), m.parameter(name).shape), name))

    def load_torch(self, torch_module) -> "ZooModule":
        """Copies the weights of the matching torch.nn module (its state_dict)."""
        state = {}
        for key, tensor in torch_module.state_dict().items():
            a = tensor.detach().cpu().double().numpy()
            state[key] = np.ascontiguousarray(a.reshape(a.shape[0], -1) if a.ndim >= 1 else a.reshape(1, 1))
        self._check_torch_module(torch_module)
        self._check_state_shapes(state)
        self._check_norms(state)
        self._model.load_torch(self.module, state)
        return self

    # What a torch module computes beyond its weight shapes (heads, norm placement, the
    # activation, eps): a module that differs is refused, never loaded into a different
    # function. Subclasses list their settings; see _torch_settings.
    def _torch_settings(self, torch_module) -> List[Tuple[str, Any, Any]]:
        return []

    def _torch_kind(self) -> str:
        return type(self).__name__

    def _check_torch_module(self, torch_module) -> None:
        kind = type(torch_module).__name__
        if kind != self._torch_kind():
            raise ValueError(f"load_torch: {type(self).__name__} loads a torch.nn.{self._torch_kind()}, got {kind}")
        for name, theirs, ours in self._torch_settings(torch_module):
            if theirs != ours:
                raise ValueError(f"load_torch: the torch module's {name} is {theirs!r}, this "
                                 f"{type(self).__name__} has {ours!r}")

    def _check_state_shapes(self, state) -> None:
        expected: Dict[str, List[int]] = {}
        for s in self.module.torch:
            r, c = expected.get(s.torch_name, [0, 0])
            expected[s.torch_name] = [max(r, s.row_end), max(c, s.col_end)]
        for name, (r, c) in expected.items():
            if name not in state:
                raise ValueError(f"load_torch: the torch module has no {name}")
            if tuple(state[name].shape) != (r, c):
                raise ValueError(f"load_torch: {name} is {tuple(state[name].shape)} in the torch module, "
                                 f"{type(self).__name__} needs {(r, c)}")
        unused = sorted(k for k in state if k not in expected and not _norm_affine_key(k))
        if unused:
            raise ValueError(f"load_torch: the torch module has weights this {type(self).__name__} has no place "
                             f"for: {', '.join(unused)}")

    def _check_norms(self, state) -> None:
        # Without affine layer norms the template uses plain `norm`, which equals torch's
        # LayerNorm only while its weight is 1 and its bias 0.
        if getattr(self, "norm_affine", True):
            return
        for key, a in state.items():
            if ".norm" in "." + key and key.endswith(".weight") and not np.allclose(a, 1.0):
                raise ValueError(f"{key} is not all ones: build the module with norm_affine=True to load it")
            if ".norm" in "." + key and key.endswith(".bias") and not np.allclose(a, 0.0):
                raise ValueError(f"{key} is not all zeros: build the module with norm_affine=True to load it")

    def torch_state(self) -> Dict[str, np.ndarray]:
        """The weights in the layout of the matching torch module's state_dict."""
        return self._assemble(self._model.parameter)

    def torch_grads(self) -> Dict[str, np.ndarray]:
        """Gradients accumulated by backward(), laid out like the torch parameters."""
        return self._assemble(self._last_model().parameter_grad)

    def _assemble(self, get) -> Dict[str, np.ndarray]:
        out: Dict[str, np.ndarray] = {}
        slices = self.module.torch
        shapes: Dict[str, List[int]] = {}
        for s in slices:
            r, c = shapes.get(s.torch_name, [0, 0])
            shapes[s.torch_name] = [max(r, s.row_end), max(c, s.col_end)]
        for name, (r, c) in shapes.items():
            out[name] = np.zeros((r, c))
        for s in slices:
            out[s.torch_name][s.row_begin:s.row_end, s.col_begin:s.col_end] = np.asarray(get(s.weight)).reshape(
                s.row_end - s.row_begin, s.col_end - s.col_begin)
        return {k: (v[:, 0] if any(s.vector for s in slices if s.torch_name == k) else v) for k, v in out.items()}

    # ---- running ---------------------------------------------------------------------
    def _run(self, inputs: List[Tuple[str, np.ndarray]], out_n: int, mask: MaskLike) -> np.ndarray:
        m = _as_mask(mask) if mask is not None else self._default_mask
        _, model = self._model_for(m)
        self._last = (model, [a.shape for _, a in inputs])
        return np.asarray(model.forward(inputs, out_n, list(m.facts)))

    def _last_model(self):
        if self._last is None:
            raise RuntimeError("call the module (forward) before backward()")
        return self._last[0]

    def backward(self, grad_output) -> List[np.ndarray]:
        """After a call: dL/d(output) -> [dL/d(input), ...] (one per input sequence), and
        accumulates the weight gradients (torch_grads(), zero_grad())."""
        model, shapes = self._last
        g = _as_2d(grad_output, "grad_output")
        return [np.asarray(flat).reshape(shape) for flat, shape in zip(model.backward(g), shapes)]

    def zero_grad(self) -> None:
        for _, model in self._models.values():
            model.zero_grad()

    def stats(self) -> Dict[str, float]:
        """Plan cache counters of the last model used: groundings, cache_hits, ground_rules, and the
        CPU seconds its last new structure took to ground, neuralize and plan (build_cpu_seconds)."""
        model = self._last[0] if self._last else self._model
        g, h, r, b = model.stats()
        return {"groundings": g, "cache_hits": h, "ground_rules": r, "build_cpu_seconds": b}


def _norm_affine_key(key: str) -> bool:
    """LayerNorm weights, checked by _check_norms when the module has no affine norms."""
    return ".norm" in "." + key and (key.endswith(".weight") or key.endswith(".bias"))
