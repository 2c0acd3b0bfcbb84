"""SGConv: simplified graph convolution (K hops, one weight): its PyNeuraLogic form (rules for a
template) and its PyG form (the layer PyG computes, on arrays or torch tensors), reached as
`SGConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from lrnn.nn.module.gnn._graph_module import _GraphModule, _hops, _normalised_edges
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w, propagation_hops
from lrnn.nn.module.module import function as _fn, predicate


class SGConv(_GraphModule):
    """Simple graph convolution: k normalised propagation steps, one weight."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 k: int = 1, activation: Any = "identity", aggregation: Any = "sum",
                 add_self_loops: Optional[bool] = None, normalize: bool = True):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.k, self.activation, self.aggregation, self.normalize = k, activation, aggregation, normalize
        self.add_self_loops = normalize if add_self_loops is None else add_self_loops

    def rules(self) -> List[str]:
        h, edge = self.output_name, predicate(self.edge_name)
        rules, edge = _normalised_edges(h, edge, self.add_self_loops, self.normalize)
        body = ", ".join([f"{predicate(self.feature_name)}(I{self.k})"] +
                         _hops(self.k, edge, f"{h}__edge_count" if self.normalize else None))
        rules.append(f"{{{self.out_channels}, {self.in_channels}}} {h}(I0) :- {body}. "
                     f"[combination=product, aggregation={_fn(self.aggregation)}, duplicate_grounding=True]")
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


class PygSGConv(PygLayer):
    """torch_geometric.nn.SGConv: lin((D^-1/2 (A + I) D^-1/2)^K x)."""

    kind = "SGConv"
    prefix = "sg"

    def __init__(self, in_channels: int, out_channels: int, K: int = 1, add_self_loops: bool = True,
                 bias: bool = True, seed: int = 1):
        super().__init__(seed)
        if K < 1:
            raise ValueError(f"K={K}: SGConv needs K >= 1")
        self.in_channels, self.out_channels, self.K = in_channels, out_channels, K
        self.add_self_loops, self.bias = add_self_loops, bias
        self.self_loops = add_self_loops

    def config(self) -> Dict[str, Any]:
        return dict(in_channels=self.in_channels, out_channels=self.out_channels, K=self.K,
                    add_self_loops=self.add_self_loops, bias=self.bias)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        return dict(in_channels=layer.in_channels, out_channels=layer.out_channels, K=layer.K,
                    add_self_loops=bool(layer.add_self_loops), bias=layer.lin.bias is not None)

    def _param_map(self):
        m = {"lin.weight": ("sg__lin", (self.out_channels, self.in_channels))}
        if self.bias:
            m["lin.bias"] = ("sg__lin_bias", (self.out_channels,))
        return m

    def _lines(self) -> List[str]:
        o, i = self.out_channels, self.in_channels
        lines = ["sg__one."] + propagation_hops("sg", self.K, True, self.self_loops)
        lines.append(f"out(I) :- $sg__lin={_w(o, i)} sg__h{self.K}(I).")
        bias = _bias_rule("out", "sg__lin_bias", "sg", o) if self.bias else \
            f"out(I) :- <[{', '.join(['0.0'] * o)}]> sg__one, *x(I)."
        return lines + [bias]


SGConv.pyg_form = PygSGConv

__all__ = ['SGConv', 'PygSGConv']
