"""PyG-exact GNN layers: the rules that compute exactly torch_geometric's layer, run by
the lrnn engine on NumPy arrays or, as torch modules, on torch tensors.

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


class PygGCNConv(PygLayer):
    """torch_geometric.nn.GCNConv: out_i = b + sum_{j -> i} w_ji / sqrt(d_i d_j) W x_j with
    d_i = 1 + sum of in-edge values (self-loops added as PyG's gcn_norm does: of value 2 when
    improved=True and edge_weight is given; PyG itself uses 1 when edge_weight is None)."""

    kind = "GCNConv"
    prefix = "gcn"

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False,
                 add_self_loops: Optional[bool] = None, normalize: bool = True, bias: bool = True, seed: int = 1):
        super().__init__(seed)
        self.in_channels, self.out_channels, self.improved = in_channels, out_channels, improved
        add_self_loops = normalize if add_self_loops is None else add_self_loops  # PyG's default
        self.add_self_loops, self.normalize, self.bias = add_self_loops, normalize, bias
        self.self_loops = normalize and add_self_loops
        self.loop_fill = 2.0 if improved else 1.0

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, improved=self.improved,
                    add_self_loops=self.add_self_loops, normalize=self.normalize, bias=self.bias)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels, improved=bool(layer.improved),
                    add_self_loops=bool(layer.add_self_loops), normalize=bool(layer.normalize),
                    bias=layer.bias is not None)

    def _param_map(self):
        m = {"lin.weight": ("gcn__weight", (self.out_channels, self.in_channels))}
        if self.bias:
            m["bias"] = ("gcn__bias", (self.out_channels,))
        return m

    def __call__(self, x: Any, edge_index: Any, edge_weight: Any = None) -> np.ndarray:
        """PyG's GCNConv(x, edge_index, edge_weight): weights scale messages and degrees."""
        x = self._check_x(x)
        return self._forward(x, self._edge_facts(x.shape[0], edge_index, edge_weight))

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["gcn__one."]
        if self.normalize:
            lines += gcn_norm_lines("gcn", False)
            if self.self_loops:  # one per node, of value 2 when improved (facts from __call__)
                lines.insert(1, "gcn__edge(I, I) :- self_loop(I).")
            lines.append(f"out(I) :- gcn__norm(I), gcn__edge(J, I), gcn__norm(J), $gcn__weight={_w(o, i)} x(J). "
                         "[combination=product, aggregation=sum]")
        else:
            lines.append(f"out(I) :- edge(J, I), $gcn__weight={_w(o, i)} x(J). [combination=product, aggregation=sum]")
        if self.bias:
            lines.append(_bias_rule("out", "gcn__bias", "gcn", o))
        else:  # a fixed zero keeps out(i) defined on isolated nodes, where PyG gives 0
            lines.append(f"out(I) :- <[{', '.join(['0.0'] * o)}]> gcn__one, *x(I).")
        return lines


class PygSAGEConv(PygLayer):
    """torch_geometric.nn.SAGEConv: lin_l(aggr_{j -> i} x_j) + lin_r(x_i), aggr mean/sum/max."""

    kind = "SAGEConv"
    prefix = "sage"
    _rel, _root = "lin_l", "lin_r"

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "mean", root_weight: bool = True,
                 bias: bool = True, seed: int = 1):
        super().__init__(seed)
        if aggr not in ("mean", "sum", "add", "max"):
            raise ValueError(f"aggr={aggr!r} is not written in lrnn's form (mean, sum/add, max)")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.aggr, self.root_weight, self.bias = aggr, root_weight, bias

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, aggr=self.aggr,
                    root_weight=self.root_weight, bias=self.bias)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        for flag in ("project", "normalize"):
            if getattr(layer, flag, False):
                raise ValueError(f"{cls.kind} {flag}=True is not written in lrnn's form yet")
        aggr = layer.aggr if isinstance(layer.aggr, str) else None
        if aggr is None:
            raise ValueError(f"{cls.kind} aggr={layer.aggr!r} is not one of mean, sum/add, max")
        rel = getattr(layer, cls._rel)
        in_channels = layer.in_channels[0] if isinstance(layer.in_channels, tuple) else layer.in_channels
        return dict(in_channels=in_channels, out_channels=layer.out_channels, aggr=aggr,
                    root_weight=bool(getattr(layer, "root_weight", True)), bias=rel.bias is not None)

    def _param_map(self):
        p, o, i = self.prefix, self.out_channels, self.in_channels
        m = {f"{self._rel}.weight": (f"{p}__{self._rel}", (o, i))}
        if self.bias:
            m[f"{self._rel}.bias"] = (f"{p}__{self._rel}_bias", (o,))
        if self.root_weight:
            m[f"{self._root}.weight"] = (f"{p}__{self._root}", (o, i))
        return m

    def _lines(self) -> List[str]:
        p, o, i = self.prefix, self.out_channels, self.in_channels
        lines = [f"{p}__one."]
        if self.aggr == "mean":
            lines += [
                f"{p}__deg(I) :- edge(J, I). [aggregation=sum]",
                f"{p}__inv(I) :- {p}__deg(I). [activation=inverse]",
                f"{p}__agg(I) :- {p}__inv(I), edge(J, I), x(J). [combination=product, aggregation=sum]",
            ]
        elif self.aggr in ("sum", "add"):
            lines.append(f"{p}__agg(I) :- edge(J, I), x(J). [combination=product, aggregation=sum]")
        else:  # max ignores parallel edges, as PyG's scatter-max does
            lines.append(f"{p}__agg(I) :- x(J), *edge(J, I). [aggregation=max]")
        lines.append(f"out(I) :- ${p}__{self._rel}={_w(o, i)} {p}__agg(I).")
        if self.root_weight:
            lines.append(f"out(I) :- ${p}__{self._root}={_w(o, i)} x(I).")
        if self.bias:
            lines.append(_bias_rule("out", f"{p}__{self._rel}_bias", p, o))
        else:
            lines.append(f"out(I) :- <[{', '.join(['0.0'] * o)}]> {p}__one, *x(I).")
        return lines


class GraphConv(PygSAGEConv):
    """torch_geometric.nn.GraphConv (Morris et al.): lin_rel(sum_{j -> i} e_ji x_j) + lin_root(x_i).
    PyNeuraLogic has no GraphConv; this is PyG's form (aggr add by default, also mean, max)."""

    kind = "GraphConv"
    prefix = "gconv"
    _rel, _root = "lin_rel", "lin_root"

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "add", bias: bool = True, seed: int = 1):
        super().__init__(in_channels, out_channels, aggr=aggr, root_weight=True, bias=bias, seed=seed)

    def config(self) -> Dict[str, Any]:
        c = super().config()
        del c["root_weight"]
        return c

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        c = super().config_of(layer)
        del c["root_weight"]
        return c

    def __call__(self, x: Any, edge_index: Any, edge_weight: Any = None) -> np.ndarray:
        """PyG's GraphConv(x, edge_index, edge_weight); weights only with aggr add (a weighted
        mean or max is not the edge-count form written here)."""
        x = self._check_x(x)
        if edge_weight is not None and self.aggr not in ("add", "sum"):
            raise ValueError(f"edge_weight with aggr={self.aggr!r} is not written in lrnn's GraphConv (aggr add)")
        return self._forward(x, self._edge_facts(x.shape[0], edge_index, edge_weight))


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


class PygGINConv(PygLayer):
    """torch_geometric.nn.GINConv: nn((1 + eps) x_i + sum_{j -> i} x_j), nn a torch Linear or a
    Sequential of Linear layers, ReLU/Tanh/Sigmoid/Identity activations and Dropout(p=0)
    (`layers` lists them as ("linear", in, out, bias, index) / ("act", name, index))."""

    kind = "GINConv"
    prefix = "gin"
    _not_compared = ("eps",)

    def __init__(self, layers: List[Tuple], eps: float = 0.0, train_eps: bool = False, seed: int = 1):
        super().__init__(seed)
        self.layers = [tuple(l) for l in layers]
        linears = [l for l in self.layers if l[0] == "linear"]
        if not linears:
            raise ValueError("GINConv's nn needs at least one Linear layer")
        self.in_channels, self.out_channels = linears[0][1], linears[-1][2]
        self.eps, self.train_eps = float(eps), train_eps

    def config(self) -> Dict[str, Any]:
        return dict(layers=self.layers, train_eps=self.train_eps)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        import torch

        modules = list(layer.nn) if isinstance(layer.nn, torch.nn.Sequential) else [layer.nn]
        eps = float(_torch_array(layer.eps).reshape(-1)[0])
        return dict(layers=mlp_layers(modules, f"{cls.kind} nn"), eps=eps, train_eps=bool(layer.eps.requires_grad))

    def _param_map(self):
        return dict({"eps": ("gin__eps1", (1,))}, **mlp_param_map(self.layers, "gin", "nn", self._sequential))

    _sequential = True  # nn is a torch Sequential (keys nn.K.weight) rather than one Linear (nn.weight)

    def load_torch(self, layer: Any):
        import torch

        self._sequential = isinstance(layer.nn, torch.nn.Sequential)
        super().load_torch(layer)
        # PyG keeps eps; the template holds 1 + eps
        self._model.set_parameter("gin__eps1", np.array([[1.0 + float(_torch_array(layer.eps).reshape(-1)[0])]]))
        return self

    _engine_offset = {"eps": 1.0}  # the template holds 1 + eps

    def frozen_keys(self) -> Tuple[str, ...]:
        return () if self.train_eps else ("eps",)

    def torch_grads(self) -> Dict[str, np.ndarray]:
        g = super().torch_grads()
        if not self.train_eps:
            del g["eps"]
        return g

    def _aggregate_lines(self) -> List[str]:
        return ["gin__agg(I) :- edge(J, I), x(J). [combination=product, aggregation=sum]"]

    def _lines(self) -> List[str]:
        return ["gin__one."] + self._aggregate_lines() + [
            f"gin__h(I) :- $gin__eps1={1.0 + self.eps!r} x(I).",
            "gin__h(I) :- gin__agg(I)."] + mlp_lines(self.layers, "gin", "gin__h", self.in_channels)


class PygGATv2Conv(PygLayer):
    """torch_geometric.nn.GATv2Conv (dropout 0, no edge features), per head h:
    alpha_ij = softmax_j(a_h . LeakyReLU(W_l x_j + b_l + W_r x_i + b_r)) over j -> i and i itself,
    out_i = concat_h (or mean_h) sum_j alpha_ij (W_l x_j + b_l), plus the bias.
    LeakyReLU(z) = s z + (1 - s) relu(z), exactly. PyNeuraLogic's GATv2Conv (pyneuralogic.py) is
    the one-head form without biases."""

    kind = "GATv2Conv"
    prefix = "gat"

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True,
                 negative_slope: float = 0.2, add_self_loops: bool = True, bias: bool = True,
                 share_weights: bool = False, seed: int = 1):
        super().__init__(seed)
        self.in_channels, self.out_channels, self.heads, self.concat = in_channels, out_channels, heads, concat
        self.negative_slope, self.add_self_loops, self.bias = float(negative_slope), add_self_loops, bias
        self.share_weights = share_weights
        self.self_loops = add_self_loops

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, heads=self.heads,
                    concat=self.concat, negative_slope=self.negative_slope, add_self_loops=self.add_self_loops,
                    bias=self.bias, share_weights=self.share_weights)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if layer.edge_dim is not None:
            raise ValueError("GATv2Conv edge_dim is set: edge features are not written in lrnn's form yet")
        if layer.dropout != 0:
            raise ValueError(f"GATv2Conv dropout={layer.dropout}: lrnn's form is deterministic (dropout 0)")
        if getattr(layer, "res", None) is not None:
            raise ValueError("GATv2Conv residual=True is not written in lrnn's form yet")
        lin_bias = layer.lin_l.bias is not None
        if lin_bias != (layer.bias is not None):
            raise ValueError("GATv2Conv with bias on only some of lin_l/lin_r/output is not supported")
        in_channels = layer.in_channels[0] if isinstance(layer.in_channels, tuple) else layer.in_channels
        return dict(in_channels=in_channels, out_channels=layer.out_channels, heads=layer.heads,
                    concat=bool(layer.concat), negative_slope=float(layer.negative_slope),
                    add_self_loops=bool(layer.add_self_loops), bias=layer.bias is not None,
                    share_weights=bool(layer.share_weights))

    def _param_map(self):
        o, i, H = self.out_channels, self.in_channels, self.heads
        heads = range(H)
        m: Dict[str, Tuple] = {
            "att": ([f"gat__att{h}" for h in heads], (H, 1, o), False, (1, H, o)),
            "lin_l.weight": ([f"gat__lin_l{h}" for h in heads], (H, o, i), False, (H * o, i)),
        }
        if not self.share_weights:
            m["lin_r.weight"] = ([f"gat__lin_r{h}" for h in heads], (H, o, i), False, (H * o, i))
        if self.bias:
            m["lin_l.bias"] = ([f"gat__lin_l_bias{h}" for h in heads], (H, o), False, (H * o,))
            if not self.share_weights:
                m["lin_r.bias"] = ([f"gat__lin_r_bias{h}" for h in heads], (H, o), False, (H * o,))
            m["bias"] = ("gat__bias", (H * o if self.concat else o,))
        return m

    def _head_lines(self, h: int) -> List[str]:
        o, i, s = self.out_channels, self.in_channels, self.negative_slope
        r = "l" if self.share_weights else "r"
        lines = [f"gat__xl{h}(J) :- $gat__lin_l{h}={_w(o, i)} x(J).",
                 f"gat__xr{h}(I) :- $gat__lin_{r}{h}={_w(o, i)} x(I)."]
        if self.bias:
            lines += [_bias_rule(f"gat__xl{h}", f"gat__lin_l_bias{h}", "gat", o, "J"),
                      _bias_rule(f"gat__xr{h}", f"gat__lin_{r}_bias{h}", "gat", o)]
        return lines + [
            f"gat__z{h}(I, J) :- gat__xl{h}(J), gat__xr{h}(I), *gat__edge(J, I). [combination=sum]",
            f"gat__zr{h}(I, J) :- gat__z{h}(I, J). [activation=relu]",
            f"gat__lrelu{h}(I, J) :- <{s!r}> gat__z{h}(I, J).",
            f"gat__lrelu{h}(I, J) :- <{1.0 - s!r}> gat__zr{h}(I, J).",
            f"gat__att{h}(I, J) :- $gat__att{h}={_w(1, o)} gat__lrelu{h}(I, J), gat__logm(J, I). "
            "[combination=sum, aggregation=softmax(J)]",
            f"gat__out{h}(I) :- gat__att{h}(I, J), gat__xl{h}(J). [combination=product, aggregation=sum]",
        ]

    def _lines(self) -> List[str]:
        o, H = self.out_channels, self.heads
        lines = ["gat__one."]
        if self.self_loops:
            lines.append("<1.0> gat__edge(I, I).")
        lines += ["gat__edge(J, I) :- edge(J, I).",
                  "gat__logm(J, I) :- gat__edge(J, I). [activation=log]"]  # parallel edges: log(count)
        for h in range(H):
            lines += self._head_lines(h)
        heads = ", ".join(f"gat__out{h}(I)" for h in range(H))
        if self.concat:
            lines.append(f"out(I) :- {heads}. [combination=concat]" if H > 1 else "out(I) :- gat__out0(I).")
        else:
            lines += [f"out(I) :- <{1.0 / H!r}> gat__out{h}(I)." for h in range(H)]
        if self.bias:
            lines.append(_bias_rule("out", "gat__bias", "gat", H * o if self.concat else o))
        return lines
