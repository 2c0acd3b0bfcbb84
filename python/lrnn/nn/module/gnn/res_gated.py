"""ResGatedGraphConv: gated messages: its PyNeuraLogic form (rules for a template) and its PyG
form (the layer PyG computes, on arrays or torch tensors), reached as
`ResGatedGraphConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from lrnn.nn.module.gnn._graph_module import _GraphModule
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _linear, _w
from lrnn.nn.module.module import function as _fn, predicate


class ResGatedGraphConv(_GraphModule):
    """Residual gated graph convolution: `W x_i + sum_j gate(i, j) * W x_j`."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 gating_activation: Any = "sigmoid", activation: Any = "identity", aggregation: Any = "sum"):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.gating_activation, self.activation, self.aggregation = gating_activation, activation, aggregation

    def rules(self) -> List[str]:
        h, x, w = self.output_name, predicate(self.feature_name), f"{{{self.out_channels}, {self.in_channels}}}"
        return [
            f"{h}__gate(I, J) :- {w} {x}(I), {w} {x}(J).",
            f"{h}__gate/2 [transformation={_fn(self.gating_activation)}]",
            f"{h}(I) :- {w} {x}(I).",
            f"{h}(I) :- {h}__gate(I, J), {w} {x}(J), {predicate(self.edge_name)}(J, I). "
            f"[combination=elproduct, aggregation={_fn(self.aggregation)}]",
            f"{h}/1 [transformation={_fn(self.activation)}]",
        ]


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


ResGatedGraphConv.pyg_form = PygResGatedGraphConv

__all__ = ['ResGatedGraphConv', 'PygResGatedGraphConv']
