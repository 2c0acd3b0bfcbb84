"""RGCNConv: relational graph convolution over typed edges: its PyNeuraLogic form (rules for a
template) and its PyG form (the layer PyG computes, on arrays or torch tensors), reached as
`RGCNConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from lrnn.nn.module.gnn._graph_module import _GraphModule
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w, plain_input
from lrnn.nn.module.module import function as _fn, hidden, predicate


class RGCNConv(_GraphModule):
    """Relational GCN: one weight per relation (edge_name(J, relation, I), or one predicate
    per relation when edge_name is None) plus a root weight."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str,
                 edge_name: Optional[str], relations: List[str], activation: Any = "identity",
                 aggregation: Any = "avg"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.relations, self.activation, self.aggregation = list(relations), activation, aggregation

    def rules(self) -> List[str]:
        h, x, w, agg = self.output_name, predicate(self.feature_name), f"{{{self.out_channels}, {self.in_channels}}}", \
            _fn(self.aggregation)
        rules = [f"{h}(I) :- {w} {x}(I). [aggregation={agg}]"]
        for r in self.relations:
            edge = f"{hidden(self.edge_name)}(J, {r}, I)" if self.edge_name is not None else f"{predicate(r)}(J, I)"
            rules.append(f"{h}(I) :- {w} {x}(J), {edge}. [aggregation={agg}]")
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


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


RGCNConv.pyg_form = PygRGCNConv

__all__ = ['RGCNConv', 'PygRGCNConv']
