"""PyG-exact layers with typed or featured edges and gated messages: ResGatedGraphConv,
RGCNConv (edge_type), GINEConv (edge_attr), GENConv. See pyg.py for how graphs become facts."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from lrnn.nn.module.gnn.pyg import (
    PygGINConv, PygLayer, _bias_rule, _torch_array, _w, mlp_layers, mlp_param_map, mlp_lines, plain_input,
)


def _linear(head: str, var: str, name: str, o: int, i: int, bias: bool, p: str) -> List[str]:
    lines = [f"{head}({var}) :- ${name}={_w(o, i)} x({var})."]
    return lines + ([_bias_rule(head, f"{name}_bias", p, o, var)] if bias else [])


class PygResGatedGraphConv(PygLayer):
    """torch_geometric.nn.ResGatedGraphConv: sum_{j -> i} sigmoid(k_i + q_j) * v_j
    + lin_skip(x_i) + bias, with k, q, v linear maps of x (with biases)."""

    kind = "ResGatedGraphConv"
    prefix = "rg"

    def __init__(self, in_channels: int, out_channels: int, root_weight: bool = True, bias: bool = True,
                 seed: int = 1):
        super().__init__(seed)
        self.in_channels, self.out_channels, self.root_weight, self.bias = in_channels, out_channels, root_weight, bias

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, root_weight=self.root_weight,
                    bias=self.bias)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if type(layer.act).__name__ != "Sigmoid":
            raise ValueError(f"ResGatedGraphConv act={type(layer.act).__name__}: lrnn's form takes Sigmoid")
        if layer.edge_dim is not None if hasattr(layer, "edge_dim") else False:
            raise ValueError("ResGatedGraphConv edge_dim is set: edge features are not written in lrnn's form yet")
        if layer.lin_key.bias is None:
            raise ValueError("ResGatedGraphConv bias=False is not written in lrnn's form yet")
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels,
                    root_weight=bool(layer.root_weight), bias=layer.bias is not None)

    def _param_map(self):
        o, i = self.out_channels, self.in_channels
        m: Dict[str, Tuple] = {}
        for lin in ("key", "query", "value"):
            m[f"lin_{lin}.weight"] = (f"rg__{lin}", (o, i))
            m[f"lin_{lin}.bias"] = (f"rg__{lin}_bias", (o,))
        if self.root_weight:
            m["lin_skip.weight"] = ("rg__skip", (o, i))
        if self.bias:
            m["bias"] = ("rg__bias", (o,))
        return m

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["rg__one."]
        lines += _linear("rg__k", "I", "rg__key", o, i, True, "rg")
        lines += _linear("rg__q", "J", "rg__query", o, i, True, "rg")
        lines += _linear("rg__v", "J", "rg__value", o, i, True, "rg")
        lines += [
            "rg__gate(I, J) :- rg__k(I), rg__q(J), *edge(J, I). [combination=sum, activation=sigmoid]",
            "rg__msg(I, J) :- rg__gate(I, J), rg__v(J). [combination=elproduct]",
            "out(I) :- edge(J, I), rg__msg(I, J). [combination=product, aggregation=sum]",
        ]
        if self.root_weight:
            lines.append(f"out(I) :- $rg__skip={_w(o, i)} x(I).")
        lines.append(_bias_rule("out", "rg__bias", "rg", o) if self.bias else
                     f"out(I) :- <[{', '.join(['0.0'] * o)}]> rg__one, *x(I).")
        return lines


class PygRGCNConv(PygLayer):
    """torch_geometric.nn.RGCNConv (no bases/blocks): x_i root + bias + sum_r aggr_{j -r-> i} x_j W_r,
    aggr mean (per relation, counting parallel edges) or add. Call with edge_type."""

    kind = "RGCNConv"
    prefix = "rgcn"

    def __init__(self, in_channels: int, out_channels: int, num_relations: int, aggr: str = "mean",
                 root_weight: bool = True, bias: bool = True, seed: int = 1):
        super().__init__(seed)
        if aggr not in ("mean", "add", "sum"):
            raise ValueError(f"aggr={aggr!r} is not written in lrnn's RGCNConv (mean, add)")
        self.in_channels, self.out_channels, self.num_relations = in_channels, out_channels, num_relations
        self.aggr, self.root_weight, self.bias = aggr, root_weight, bias

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, num_relations=self.num_relations,
                    aggr=self.aggr, root_weight=self.root_weight, bias=self.bias)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if layer.num_bases is not None or layer.num_blocks is not None:
            raise ValueError("RGCNConv with num_bases/num_blocks is not written in lrnn's form yet")
        if not isinstance(layer.in_channels, int):
            raise ValueError("RGCNConv over node indices (in_channels as a tuple/0) is not supported")
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels,
                    num_relations=layer.num_relations, aggr=layer.aggr, root_weight=layer.root is not None,
                    bias=layer.bias is not None)

    def _param_map(self):
        o, i, r = self.out_channels, self.in_channels, self.num_relations
        m: Dict[str, Tuple] = {"weight": ([f"rgcn__w{k}" for k in range(r)], (r, i, o), True)}
        if self.root_weight:
            m["root"] = ("rgcn__root", (i, o), True)
        if self.bias:
            m["bias"] = ("rgcn__bias", (o,))
        return m

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["rgcn__one."]
        for r in range(self.num_relations):
            if self.aggr == "mean":
                lines += [f"rgcn__deg{r}(I) :- edge(J, {r}, I). [aggregation=sum]",
                          f"rgcn__inv{r}(I) :- rgcn__deg{r}(I). [activation=inverse]",
                          f"rgcn__agg{r}(I) :- rgcn__inv{r}(I), edge(J, {r}, I), x(J). "
                          "[combination=product, aggregation=sum]"]
            else:
                lines.append(f"rgcn__agg{r}(I) :- edge(J, {r}, I), x(J). [combination=product, aggregation=sum]")
            lines.append(f"out(I) :- $rgcn__w{r}={_w(o, i)} rgcn__agg{r}(I).")
        if self.root_weight:
            lines.append(f"out(I) :- $rgcn__root={_w(o, i)} x(I).")
        lines.append(_bias_rule("out", "rgcn__bias", "rgcn", o) if self.bias else
                     f"out(I) :- <[{', '.join(['0.0'] * o)}]> rgcn__one, *x(I).")
        return lines

    def __call__(self, x: Any, edge_index: Any, edge_type: Any) -> np.ndarray:  # type: ignore[override]
        x = self._check_x(x)
        e = self._check_edges(x.shape[0], edge_index)
        t = np.asarray(plain_input(edge_type, "edge_type")).astype(np.int64).reshape(-1)
        if t.shape[0] != e.shape[1]:
            raise ValueError(f"edge_type has {t.shape[0]} entries for {e.shape[1]} edges")
        if t.size and (t.min() < 0 or t.max() >= self.num_relations):
            raise ValueError(f"edge_type holds {int(t.min() if t.min() < 0 else t.max())}, "
                             f"outside 0..{self.num_relations - 1}")
        triples = np.stack([e[0], t, e[1]], axis=1)
        keys, counts = np.unique(triples, axis=0, return_counts=True) if t.size else (np.zeros((0, 3), int), [])
        facts = [f"<{float(c)}> edge({int(j)}, {int(r)}, {int(i)})" for (j, r, i), c in zip(keys, counts)]
        return self._forward(x, facts)


class PygGINEConv(PygGINConv):
    """torch_geometric.nn.GINEConv: nn((1 + eps) x_i + sum_{j -> i} relu(x_j + lin(e_ji))), each
    edge its own fact `<[e]> edge(j, i, k)` (k its index), so parallel edges keep their features.
    lin (with bias) only when edge_dim is set. Call with edge_attr [E, edge_dim]."""

    kind = "GINEConv"
    prefix = "gine"

    def __init__(self, layers: List[Tuple], eps: float = 0.0, train_eps: bool = False, edge_dim=None, seed: int = 1):
        super().__init__(layers, eps, train_eps, seed)
        self.edge_dim = edge_dim

    def config(self) -> Dict[str, Any]:
        return dict(super().config(), edge_dim=self.edge_dim)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        c = super().config_of(layer)
        c["edge_dim"] = None if layer.lin is None else getattr(layer.lin, "in_features", getattr(layer.lin, "in_channels", None))
        return c

    def _param_map(self):
        m = super()._param_map()
        if self.edge_dim is not None:
            m["lin.weight"] = ("gin__edge_lin", (self.in_channels, self.edge_dim))
            m["lin.bias"] = ("gin__edge_lin_bias", (self.in_channels,))
        return m

    def _aggregate_lines(self) -> List[str]:
        lines = []
        edge = "edge"
        if self.edge_dim is not None:
            edge = "gin__edge"
            lines += [f"gin__edge(J, I, K) :- $gin__edge_lin={_w(self.in_channels, self.edge_dim)} edge(J, I, K).",
                      _bias_rule("gin__edge", "gin__edge_lin_bias", "gin", self.in_channels, "J, I, K",
                                 "edge(J, I, K)")]
        return lines + [
            f"gin__msg(I, J, K) :- x(J), {edge}(J, I, K). [combination=sum, activation=relu]",
            "gin__agg(I) :- gin__msg(I, J, K). [aggregation=sum]",
        ]

    def __call__(self, x: Any, edge_index: Any, edge_attr: Any) -> np.ndarray:  # type: ignore[override]
        x = self._check_x(x)
        e = self._check_edges(x.shape[0], edge_index)
        a = np.asarray(plain_input(edge_attr, "edge_attr"), dtype=np.float64)
        a = a.reshape(-1, 1) if a.ndim == 1 else a
        width = self.edge_dim if self.edge_dim is not None else self.in_channels
        if a.shape != (e.shape[1], width):
            raise ValueError(f"edge_attr must be [{e.shape[1]}, {width}], got shape {a.shape}")
        facts = [f"<[{', '.join(repr(float(v)) for v in row)}]> edge({int(j)}, {int(i)}, {k})"
                 for k, (j, i, row) in enumerate(zip(e[0], e[1], a))]
        return self._forward(x, facts)


class PygGENConv(PygLayer):
    """torch_geometric.nn.GENConv without edge features, message norm or MLP norms
    (norm=None): out_i = mlp(sum_{j -> i} softmax_j(t m_ji) * m_ji + x'_i), m_ji = relu(x'_j) + eps
    element-wise, x' = lin_src/lin_dst(x) when in != out; aggr "softmax" (t, learn_t) or "add".
    Parallel edges enter the softmax through log(multiplicity), as in pyg.py's GATv2."""

    kind = "GENConv"
    prefix = "gen"

    def __init__(self, in_channels: int, out_channels: int, layers: List[Tuple], aggr: str = "softmax",
                 t: float = 1.0, learn_t: bool = False, eps: float = 1e-7, bias: bool = False, seed: int = 1):
        super().__init__(seed)
        if aggr not in ("softmax", "add", "sum"):
            raise ValueError(f"aggr={aggr!r} is not written in lrnn's GENConv (softmax, add)")
        self.in_channels, self.out_channels, self.layers = in_channels, out_channels, [tuple(l) for l in layers]
        self.aggr, self.t, self.learn_t, self.eps, self.bias = aggr, float(t), learn_t, float(eps), bias

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, layers=self.layers,
                    aggr=self.aggr, learn_t=self.learn_t, eps=self.eps, bias=self.bias)

    _not_compared = ("t",)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        for attr, what in (("msg_norm", "msg_norm=True"), ("lin_edge", "edge_dim"), ("lin_aggr_out", "this aggr")):
            if hasattr(layer, attr):
                raise ValueError(f"GENConv with {what} is not written in lrnn's form yet")
        aggr = layer.aggr if isinstance(layer.aggr, str) else None
        if aggr not in ("softmax", "add", "sum"):
            raise ValueError(f"GENConv aggr={layer.aggr!r}: lrnn's form takes softmax or add")
        t, learn_t = 1.0, False
        if aggr == "softmax":
            module = layer.aggr_module
            if getattr(module, "channels", 1) != 1:
                raise ValueError("GENConv with per-channel softmax temperatures is not supported")
            learn_t = bool(module.learn)
            t = float(_torch_array(module.t).reshape(-1)[0]) if learn_t else float(module.t)
        bias = (layer.lin_src.bias is not None) if hasattr(layer, "lin_src") else \
            any(l[0] == "linear" and l[3] for l in mlp_layers(list(layer.mlp), "GENConv mlp"))
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels,
                    layers=mlp_layers(list(layer.mlp), "GENConv mlp"), aggr=aggr, t=t, learn_t=learn_t,
                    eps=float(layer.eps), bias=bias)

    def _param_map(self):
        o, i = self.out_channels, self.in_channels
        m: Dict[str, Tuple] = {}
        if i != o:
            for side in ("src", "dst"):
                m[f"lin_{side}.weight"] = (f"gen__{side}", (o, i))
                if self.bias:
                    m[f"lin_{side}.bias"] = (f"gen__{side}_bias", (o,))
        if self.learn_t:
            m["aggr_module.t"] = ("gen__t", (1,))
        return dict(m, **mlp_param_map(self.layers, "gen", "mlp"))

    def load_torch(self, layer: Any):
        super().load_torch(layer)
        if self.aggr == "softmax":  # t is a plain number in PyG unless learn_t
            self._model.set_parameter("gen__t", np.array([[type(self).config_of(layer)["t"]]]))
        return self

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["gen__one."]
        src, dst = "x", "x"
        if i != o:
            src, dst = "gen__xs", "gen__xd"
            lines += _linear("gen__xs", "J", "gen__src", o, i, self.bias, "gen")
            lines += _linear("gen__xd", "I", "gen__dst", o, i, self.bias, "gen")
        lines += [
            f"gen__relu(I, J) :- {src}(J), *edge(J, I). [activation=relu]",
            f"gen__msg(I, J) :- gen__relu(I, J), <{self.eps!r}> gen__one. [combination=sum]",
        ]
        if self.aggr == "softmax":
            lines += [
                "gen__logm(J, I) :- edge(J, I). [activation=log]",
                f"gen__alpha(I, J) :- $gen__t={self.t!r} gen__msg(I, J), gen__logm(J, I). "
                "[combination=sum, aggregation=softmax(J)]",
                "gen__agg(I) :- gen__alpha(I, J), gen__msg(I, J). [combination=elproduct, aggregation=sum]",
            ]
        else:
            lines.append("gen__agg(I) :- edge(J, I), gen__msg(I, J). [combination=product, aggregation=sum]")
        lines += ["gen__h(I) :- gen__agg(I).", f"gen__h(I) :- {dst}(I)."]
        return lines + mlp_lines(self.layers, "gen", "gen__h", o)
