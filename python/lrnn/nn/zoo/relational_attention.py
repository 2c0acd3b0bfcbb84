"""Relational attention over graph edges (Diao & Loynd 2022, node update): the zoo module
`relational_attention` (src/zoo/relational_attention.cpp). This file and that one are the whole
module (docs/architecture.md "How to add a zoo module in C++")."""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from lrnn.nn.zoo._base import ZooModule, _as_2d


class RelationalAttention(ZooModule):
    """Relational attention over graph edges (Diao & Loynd 2022, node update): queries,
    keys and values from node and edge embeddings. Call with nodes [n, d], an edge list
    [(i, j), ...] (j sends to i) and edge features [len(edges), edge_dim]."""

    zoo_name = "relational_attention"

    def __init__(self, node_dim: int, edge_dim: int, num_heads: int = 1, prefix: str = "rel", seed: int = 1,
                 dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.node_dim, self.edge_dim, self.num_heads, self.prefix = node_dim, edge_dim, num_heads, prefix
        self._model_for(self._default_mask)

    def __call__(self, nodes, edges: Sequence[Tuple[int, int]], edge_features) -> np.ndarray:
        nodes = _as_2d(nodes, "nodes")
        feats = _as_2d(edge_features, "edge_features")
        if len(edges) != feats.shape[0]:
            raise ValueError(f"{len(edges)} edges but {feats.shape[0]} rows of edge features")
        facts = []
        for (i, j), row in zip(edges, feats):
            values = ", ".join(repr(float(v)) for v in row)
            facts.append(f"<[{values}]> edge({int(i)}, {int(j)})")
        _, model = self._model_for(self._default_mask)
        self._last = (model, [nodes.shape])
        return np.asarray(model.forward([("node", nodes)], nodes.shape[0], facts))


__all__ = ["RelationalAttention"]
