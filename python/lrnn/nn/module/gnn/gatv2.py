"""GATv2Conv: dynamic graph attention: its PyNeuraLogic form (rules for a template) and its PyG
form (the layer PyG computes, on arrays or torch tensors), reached as `GATv2Conv.pyg(...)` /
`.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from lrnn.nn.module.gnn._graph_module import _GraphModule, _self_loops
from lrnn.nn.module.gnn.pyg import PygLayer, _bias_rule, _w
from lrnn.nn.module.module import function as _fn, hidden, number as _num, predicate


class GATv2Conv(_GraphModule):
    """GATv2 with one head as PyNeuraLogic 0.9.2 writes it (softmax over J per target I,
    LeakyReLU slope written as `leakyrelu(slope)`). `GATv2Conv.from_torch(...)` gives PyG's
    exact layer (biases of both projections, output bias, self-loops, multi-edges)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 share_weights: bool = False, activation: Any = "identity", add_self_loops: bool = True,
                 negative_slope: float = 0.2):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.share_weights, self.activation = share_weights, activation
        self.add_self_loops, self.negative_slope = add_self_loops, negative_slope

    def rules(self) -> List[str]:
        h, x = self.output_name, predicate(self.feature_name)
        w = f"{{{self.out_channels}, {self.in_channels}}}"
        right = f"${h}__right={w}"
        left = right if self.share_weights else f"${h}__left={w}"
        rules = []
        edge = self.edge_name
        if self.add_self_loops:
            rules += _self_loops(h, predicate(edge))
            edge = f"{h}__edge"
        edge = hidden(edge)
        return rules + [
            f"{h}__score(I, J) :- {left} {x}(I), {right} {x}(J), {edge}(J, I). "
            f"[transformation=leakyrelu({_num(self.negative_slope)}), combination=sum]",
            f"{h}__attention(I, J) :- ${h}__att={{1, {self.out_channels}}} {h}__score(I, J). "
            f"[transformation=identity, aggregation=softmax(agg_terms=[J])]",
            f"{h}(I) :- {h}__attention(I, J), {right} {x}(J), {edge}(J, I). [combination=product, aggregation=sum]",
            f"{h}/1 [transformation={_fn(self.activation)}]",
        ]


class PygGATv2Conv(PygLayer):
    """torch_geometric.nn.GATv2Conv (dropout 0, no edge features), per head h:
    alpha_ij = softmax_j(a_h . LeakyReLU(W_l x_j + b_l + W_r x_i + b_r)) over j -> i and i itself,
    out_i = concat_h (or mean_h) sum_j alpha_ij (W_l x_j + b_l), plus the bias.
    LeakyReLU(z) = s z + (1 - s) relu(z), exactly. PyNeuraLogic's GATv2Conv (above) is
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


GATv2Conv.pyg_form = PygGATv2Conv

__all__ = ['GATv2Conv', 'PygGATv2Conv']
