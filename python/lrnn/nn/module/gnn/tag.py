"""TAGConv: topology adaptive graph convolution (a weight per hop): its PyNeuraLogic form (rules
for a template) and its PyG form (the layer PyG computes, on arrays or torch tensors), reached
as `TAGConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List

from lrnn.nn.module.gnn._graph_module import _GraphModule, _edge_count, _hops
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w, propagation_hops
from lrnn.nn.module.module import function as _fn, predicate


class TAGConv(_GraphModule):
    """Topology adaptive graph convolution: one weight per hop 0..k (shared shape)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 k: int = 2, activation: Any = "identity", aggregation: Any = "sum", normalize: bool = True):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.k, self.activation, self.aggregation, self.normalize = k, activation, aggregation, normalize

    def rules(self) -> List[str]:
        h = self.output_name
        edge = predicate(self.edge_name)
        rules = _edge_count(h, edge) if self.normalize else []
        for i in range(self.k + 1):
            body = ", ".join([f"{predicate(self.feature_name)}(I{i})"] +
                             _hops(i, edge, f"{h}__edge_count" if self.normalize else None))
            rules.append(f"{{{self.out_channels}, {self.in_channels}}} {h}(I0) :- {body}. "
                         f"[combination=product, aggregation={_fn(self.aggregation)}]")
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


class PygTAGConv(PygLayer):
    """torch_geometric.nn.TAGConv: sum_{k=0..K} lins[k](A_norm^k x) + bias, A_norm from gcn_norm
    without self-loops (normalize=True) or the plain adjacency."""

    kind = "TAGConv"
    prefix = "tag"

    def __init__(self, in_channels: int, out_channels: int, K: int = 3, bias: bool = True, normalize: bool = True,
                 seed: int = 1):
        super().__init__(seed)
        self.in_channels, self.out_channels, self.K = in_channels, out_channels, K
        self.bias, self.normalize = bias, normalize

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, K=self.K, bias=self.bias,
                    normalize=self.normalize)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if any(lin.bias is not None for lin in layer.lins):
            raise ValueError("TAGConv with biases in lins is not PyG's layout (one shared bias)")
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels, K=layer.K,
                    bias=layer.bias is not None, normalize=bool(layer.normalize))

    def _param_map(self):
        m = {f"lins.{k}.weight": (f"tag__lin{k}", (self.out_channels, self.in_channels)) for k in range(self.K + 1)}
        if self.bias:
            m["bias"] = ("tag__bias", (self.out_channels,))
        return m

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["tag__one."] + propagation_hops("tag", self.K, self.normalize, False)
        lines.append(f"out(I) :- $tag__lin0={_w(o, i)} x(I).")
        lines += [f"out(I) :- $tag__lin{k}={_w(o, i)} tag__h{k}(I)." for k in range(1, self.K + 1)]
        if self.bias:
            lines.append(_bias_rule("out", "tag__bias", "tag", o))
        return lines


TAGConv.pyg_form = PygTAGConv

__all__ = ['TAGConv', 'PygTAGConv']
