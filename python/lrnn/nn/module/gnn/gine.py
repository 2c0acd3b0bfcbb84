"""GINEConv: GIN with edge features: its PyNeuraLogic form (rules for a template) and its PyG form
(the layer PyG computes, on arrays or torch tensors), reached as `GINEConv.pyg(...)` /
`.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from lrnn.nn.module.gnn.gin import PygGINConv
from lrnn.nn.module.gnn._graph_module import _GraphModule
from lrnn.nn.module.gnn.pyg import _bias_rule, _w, plain_input
from lrnn.nn.module.module import number as _num, predicate


class GINEConv(_GraphModule):
    """GINE (edge features added to the neighbours' features before ReLU); output `nn_name`."""

    def __init__(self, in_channels: int, feature_name: str, edge_name: str, nn_name: str, eps: float = 0.0,
                 train_eps: bool = False, edge_dim: Optional[int] = None):
        self.in_channels, self.feature_name, self.edge_name, self.nn_name = in_channels, feature_name, edge_name, nn_name
        self.eps, self.train_eps, self.edge_dim = eps, train_eps, edge_dim

    def rules(self) -> List[str]:
        n, x, e = self.nn_name, predicate(self.feature_name), predicate(self.edge_name)
        rules = []
        if self.edge_dim is not None:
            rules.append(f"{{{self.in_channels}, {self.edge_dim}}} {n}__gine_edge_proj(I, J) :- {e}(I, J).")
            e = f"{n}__gine_edge_proj"
        x_eps = _num(self.eps + 1) if self.train_eps else f"<{_num(self.eps + 1)}>"
        return rules + [
            f"{n}__gine_feat_sum(I, J) :- {x}(J), {e}(J, I). [transformation=relu, combination=sum]",
            f"{n}__gine_feat_agg(I) :- {n}__gine_feat_sum(I, J). [aggregation=sum]",
            f"{n}__gine_out(I) :- {x_eps} {x}(I), {n}__gine_feat_agg(I). [combination=sum]",
            f"{n}(I) :- {n}__gine_out(I).",
        ]


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


GINEConv.pyg_form = PygGINEConv

__all__ = ['GINEConv', 'PygGINEConv']
