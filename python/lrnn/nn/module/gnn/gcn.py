"""GCNConv: graph convolution (Kipf & Welling): its PyNeuraLogic form (rules for a template) and
its PyG form (the layer PyG computes, on arrays or torch tensors), reached as
`GCNConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from lrnn.nn.module.gnn._graph_module import _GraphModule, _normalised_edges
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w, gcn_norm_lines
from lrnn.nn.module.module import function as _fn, predicate


class GCNConv(_GraphModule):
    """Graph convolution (Kipf & Welling) as PyNeuraLogic writes it: degrees are sums of
    edge values, `1/sqrt(d_i d_j)` scales each message. `GCNConv.pyg(...)` /
    `GCNConv.from_torch(torch_geometric.nn.GCNConv)` give PyG's exact layer (bias included)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 activation: Any = "identity", aggregation: Any = "sum", add_self_loops: Optional[bool] = None,
                 normalize: bool = True):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.activation, self.aggregation = activation, aggregation
        self.normalize = normalize
        self.add_self_loops = normalize if add_self_loops is None else add_self_loops

    def rules(self) -> List[str]:
        h, x = self.output_name, predicate(self.feature_name)
        edge = predicate(self.edge_name)
        rules, edge = _normalised_edges(h, edge, self.add_self_loops, self.normalize)
        body = f"{x}(J), {edge}(J, I)"
        if self.normalize:
            body += f", sqrt({h}__edge_count(J, I))"
        rules.append(f"{{{self.out_channels}, {self.in_channels}}} {h}(I) :- {body}. "
                     f"[combination=product, aggregation={_fn(self.aggregation)}]")
        rules.append(f"{h}/1 [transformation={_fn(self.activation)}]")
        return rules


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


GCNConv.pyg_form = PygGCNConv

__all__ = ['GCNConv', 'PygGCNConv']
