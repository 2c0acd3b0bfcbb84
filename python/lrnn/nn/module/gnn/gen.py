"""GENConv (DeeperGCN): its PyNeuraLogic form (rules for a template) and its PyG form (the layer
PyG computes, on arrays or torch tensors), reached as `GENConv.pyg(...)` / `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from lrnn.nn.module.gnn._graph_module import _GraphModule, _mlp
from lrnn.nn.module.gnn.pyg import PygLayer, _linear, _torch_array, mlp_layers, mlp_lines, mlp_param_map
from lrnn.nn.module.module import function as _fn, number as _num, predicate


def _softmax_aggregation(h: str) -> List[str]:
    """DeeperGCN's SoftMax aggregation of the messages `m_ij` (`h__gen_feat_sum(I, J)` plus
    eps), channel by channel: exp(m - max_j m) as weights (the shift leaves the softmax as it is
    and keeps exp from overflowing), their weighted sum times the inverse of their sum."""
    m, top, w = f"{h}__gen_message", f"{h}__gen_softmax_max", f"{h}__gen_softmax_weight"
    return [
        f"{m}(I, J) :- {h}__gen_feat_sum(I, J), {h}__eps. [combination=sum]",
        f"{top}(I) :- {m}(I, J). [aggregation=max]",
        f"{w}(I, J) :- {m}(I, J), <-1.0> {top}(I). [combination=sum, transformation=exp]",
        f"{h}__gen_softmax_sum(I) :- {w}(I, J), {m}(I, J). [combination=elproduct, aggregation=sum]",
        f"{h}__gen_softmax_norm(I) :- {w}(I, J). [aggregation=sum]",
        f"{h}__gen_softmax_norm/1 [transformation=inverse]",
        f"{h}__gen_feat_agg(I) :- {h}__gen_softmax_sum(I), {h}__gen_softmax_norm(I). [combination=elproduct]",
    ]


class GENConv(_GraphModule):
    """GENConv (DeeperGCN): aggregated ReLU messages `m_ij = relu(x_j + e_ji) + eps` plus the
    node, then an MLP; with PyNeuraLogic's rules except for the default `softmax` aggregation.

    PyNeuraLogic 0.9.2 writes `aggregation=softmax` on the message rule: a plain softmax over
    the neighbours' vectors, which its own backend refuses (a ClassCastException) and which is
    not DeeperGCN's SoftMax aggregation. Here `softmax` is that aggregation (PyG's
    `aggr="softmax"`, t = 1): per channel, `sum_j exp(m_ij) m_ij / sum_j exp(m_ij)`, written as
    rules (docs/peers.md, Modules). Other aggregations are PyNeuraLogic's rules unchanged.
    lrnn's max aggregation is element-wise, which the softmax's shift relies on."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, feature_name: str, edge_name: str,
                 aggregation: Any = "softmax", num_layers: int = 2, expansion: int = 2, eps: float = 1e-7,
                 train_eps: bool = False, edge_dim: Optional[int] = None):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.aggregation, self.num_layers, self.expansion = aggregation, num_layers, expansion
        self.eps, self.train_eps, self.edge_dim = eps, train_eps, edge_dim

    def rules(self) -> List[str]:
        h, x, e = self.output_name, predicate(self.feature_name), predicate(self.edge_name)
        eps = f"{_num(self.eps)} {h}__eps." if self.train_eps else f"<{_num(self.eps)}> {h}__eps."
        rules = [eps]
        if self.edge_dim is not None and self.out_channels != self.edge_dim:
            rules.append(f"{{{self.out_channels}, {self.edge_dim}}} {h}__gen_edge_proj(I, J) :- {e}(I, J).")
            e = f"{h}__gen_edge_proj"
        w = f"{{{self.out_channels}, {self.in_channels}}} " if self.in_channels != self.out_channels else ""
        channels = [self.out_channels] + [self.out_channels * self.expansion] * (self.num_layers - 1) + \
            [self.out_channels]
        aggregation = _fn(self.aggregation, "aggregation")
        if aggregation == "softmax":
            aggregate = _softmax_aggregation(h)
        else:
            aggregate = [f"{h}__gen_feat_agg(I) :- {h}__gen_feat_sum(I, J), {h}__eps. "
                         f"[combination=sum, aggregation={aggregation}]"]
        return rules + [
            f"{h}__gen_feat_sum(I, J) :- {w}{x}(J), {e}(J, I). [transformation=relu, combination=sum]",
            *aggregate,
            f"{h}__gen_out(I) :- {w}{x}(I), {h}__gen_feat_agg(I). [combination=sum]",
            *_mlp(channels, h, f"{h}__gen_out"),
        ]


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


GENConv.pyg_form = PygGENConv

__all__ = ['GENConv', 'PygGENConv']
