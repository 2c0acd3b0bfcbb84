"""GraphConv (Morris et al.): PyG's form only (PyNeuraLogic has no module of that name),
PygSAGEConv's layout with a sum over the neighbours."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from lrnn.nn.module.gnn.sage import PygSAGEConv


class GraphConv(PygSAGEConv):
    """torch_geometric.nn.GraphConv (Morris et al.): lin_rel(sum_{j -> i} e_ji x_j) + lin_root(x_i).
    PyNeuraLogic has no GraphConv; this is PyG's form (aggr add by default, also mean, max)."""

    kind = "GraphConv"
    prefix = "gconv"
    _rel, _root = "lin_rel", "lin_root"

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "add", bias: bool = True, seed: int = 1):
        super().__init__(in_channels, out_channels, aggr=aggr, root_weight=True, bias=bias, seed=seed)

    def config(self) -> Dict[str, Any]:
        c = super().config()
        del c["root_weight"]
        return c

    @classmethod
    def config_of(cls, layer: Any) -> Dict[str, Any]:
        c = super().config_of(layer)
        del c["root_weight"]
        return c

    def __call__(self, x: Any, edge_index: Any, edge_weight: Any = None) -> np.ndarray:
        """PyG's GraphConv(x, edge_index, edge_weight); weights only with aggr add (a weighted
        mean or max is not the edge-count form written here)."""
        x = self._check_x(x)
        if edge_weight is not None and self.aggr not in ("add", "sum"):
            raise ValueError(f"edge_weight with aggr={self.aggr!r} is not written in lrnn's GraphConv (aggr add)")
        return self._forward(x, self._edge_facts(x.shape[0], edge_index, edge_weight))

__all__ = ['GraphConv']
