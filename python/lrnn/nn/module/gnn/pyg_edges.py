"""PyG-exact layers with typed or featured edges and gated messages: ResGatedGraphConv,
RGCNConv (edge_type), GINEConv (edge_attr). See pyg.py for how graphs become facts."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from lrnn.nn.module.gnn.pyg import PygGINConv, PygLayer, _bias_rule, _w


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
        t = np.asarray(edge_type).astype(np.int64).reshape(-1)
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
        a = np.asarray(edge_attr, dtype=np.float64)
        a = a.reshape(-1, 1) if a.ndim == 1 else a
        width = self.edge_dim if self.edge_dim is not None else self.in_channels
        if a.shape != (e.shape[1], width):
            raise ValueError(f"edge_attr must be [{e.shape[1]}, {width}], got shape {a.shape}")
        facts = [f"<[{', '.join(repr(float(v)) for v in row)}]> edge({int(j)}, {int(i)}, {k})"
                 for k, (j, i, row) in enumerate(zip(e[0], e[1], a))]
        return self._forward(x, facts)
