"""The PyG form of every GNN layer (the `Pyg<Name>` class of each layer's file in this folder):
PygLayer, the rules that compute exactly torch_geometric's layer, run by the lrnn engine on
NumPy arrays or, as torch modules, on torch tensors; and the rule helpers layers share.

    layer = GCNConv.from_torch(pyg_gcn)        # PyG's configuration and weights
    out = layer(x, edge_index)                 # [n, out] float64, as pyg_gcn(x, edge_index)
    grad_x = layer.backward(grad_out)          # dL/dx; layer.torch_grads(): dL/d(weights)

With torch installed every layer is also a torch.nn.Module (torch_layer.py, docs/torch_layers.md):
called with a torch tensor x it returns a torch tensor, differentiable with respect to x and
to the layer's weights, which it holds as torch Parameters under PyG's names.

How PyG's graph handling is expressed (so nothing is approximated):
- edge_index (source row 0, target row 1) becomes facts `<m> edge(j, i)`, m the number of
  parallel edges j -> i (GCNConv: the sum of their edge_weight); every rule multiplies a message by the edge value, so sums, means
  and degrees count parallel edges as PyG does; for GATv2, log(m) is added to the score,
  so a doubled edge gets twice the attention weight of one, as in PyG's softmax.
- self-loops (GCNConv normalize=True with add_self_loops, GATv2Conv add_self_loops): PyG
  removes existing ones and adds one per node; the layer drops self-loop edges from the facts
  and the template adds `<1.0> p__edge(I, I)` for every node.
- a node without in-edges gets PyG's value: no message (and, for GCN without self-loops,
  deg^-1/2 = 0).
Anything PyG's layer does that is not written here (e.g. GATv2 with several heads or
edge features, SAGE `project`/`normalize`, BatchNorm in an MLP) is refused by from_torch
and load_torch with an error naming the setting.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from lrnn.nn._dtype import DtypeSwitch


def _core():
    from lrnn import _core as core

    return core


def _torch_array(t: Any) -> np.ndarray:
    return t.detach().cpu().double().numpy()


def is_tensor(value: Any) -> bool:
    """A torch tensor, asked without importing torch (no tensor exists before torch is imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def plain_input(value: Any, what: str) -> Any:
    """A graph input other than x (edge_index, edge_weight, edge_attr, edge_type): these become
    the facts' values, which carry no gradient back, so a tensor that asks for one is refused."""
    if is_tensor(value):
        if value.requires_grad:
            raise ValueError(f"{what} requires grad: lrnn's GNN layers differentiate x and their weights only; "
                             f"pass {what}.detach()")
        return value.detach().cpu().numpy()
    return value


def _torch_installed() -> bool:
    return "torch" in sys.modules or importlib.util.find_spec("torch") is not None


class PygLayer(DtypeSwitch):
    """Common machinery: the template (`rules()`), its engine model, the PyG parameter map.

    With torch installed, making a layer makes its torch form (torch_layer.torch_class: the
    same class, also a torch.nn.Module holding the weights as Parameters), so a layer put in a
    torch model is always one the model's optimizer sees."""

    kind = ""              # the torch_geometric class name
    prefix = "gnn"
    self_loops = False     # the template adds one self-loop per node (drop given ones)
    loop_fill: Optional[float] = None  # with self_loops: facts <w> self_loop(i), w = this or 1 where i had a loop
    _not_compared: Tuple[str, ...] = ()  # config_of keys that are weights (loaded, not compared)
    _engine_offset: Dict[str, float] = {}  # PyG key -> engine value minus PyG's (GIN keeps 1 + eps)

    def __new__(cls, *args: Any, **kwargs: Any):
        if _torch_installed():
            from lrnn.nn.module.gnn.torch_layer import torch_class

            cls = torch_class(cls)
        return super().__new__(cls)

    def __init__(self, seed: int = 1):
        super().__init__()  # torch.nn.Module's, in the torch form
        self._seed = seed
        self._model_obj = None
        self._last_shape: Optional[Tuple[int, int]] = None

    # subclasses -----------------------------------------------------------------------
    def _lines(self) -> List[str]:
        raise NotImplementedError

    def _param_map(self) -> Dict[str, Tuple[str, Tuple[int, ...]]]:
        """PyG state_dict key -> (lrnn weight name without '$', torch shape)."""
        raise NotImplementedError

    def config(self) -> Dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        raise NotImplementedError

    # rules and model --------------------------------------------------------------------
    def rules(self) -> str:
        """The template computing PyG's layer (input `x(i)`, edges `edge(j, i)`, output `out(i)`)."""
        return "\n".join(self._lines())

    def __str__(self) -> str:
        return self.rules()

    def __repr__(self) -> str:
        from lrnn.nn._repr import constructor_repr

        return constructor_repr(self)

    @property
    def _model(self):
        if self._model_obj is None:
            self._model_obj = _core().zoo_template_model(self.rules(), "x", "out", self._seed)
            self._model_obj.dtype = self.dtype
        return self._model_obj

    def _engine_models(self):
        return [self._model_obj] if self._model_obj is not None else []

    # weights -------------------------------------------------------------------------------
    # _param_map: PyG key -> (lrnn name, torch shape[, transposed[, torch shape]]); a list of names
    # splits the tensor (reshaped to the first shape) along its first axis (RGCN's per-relation
    # weights, GATv2's heads); transposed: PyG computes x W.
    def _get(self, get, spec) -> np.ndarray:
        name, shape = spec[0], spec[1]
        transposed = len(spec) > 2 and spec[2]
        names = name if isinstance(name, list) else [name]
        parts = [np.asarray(get(n)) for n in names]
        parts = [p.T if transposed else p for p in parts]
        out = (np.stack(parts) if isinstance(name, list) else parts[0]).reshape(shape)
        return out.reshape(spec[3]) if len(spec) > 3 else out  # split shape -> torch's shape

    def _set(self, spec, value: np.ndarray) -> None:
        name, shape = spec[0], spec[1]
        transposed = len(spec) > 2 and spec[2]
        value = value.reshape(shape)
        for n, part in zip(name, value) if isinstance(name, list) else [(name, value)]:
            part = part.T if transposed else part
            target = self._model.parameter(n)
            self._model.set_parameter(n, np.ascontiguousarray(np.reshape(part, target.shape)))

    def _sync_weights(self) -> None:
        """Brings the engine's weights up to date (the torch form: from its Parameters)."""

    def frozen_keys(self) -> Tuple[str, ...]:
        """PyG keys of values that are not trained (PyG buffers, e.g. GIN's eps without train_eps)."""
        return ()

    def weight_arrays(self) -> Dict[str, np.ndarray]:
        """Every weight under its PyG state_dict name, in PyG's shape."""
        self._sync_weights()
        return self._engine_weights()

    def _engine_weights(self) -> Dict[str, np.ndarray]:
        """The engine model's weights in PyG's keys and shapes (as they are: not synced)."""
        arrays = {key: self._get(self._model.parameter, spec) for key, spec in self._param_map().items()}
        for key, offset in self._engine_offset.items():
            if key in arrays:
                arrays[key] = arrays[key] - offset
        return arrays

    def parameters(self) -> Dict[str, np.ndarray]:
        """weight_arrays(), the name these had before the layers were torch modules; with torch
        installed `parameters()` is torch.nn.Module's (the Parameters, for an optimizer)."""
        return self.weight_arrays()

    def torch_grads(self) -> Dict[str, np.ndarray]:
        """Gradients accumulated by backward(), under PyG's parameter names and shapes."""
        return {key: self._get(self._model.parameter_grad, spec) for key, spec in self._param_map().items()}

    def zero_grad(self) -> None:
        self._model.zero_grad()

    @classmethod
    def from_torch(cls, layer: Any, seed: int = 1):
        """The lrnn layer with `layer`'s configuration and weights."""
        cls._check_kind(layer)
        return cls(**cls.config_of(layer), seed=seed).load_torch(layer)

    @classmethod
    def _check_kind(cls, layer: Any) -> None:
        name = type(layer).__name__
        if name != cls.kind:
            raise TypeError(f"{cls.__name__} loads a torch_geometric {cls.kind}, got a {name}")

    def load_torch(self, layer: Any):
        """Copies `layer`'s weights; refuses a layer of another kind or configuration."""
        self._check_kind(layer)
        theirs, mine = type(self).config_of(layer), self.config()
        keys = sorted((set(theirs) | set(mine)) - set(self._not_compared))
        differ = [k for k in keys if theirs.get(k) != mine.get(k)]
        if differ:
            raise ValueError(f"cannot load a {self.kind} with "
                             + ", ".join(f"{k}={theirs.get(k)!r}" for k in differ)
                             + " into a layer with " + ", ".join(f"{k}={mine.get(k)!r}" for k in differ))
        state = layer.state_dict()
        for key, spec in self._param_map().items():
            if key not in state:
                raise ValueError(f"the {self.kind} has no parameter {key!r}")
            value = _torch_array(state[key])
            if value.size != int(np.prod(spec[1])):
                raise ValueError(f"{key} has shape {tuple(value.shape)}, the layer expects {spec[1]}")
            self._set(spec, value)
        return self

    # running ---------------------------------------------------------------------------------
    @staticmethod
    def _check_edges(n: int, edge_index: Any) -> np.ndarray:
        e = np.asarray(plain_input(edge_index, "edge_index"))
        if e.ndim != 2 or e.shape[0] != 2:
            raise ValueError(f"edge_index must be a [2, E] array, got shape {e.shape}")
        e = e.astype(np.int64)
        if e.size and (e.min() < 0 or e.max() >= n):
            raise ValueError(f"edge_index holds node {int(e.min()) if e.min() < 0 else int(e.max())}, "
                             f"outside 0..{n - 1}")
        return e

    def _edge_facts(self, n: int, edge_index: Any, edge_weight: Any = None) -> List[str]:
        """`<value> edge(j, i)` per distinct pair: the number of parallel edges, or the sum of
        their edge_weight; with loop_fill, `<w> self_loop(i)` per node."""
        e = self._check_edges(n, edge_index)
        w = np.ones(e.shape[1]) if edge_weight is None else \
            np.asarray(plain_input(edge_weight, "edge_weight"), dtype=np.float64).reshape(-1)
        if w.shape[0] != e.shape[1]:
            raise ValueError(f"edge_weight has {w.shape[0]} entries for {e.shape[1]} edges")
        loops: List[str] = []
        if self.self_loops:
            if self.loop_fill is not None:
                # PyG's add_remaining_self_loops: a node keeps its given loop's weight (the last
                # one), others get the fill value, which gcn_norm only uses when edge_weight is given
                loop_w = np.full(n, self.loop_fill if edge_weight is not None else 1.0)
                for k in np.nonzero(e[0] == e[1])[0]:
                    loop_w[e[0, k]] = w[k]
                loops = [f"<{float(v)!r}> self_loop({i})" for i, v in enumerate(loop_w)]
            keep = e[0] != e[1]
            e, w = e[:, keep], w[keep]
        sums: Dict[Tuple[int, int], float] = {}
        for j, i, v in zip(e[0].tolist(), e[1].tolist(), w.tolist()):
            sums[(j, i)] = sums.get((j, i), 0.0) + v
        return [f"<{v!r}> edge({j}, {i})" for (j, i), v in sorted(sums.items())] + loops

    def _check_x(self, x: Any) -> Any:
        """x as a float64 array, or the torch tensor itself (the torch form runs it)."""
        if not is_tensor(x):
            x = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
        if x.ndim != 2 or (self.in_channels is not None and x.shape[1] != self.in_channels):
            raise ValueError(f"x must be [n, {self.in_channels or 'd'}], got shape {tuple(x.shape)}")
        return x

    def _forward(self, x: Any, facts: List[str]) -> Any:
        if is_tensor(x):
            return self._torch_forward(x, facts)
        self._sync_weights()
        self._engine_holds = None  # a torch call's backward must run its forward again
        if self._model.dtype != self.dtype:  # a torch call ran in its tensor's dtype
            self._model.dtype = self.dtype
        self._last_shape = x.shape
        return np.asarray(self._model.forward([("x", x)], x.shape[0], facts))

    def _torch_forward(self, x: Any, facts: List[str]) -> Any:
        raise TypeError(f"{type(self).__name__} was made before torch was imported: make the layer again")

    def __call__(self, x: Any, edge_index: Any) -> np.ndarray:
        x = self._check_x(x)
        return self._forward(x, self._edge_facts(x.shape[0], edge_index))

    def backward(self, grad_output: Any) -> np.ndarray:
        """After a call: dL/d(output) [n, out] -> dL/dx [n, in]; accumulates weight gradients."""
        if self._last_shape is None:
            raise RuntimeError("call the layer (forward) before backward()")
        g = np.ascontiguousarray(np.asarray(grad_output, dtype=np.float64))
        return np.asarray(self._model.backward(g)[0]).reshape(self._last_shape)

    def stats(self) -> Dict[str, float]:
        g, h, r, b = self._model.stats()
        return {"groundings": g, "cache_hits": h, "ground_rules": r, "build_cpu_seconds": b}


def _w(rows: int, cols: int) -> str:
    return f"{{{rows},{cols}}}"


def gcn_norm_lines(p: str, self_loops: bool) -> List[str]:
    """PyG's gcn_norm: p__edge(J, I) = edge value (plus one self-loop of value 1 per node),
    p__norm(I) = 1/sqrt(sum of I's in-edge values); a node without in-edges has no p__norm,
    so its messages vanish (PyG's deg^-1/2 = 0)."""
    lines = [f"<1.0> {p}__edge(I, I)."] if self_loops else []
    return lines + [
        f"{p}__edge(J, I) :- edge(J, I).",
        f"{p}__deg(I) :- {p}__edge(J, I). [aggregation=sum]",
        f"{p}__deg/1 [activation=sqrt]",
        f"{p}__norm(I) :- {p}__deg(I). [activation=inverse]",
    ]


def _bias_rule(head: str, weight: str, p: str, out: int, var: str = "I", domain: str = "") -> str:
    """head(var) gets the bias vector (a {out,1} weight times the fact p__one = 1), once for
    every atom of `domain` (default: every node x(var))."""
    return f"{head}({var}) :- ${weight}={_w(out, 1)} {p}__one, *{domain or f'x({var})'}."


_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Identity": "identity"}


def mlp_layers(modules: List[Any], where: str) -> List[Tuple]:
    """A torch MLP as ("linear", in, out, bias, index) / ("act", name, index) entries; dropout
    with p = 0 is skipped, anything else is refused naming the module."""
    layers: List[Tuple] = []
    for k, m in enumerate(modules):
        name = type(m).__name__
        if name == "Linear":
            cin = getattr(m, "in_features", getattr(m, "in_channels", None))
            cout = getattr(m, "out_features", getattr(m, "out_channels", None))
            layers.append(("linear", cin, cout, m.bias is not None, k))
        elif name in _ACTIVATIONS:
            layers.append(("act", _ACTIVATIONS[name], k))
        elif name == "Dropout" and m.p == 0:
            continue
        else:
            raise ValueError(f"{where}[{k}] is a {name}: lrnn's form takes Linear, ReLU, Tanh, Sigmoid, Identity "
                             "and Dropout(p=0)")
    if not any(l[0] == "linear" for l in layers):
        raise ValueError(f"{where} needs at least one Linear layer")
    return layers


def mlp_param_map(layers: List[Tuple], p: str, key: str, sequential: bool = True) -> Dict[str, Tuple]:
    m: Dict[str, Tuple] = {}
    for l in layers:
        if l[0] == "linear":
            _, cin, cout, bias, k = l
            prefix = f"{key}.{k}" if sequential else key
            m[f"{prefix}.weight"] = (f"{p}__nn{k}_weight", (cout, cin))
            if bias:
                m[f"{prefix}.bias"] = (f"{p}__nn{k}_bias", (cout,))
    return m


def mlp_lines(layers: List[Tuple], p: str, source: str, width: int) -> List[str]:
    """source(I) through the MLP; the last Linear writes out(I)."""
    lines: List[str] = []
    last = [l for l in layers if l[0] == "linear"][-1]
    prev, d = source, width
    for l in layers:
        if l[0] == "act":
            lines.append(f"{prev}/1 [activation={l[1]}]")
            continue
        _, cin, cout, bias, k = l
        if cin != d:
            raise ValueError(f"MLP layer {k} takes {cin} features but receives {d}")
        head = "out" if l is last else f"{p}__l{k}"
        lines.append(f"{head}(I) :- ${p}__nn{k}_weight={_w(cout, cin)} {prev}(I).")
        if bias:
            lines.append(_bias_rule(head, f"{p}__nn{k}_bias", p, cout))
        prev, d = head, cout
    return lines


def _linear(head: str, var: str, name: str, o: int, i: int, bias: bool, p: str) -> List[str]:
    lines = [f"{head}({var}) :- ${name}={_w(o, i)} x({var})."]
    return lines + ([_bias_rule(head, f"{name}_bias", p, o, var)] if bias else [])


def propagation_hop_line(p: str, k: int, source: str, normalize: bool, scale: str = "") -> str:
    """p__h{k}(I) = sum over j -> i of (norm_i norm_j) edge value * source(j), times `scale`."""
    norm = f"{p}__norm(I), {p}__edge(J, I), {p}__norm(J)" if normalize else f"{p}__edge(J, I)"
    return f"{p}__h{k}(I) :- {norm}, {scale}{source}(J). [combination=product, aggregation=sum]"


def propagation_hops(p: str, k_max: int, normalize: bool, self_loops: bool, scale: str = "", teleport: str = "") -> List[str]:
    lines = gcn_norm_lines(p, self_loops) if normalize else [f"{p}__edge(J, I) :- edge(J, I)."]
    for k in range(1, k_max + 1):
        lines.append(propagation_hop_line(p, k, "x" if k == 1 else f"{p}__h{k - 1}", normalize, scale))
        if teleport:
            lines.append(f"{p}__h{k}(I) :- {teleport}x(I).")
    return lines
