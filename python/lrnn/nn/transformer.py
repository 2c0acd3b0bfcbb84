"""Attention and transformer layers as lrnn templates, interoperable with torch.nn.

Every module here is a rule generator of the C++ zoo (include/lrnn/zoo.hpp): `.rules()`
is the template it runs (printable, editable text), `load_torch(m)` copies the weights of
the matching torch.nn module, and calling it on a NumPy [n, d] array returns the [n, d]
output, computed by the lrnn engine. A mask is a body literal of the score rule, so masked
pairs are never grounded or computed. Sequences of a length seen before reuse their
grounded plan (no grounding after the first call per length and mask).

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


class _ZooModule(DtypeSwitch):
    """Common machinery: one engine model per mask, weights shared by copying."""

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

    # subclasses: _generate(mask: Mask) -> _core.ZooModule
    def _generate(self, mask: Mask):
        raise NotImplementedError

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

    def load_torch(self, torch_module) -> "_ZooModule":
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


def _attention_settings(attn, embed_dim: int, num_heads: int, bias: bool) -> List[Tuple[str, Any, Any]]:
    return [
        ("embed_dim", attn.embed_dim, embed_dim),
        ("num_heads", attn.num_heads, num_heads),
        ("bias", attn.in_proj_bias is not None, bias),
        ("kdim/vdim", (attn.kdim, attn.vdim), (embed_dim, embed_dim)),
        ("add_bias_kv", attn.bias_k is not None, False),
        ("add_zero_attn", attn.add_zero_attn, False),
    ]


def _layer_settings(layer, d_model: int, nhead: int, dim_feedforward: int, norm_first: bool, cross: bool):
    import torch.nn.functional as F

    activation = getattr(layer, "activation", None)
    relu = activation is F.relu or type(activation).__name__ == "ReLU" or getattr(layer, "activation_relu_or_gelu", 0) == 1
    out = [("norm_first", layer.norm_first, norm_first), ("activation", "relu" if relu else repr(activation), "relu"),
           ("dim_feedforward", layer.linear1.out_features, dim_feedforward)]
    out += [(f"{n}.eps", getattr(layer, n).eps, 1e-5) for n in ("norm1", "norm2", "norm3") if hasattr(layer, n)]
    out += [("self_attn." + n, a, b) for n, a, b in _attention_settings(layer.self_attn, d_model, nhead, True)]
    if cross:
        out += [("multihead_attn." + n, a, b) for n, a, b in _attention_settings(layer.multihead_attn, d_model, nhead, True)]
    return out


class MultiheadAttention(_ZooModule):
    """torch.nn.MultiheadAttention(embed_dim, num_heads) (batch of one sequence, dropout 0).
    Call with x [n, d] for self-attention, or (x, memory) for cross-attention."""

    def __init__(self, embed_dim: int, num_heads: int = 1, bias: bool = True, mask: MaskLike = None,
                 prefix: str = "attn", seed: int = 1, cross: bool = False, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.embed_dim, self.num_heads, self.bias, self.prefix, self.cross = embed_dim, num_heads, bias, prefix, cross
        self._default_mask = _as_mask(mask)
        self._project = True
        self._model_for(self._default_mask)

    def _torch_settings(self, torch_module):
        return _attention_settings(torch_module, self.embed_dim, self.num_heads, self.bias)

    def _generate(self, mask: Mask):
        return _core.zoo_attention(self.embed_dim, self.num_heads, self.prefix, "input",
                                   "memory" if self.cross else "", "", list(mask.literals), self.bias, self._project)

    def __call__(self, x, memory=None, mask: MaskLike = None) -> np.ndarray:
        x = _as_2d(x, "x")
        inputs = [("input", x)]
        if self.cross:
            if memory is None:
                raise ValueError("a cross-attention module needs memory (the keys and values)")
            inputs.append(("memory", _as_2d(memory, "memory")))
        elif memory is not None:
            raise ValueError("memory is only for modules built with cross=True")
        return self._run(inputs, x.shape[0], mask)


class Attention(MultiheadAttention):
    """One head with [d, d] q/k/v projections and no output projection (the form of
    PyNeuraLogic's "Beyond Transformers"); no torch counterpart."""

    def __init__(self, embed_dim: int, bias: bool = True, mask: MaskLike = None, prefix: str = "attn", seed: int = 1,
                 dtype: str = "float64"):
        _ZooModule.__init__(self, seed, dtype)
        self.embed_dim, self.num_heads, self.bias, self.prefix, self.cross = embed_dim, 1, bias, prefix, False
        self._default_mask = _as_mask(mask)
        self._project = False
        self._model_for(self._default_mask)


class TransformerEncoderLayer(_ZooModule):
    """torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0,
    activation="relu", norm_first) with layer_norm_eps 1e-5. norm_affine=False uses plain
    layer normalisation (equal to torch's default affine parameters 1 and 0)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, norm_first: bool = False,
                 norm_affine: bool = False, mask: MaskLike = None, prefix: str = "enc", seed: int = 1,
                 num_layers: int = 0, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.norm_first, self.norm_affine, self.prefix, self.num_layers = norm_first, norm_affine, prefix, num_layers
        self._default_mask = _as_mask(mask)
        self._model_for(self._default_mask)

    def _torch_kind(self) -> str:
        return "TransformerEncoder" if self.num_layers else "TransformerEncoderLayer"

    def _torch_settings(self, torch_module):
        if not self.num_layers:
            return _layer_settings(torch_module, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, False)
        out = [("num_layers", torch_module.num_layers, self.num_layers), ("norm", torch_module.norm, None)]
        for i, layer in enumerate(torch_module.layers):
            out += [(f"layers.{i}.{n}", a, b) for n, a, b in
                    _layer_settings(layer, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, False)]
        return out

    def _generate(self, mask: Mask):
        return _core.zoo_encoder(self.d_model, self.nhead, self.dim_feedforward, self.num_layers, self.prefix,
                                 "input", "", list(mask.literals), self.norm_first, self.norm_affine)

    def __call__(self, x, mask: MaskLike = None) -> np.ndarray:
        x = _as_2d(x, "x")
        return self._run([("input", x)], x.shape[0], mask)


class TransformerEncoder(TransformerEncoderLayer):
    """torch.nn.TransformerEncoder(layer, num_layers) without a final norm: `layer` is a
    TransformerEncoderLayer whose settings every layer copies."""

    def __init__(self, layer: TransformerEncoderLayer, num_layers: int, mask: MaskLike = None, seed: int = 1,
                 dtype: Optional[str] = None):
        if num_layers <= 0:
            raise ValueError("num_layers must be positive")
        super().__init__(layer.d_model, layer.nhead, layer.dim_feedforward, layer.norm_first, layer.norm_affine,
                         mask if mask is not None else layer._default_mask, layer.prefix, seed, num_layers,
                         dtype if dtype is not None else layer.dtype)


class TransformerDecoderLayer(_ZooModule):
    """torch.nn.TransformerDecoderLayer (dropout 0, ReLU): self-attention over the target
    (tgt_mask, e.g. Mask.causal()), cross-attention over the memory, ReLU MLP."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, norm_first: bool = False,
                 norm_affine: bool = False, tgt_mask: MaskLike = None, memory_mask: MaskLike = None,
                 prefix: str = "dec", seed: int = 1, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.norm_first, self.norm_affine, self.prefix = norm_first, norm_affine, prefix
        self._memory_mask = _as_mask(memory_mask)
        self._default_mask = _as_mask(tgt_mask)
        self._model_for(self._default_mask)

    def _torch_settings(self, torch_module):
        return _layer_settings(torch_module, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, True)

    def _generate(self, mask: Mask):
        return _core.zoo_decoder(self.d_model, self.nhead, self.dim_feedforward, self.prefix, "target", "memory", "",
                                 list(mask.literals), list(self._memory_mask.literals), self.norm_first,
                                 self.norm_affine)

    def __call__(self, tgt, memory, tgt_mask: MaskLike = None) -> np.ndarray:
        tgt, memory = _as_2d(tgt, "tgt"), _as_2d(memory, "memory")
        return self._run([("target", tgt), ("memory", memory)], tgt.shape[0], tgt_mask)


class Transformer(_ZooModule):
    """torch.nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
    dim_feedforward, dropout=0, activation="relu", batch_first=True) on one sequence pair:
    ``model(src, tgt, tgt_mask=Mask.causal())`` with src [n, d], tgt [m, d] gives [m, d]. The
    encoder stack and its final norm give the memory every decoder layer attends to; the
    decoder stack ends with its own norm, as torch's. norm_affine=False uses plain layer
    normalisation (torch's untrained LayerNorm weights, 1 and 0; load_torch refuses others)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, norm_first: bool = False, norm_affine: bool = False,
                 src_mask: MaskLike = None, tgt_mask: MaskLike = None, memory_mask: MaskLike = None,
                 prefix: str = "tf", seed: int = 1, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.num_encoder_layers, self.num_decoder_layers = num_encoder_layers, num_decoder_layers
        self.norm_first, self.norm_affine, self.prefix = norm_first, norm_affine, prefix
        self._src_mask, self._memory_mask = _as_mask(src_mask), _as_mask(memory_mask)
        self._default_mask = _as_mask(tgt_mask)
        self._model_for(self._default_mask)

    def _torch_settings(self, torch_module):
        encoder, decoder = torch_module.encoder, torch_module.decoder
        out = [("d_model", torch_module.d_model, self.d_model), ("nhead", torch_module.nhead, self.nhead),
               ("num_encoder_layers", len(encoder.layers), self.num_encoder_layers),
               ("num_decoder_layers", len(decoder.layers), self.num_decoder_layers),
               ("encoder.norm", type(encoder.norm).__name__, "LayerNorm"),
               ("decoder.norm", type(decoder.norm).__name__, "LayerNorm")]
        out += [(f"{n}.norm.eps", getattr(stack, "norm").eps, 1e-5) for n, stack in (("encoder", encoder), ("decoder", decoder))
                if stack.norm is not None]
        for part, stack, cross in (("encoder", encoder, False), ("decoder", decoder, True)):
            for i, layer in enumerate(stack.layers):
                out += [(f"{part}.layers.{i}.{n}", a, b) for n, a, b in
                        _layer_settings(layer, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, cross)]
        return out

    def _generate(self, mask: Mask):
        return _core.zoo_transformer(self.d_model, self.nhead, self.num_encoder_layers, self.num_decoder_layers,
                                     self.dim_feedforward, self.prefix, list(self._src_mask.literals),
                                     list(mask.literals), list(self._memory_mask.literals), self.norm_first,
                                     self.norm_affine)

    def __call__(self, src, tgt, src_mask: MaskLike = None, tgt_mask: MaskLike = None,
                 memory_mask: MaskLike = None) -> np.ndarray:
        for name, given, built in (("src_mask", src_mask, self._src_mask), ("memory_mask", memory_mask, self._memory_mask)):
            if given is not None and _as_mask(given).literals != built.literals:
                raise ValueError(f"{name} differs from the one this Transformer was built with ({built!r}): "
                                 f"give it to the constructor")
        src, tgt = _as_2d(src, "src"), _as_2d(tgt, "tgt")
        return self._run([("source", src), ("target", tgt)], tgt.shape[0], tgt_mask)


class RelationalAttention(_ZooModule):
    """Relational attention over graph edges (Diao & Loynd 2022, node update): queries,
    keys and values from node and edge embeddings. Call with nodes [n, d], an edge list
    [(i, j), ...] (j sends to i) and edge features [len(edges), edge_dim]."""

    def __init__(self, node_dim: int, edge_dim: int, num_heads: int = 1, prefix: str = "rel", seed: int = 1,
                 dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.node_dim, self.edge_dim, self.num_heads, self.prefix = node_dim, edge_dim, num_heads, prefix
        self._model_for(self._default_mask)

    def _generate(self, mask: Mask):
        return _core.zoo_relational_attention(self.node_dim, self.edge_dim, self.num_heads, self.prefix, "node",
                                              "edge", "", list(mask.literals))

    def __call__(self, nodes, edges: Sequence[Tuple[int, int]], edge_features) -> np.ndarray:
        nodes = _as_2d(nodes, "nodes")
        feats = _as_2d(edge_features, "edge_features")
        if len(edges) != feats.shape[0]:
            raise ValueError(f"{len(edges)} edges but {feats.shape[0]} rows of edge features")
        facts = []
        for (i, j), row in zip(edges, feats):
            values = ", ".join(repr(float(v)) for v in row)
            facts.append(f"<[{values}]> edge({int(i)}, {int(j)})")
        _, model = self._model_for(self._default_mask)
        self._last = (model, [nodes.shape])
        return np.asarray(model.forward([("node", nodes)], nodes.shape[0], facts))


__all__ = [
    "Mask", "positional_encoding", "Attention", "MultiheadAttention", "TransformerEncoderLayer",
    "TransformerEncoder", "TransformerDecoderLayer", "Transformer", "RelationalAttention",
]
