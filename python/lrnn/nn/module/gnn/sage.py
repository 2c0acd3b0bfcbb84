"""SAGEConv: GraphSAGE's mean aggregation: its PyNeuraLogic form (rules for a template) and its
PyG form (the layer PyG computes, on arrays or torch tensors), reached as `SAGEConv.pyg(...)` /
`.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List

from lrnn.nn.module.gnn._graph_module import _GraphModule
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w
from lrnn.nn.module.module import function as _fn, hidden, predicate


class SAGEConv(_GraphModule):
    """GraphSAGE: `W1 agg_j x_j + W2 x_i` (one weight shape, head weights).
    `SAGEConv.pyg(...)` / `.from_torch(...)`: PyG's SAGEConv (lin_l with bias, lin_r)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 activation: Any = "identity", aggregation: Any = "avg"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.activation, self.aggregation = activation, aggregation

    def rules(self) -> List[str]:
        h, x, w, agg = self.output_name, predicate(self.feature_name), f"{{{self.out_channels}, {self.in_channels}}}", \
            _fn(self.aggregation)
        return [
            f"{w} {h}(I) :- {x}(J), {hidden(self.edge_name)}(J, I). [aggregation={agg}]",
            f"{w} {h}(I) :- {x}(I). [aggregation={agg}]",
            f"{h}/1 [transformation={_fn(self.activation)}]",
        ]


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


SAGEConv.pyg_form = PygSAGEConv

__all__ = ['SAGEConv', 'PygSAGEConv']
