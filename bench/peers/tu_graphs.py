"""Reads a TU graph dataset folder (DS_A.txt, DS_graph_indicator.txt, DS_graph_labels.txt,
DS_node_labels.txt) into plain numpy arrays, the way lrnn's `--dataset tu:DIR` reads it:
one-hot node labels of width max - min + 1, node ids 0-based within each graph, the edges
exactly as listed (both directions), classes the sorted distinct graph labels."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np


@dataclass
class Graph:
    x: np.ndarray       # nodes x labels, one-hot (float64)
    edges: np.ndarray   # 2 x edges, (source, target) 0-based within the graph
    label: int          # class index


def read_tu(folder: str) -> list[Graph]:
    name = os.path.basename(os.path.normpath(folder))

    def path(suffix: str) -> str:
        return os.path.join(folder, f"{name}_{suffix}.txt")

    graph_of_node = np.loadtxt(path("graph_indicator"), dtype=np.int64, ndmin=1) - 1
    labels = np.loadtxt(path("graph_labels"), dtype=np.int64, ndmin=1)
    node_labels = np.loadtxt(path("node_labels"), dtype=np.int64, ndmin=1)
    edges = np.loadtxt(path("A"), dtype=np.int64, delimiter=",", ndmin=2) - 1
    classes = sorted(set(labels.tolist()))
    width = int(node_labels.max() - node_labels.min() + 1)
    onehot = np.zeros((len(node_labels), width))
    onehot[np.arange(len(node_labels)), node_labels - node_labels.min()] = 1.0
    first = np.searchsorted(graph_of_node, np.arange(len(labels)))
    last = np.searchsorted(graph_of_node, np.arange(len(labels)), side="right")
    edge_graph = graph_of_node[edges[:, 0]]
    graphs = []
    for g in range(len(labels)):
        mine = edges[edge_graph == g] - first[g]
        graphs.append(Graph(onehot[first[g]:last[g]], mine.T.copy(), classes.index(int(labels[g]))))
    return graphs
