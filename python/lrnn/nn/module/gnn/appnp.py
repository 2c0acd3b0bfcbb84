"""APPNP: personalised-PageRank propagation: its PyNeuraLogic form (rules for a template) and its
PyG form (the layer PyG computes, on arrays or torch tensors), reached as `APPNPConv.pyg(...)`
/ `.from_torch(...)`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from lrnn.nn.module.gnn._graph_module import _GraphModule, _normalised_edges
from lrnn.nn.module.gnn.pyg import PygLayer, propagation_hops
from lrnn.nn.module.module import function as _fn, number as _num, predicate


class APPNPConv(_GraphModule):
    """APPNP: k steps of personalised-PageRank propagation with teleport alpha (no weights)."""

    def __init__(self, output_name: str, feature_name: str, edge_name: str, k: int, alpha: float,
                 activation: Any = "identity", aggregation: Any = "sum", add_self_loops: Optional[bool] = None,
                 normalize: bool = True):
        self.output_name, self.feature_name, self.edge_name = output_name, feature_name, edge_name
        self.k, self.alpha, self.activation, self.aggregation = k, alpha, activation, aggregation
        self.normalize = normalize
        self.add_self_loops = normalize if add_self_loops is None else add_self_loops

    def rules(self) -> List[str]:
        h, x, edge = self.output_name, predicate(self.feature_name), predicate(self.edge_name)
        rules, edge = _normalised_edges(h, edge, self.add_self_loops, self.normalize)
        meta = f"[combination=product, aggregation={_fn(self.aggregation)}]"
        norm = f", sqrt({h}__edge_count(J, I))" if self.normalize else ""
        teleport, keep = _num(self.alpha), _num(1 - self.alpha)
        previous = x
        for k in range(1, self.k + 1):
            head = h if k == self.k else f"{h}__{k}"
            rules.append(f"{head}(I) :- <{teleport}> {x}(I). {meta}")
            rules.append(f"{head}(I) :- <{keep}> {previous}(J), {edge}(J, I){norm}. {meta}")
            previous = head
        return rules + [f"{h}/1 [transformation={_fn(self.activation)}]"]


class PygAPPNP(PygLayer):
    """torch_geometric.nn.APPNP: h_0 = x, h_k = (1 - alpha) A_norm h_{k-1} + alpha x, out = h_K
    (dropout 0). No weights: torch_grads() is empty, backward() gives dL/dx."""

    kind = "APPNP"
    prefix = "appnp"

    def __init__(self, K: int, alpha: float, add_self_loops: bool = True, normalize: bool = True, seed: int = 1):
        super().__init__(seed)
        if K < 1:
            raise ValueError(f"K={K}: APPNP needs K >= 1")
        self.in_channels: Optional[int] = None  # any feature width
        self.K, self.alpha, self.add_self_loops, self.normalize = K, float(alpha), add_self_loops, normalize
        self.self_loops = normalize and add_self_loops

    def config(self) -> Dict[str, Any]:
        return dict(K=self.K, alpha=self.alpha, add_self_loops=self.add_self_loops, normalize=self.normalize)

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        if layer.dropout != 0:
            raise ValueError(f"APPNP dropout={layer.dropout}: lrnn's form is deterministic (dropout 0)")
        return dict(K=layer.K, alpha=float(layer.alpha), add_self_loops=bool(layer.add_self_loops),
                    normalize=bool(layer.normalize))

    def _param_map(self):
        return {}

    def _lines(self) -> List[str]:
        p, a = "appnp", self.alpha
        lines = propagation_hops(p, self.K, self.normalize, self.self_loops, scale=f"<{1.0 - a!r}> ", teleport=f"<{a!r}> ")
        return lines + [f"out(I) :- {p}__h{self.K}(I)."]


APPNPConv.pyg_form = PygAPPNP

__all__ = ['APPNPConv', 'PygAPPNP']
