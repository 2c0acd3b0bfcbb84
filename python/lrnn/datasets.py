"""Graph datasets for lrnn models: the TU benchmarks read by the C++ loader, and
conversion from/to PyTorch Geometric `Data` objects.

    from lrnn.datasets import TUDataset, from_arrays, from_pyg, to_pyg
    mutag = TUDataset("../shared/datasets/tu", "MUTAG")   # 188 graphs, trainable with Model
    model.train(mutag); model.cross_validate(mutag, k=10)
    pyg_graphs = to_pyg(mutag)                            # torch_geometric Data objects
    back = from_pyg(pyg_graphs)                           # lrnn again (same facts)
    graph = from_arrays(x, edge_index, y, train_mask=m)   # ONE graph, a query per node

Every graph becomes one sample with the facts of `lrnn convert tu` (docs/datasets.md):
`node(i)`, `edge(i, j)` per directed edge, `x(i)` node features (TU: one-hot node labels),
`attr(i)` TU node attributes, `edge_x(i, j)` TU one-hot edge labels, `edge_attr(i, j)`
edge attributes (from_pyg: PyG's edge_attr rows), and the query `predict` with the class:
0/1 for two classes, a one-hot vector for more (classes: the sorted distinct labels).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, List, Optional, Sequence, Union

import numpy as np


def _core():
    from lrnn import _core

    return _core


class Graph:
    """One graph as arrays: `edge_index` [2, E] (int64), feature blocks [rows, width] or
    None, and `y` the class index."""

    __slots__ = ("num_nodes", "edge_index", "x", "attr", "edge_x", "edge_attr", "y")

    def __init__(self, num_nodes: int, edge_index: np.ndarray, x: Optional[np.ndarray], attr: Optional[np.ndarray],
                 edge_x: Optional[np.ndarray], edge_attr: Optional[np.ndarray], y: int):
        self.num_nodes, self.edge_index, self.x, self.attr = num_nodes, edge_index, x, attr
        self.edge_x, self.edge_attr, self.y = edge_x, edge_attr, y

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[1])

    def __repr__(self) -> str:
        return f"Graph({self.num_nodes} nodes, {self.num_edges} edges, class {self.y})"


class GraphDataset:
    """Graph-classification samples held by the engine (no text round trip), with each
    graph's arrays. Trainable with `Model` (train, test, cross_validate); indexing with a
    slice or a list of indices gives a subset."""

    def __init__(self, name: str, graphs: List[Graph], class_labels: Sequence[Any], samples: Any):
        self.name = name
        self.graphs = graphs
        self.class_labels = list(class_labels)
        self._samples = samples

    # The protocol Model.build_dataset / cross_validate read.
    def _lrnn_samples(self) -> Any:
        return self._samples

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, index: Union[int, slice, Sequence[int], np.ndarray]) -> Any:
        if isinstance(index, (int, np.integer)):
            return self.graphs[int(index)]
        indices = list(range(len(self)))[index] if isinstance(index, slice) else [int(i) for i in index]
        bad = [i for i in indices if not 0 <= i < len(self)]
        if bad:
            raise IndexError(f"sample index {bad[0]} out of range for a dataset of {len(self)} graphs")
        return GraphDataset(self.name, [self.graphs[i] for i in indices], self.class_labels,
                            self._samples.subset(indices))

    @property
    def y(self) -> np.ndarray:
        """The class index of every graph."""
        return np.array([g.y for g in self.graphs], dtype=np.int64)

    @property
    def num_classes(self) -> int:
        return len(self.class_labels)

    @property
    def num_nodes(self) -> int:
        return sum(g.num_nodes for g in self.graphs)

    @property
    def num_edges(self) -> int:
        """Directed edges (each undirected TU edge is listed in both directions)."""
        return sum(g.num_edges for g in self.graphs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}: {len(self)} graphs, {self.num_classes} classes)"


class TUDataset(GraphDataset):
    """A TU dataset (https://chrsmrrs.github.io/datasets/) read by lrnn's C++ loader:
    `TUDataset(root, name)` reads `root/name/name_A.txt`, ... (or PyG's layout
    `root/name/raw/name_A.txt`). Malformed files raise LrnnError naming file:line."""

    def __init__(self, root: Union[str, os.PathLike], name: str):
        folder = os.path.join(os.fspath(root), name)
        if not os.path.exists(os.path.join(folder, f"{name}_A.txt")) and os.path.isdir(os.path.join(folder, "raw")):
            folder = os.path.join(folder, "raw")
        data = _core().read_tu(folder, name)
        classes = data["graph_class"]
        graphs = [Graph(n, ei, x, attr, ex, ea, classes[k]) for k, (n, ei, x, attr, ex, ea) in enumerate(data["graphs"])]
        super().__init__(data["name"], graphs, data["class_labels"], data["samples"])
        self.root = os.fspath(root)

    @property
    def num_node_labels(self) -> int:
        return 0 if not self.graphs or self.graphs[0].x is None else self.graphs[0].x.shape[1]


# ---- One graph from arrays (node-level tasks) ------------------------------------------------
_SPLITS = ("train", "val", "test", "none")  # lrnn::QuerySplit's values


class NodeGraph:
    """ONE graph as one lrnn sample with a query per node (node classification, a knowledge
    base), built by the engine straight from arrays (`from_arrays`, `from_pyg(data)`,
    `load_npz`). Its facts are a TU graph's (`node(i)`, `x(i)` feature vectors, `edge(i, j)`
    per edge_index column) and its queries `predict(i)` in node order, with y's targets:
    class ids as TU labels (0/1 for two classes, one-hot for more), float y as given.
    Trainable with `Model` like any dataset (it is one sample)."""

    def __init__(self, info: dict, name: str):
        self.name = name
        self.num_nodes = int(info["nodes"])
        self.num_edges = int(info["edges"])
        self.num_features = int(info["feature_width"])
        self.num_classes = int(info["classes"])
        self.target_width = int(info["target_width"])
        split = info["split_of_node"]
        self._split = None if split is None else np.asarray(split, dtype=np.uint8)
        self._samples = info["samples"]

    def _lrnn_samples(self) -> Any:
        return self._samples

    def __len__(self) -> int:
        return 1

    @property
    def split(self) -> Optional[np.ndarray]:
        """Each node's query split from the masks ('train', 'val', 'test' or 'none': in no mask
        when train_mask was given; without it, every node outside val and test trains, as
        Model.build_dataset reads masks); None without masks. Training honours it: only the
        training queries give gradient, val and test are reported (docs/big_graphs.md)."""
        return None if self._split is None else np.array(_SPLITS, dtype=object)[self._split]

    def mask(self, split: str) -> Optional[np.ndarray]:
        """The boolean mask of the nodes in `split` ('train', 'val', 'test', 'none'); None without masks."""
        if split not in _SPLITS:
            raise ValueError(f"split {split!r}: expected one of {', '.join(_SPLITS)}")
        return None if self._split is None else self._split == _SPLITS.index(split)

    def __repr__(self) -> str:
        classes = f", {self.num_classes} classes" if self.num_classes else ""
        return f"NodeGraph({self.name}: {self.num_nodes} nodes, {self.num_edges} edges, {self.num_features} features{classes})"


def _numpy(value: Any, what: str) -> Optional[np.ndarray]:
    """A C-order numpy array of a dtype the engine reads (float32/64, int32/64, bool): other
    integer and float dtypes are widened exactly (int64, float64); torch tensors are copied
    to the CPU."""
    if value is None:
        return None
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    kind = array.dtype.kind
    if kind == "b":
        array = array.astype(np.bool_, copy=False)
    elif kind in "iu":
        if kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
            raise ValueError(f"{what} holds integers beyond int64")
        if array.dtype not in (np.int32, np.int64):
            array = array.astype(np.int64)
    elif kind == "f":
        if array.dtype not in (np.float32, np.float64):
            array = array.astype(np.float64)
    else:
        raise ValueError(f"{what} has dtype {array.dtype}: expected numbers (float, int) or bool")
    return np.ascontiguousarray(array)


def from_arrays(x: Any, edge_index: Any, y: Any = None, train_mask: Any = None, val_mask: Any = None,
                test_mask: Any = None, *, num_classes: Optional[int] = None, name: str = "graph",
                feature: str = "x", edge: str = "edge", node: str = "node", query: str = "predict",
                share: bool = False) -> NodeGraph:
    """One graph as one sample with a query per node, from arrays (numpy or torch):
    `x` node features [N, F], `edge_index` [2, E] (sources, then targets: PyG's layout),
    `y` per node class ids (int, [N]) or float targets ([N] or [N, T]), boolean masks [N].
    The engine checks every array (shapes, node ids, finite features, class ids >= 0, a node
    in one mask at most) and raises LrnnError naming the entry at fault.

    `share=True` in an MPI job of more than one rank (`lrnn.distributed`): this rank's share
    of the graph. The arrays are held (copied) and a model that trains or evaluates it over
    the ranks builds only this rank's part of the facts, never the whole graph's
    (docs/distributed.md "One sample over many ranks"); anything else that would read the
    facts (a subset, the network of a sample) raises LrnnError. Outside such a job the same
    as share=False."""
    arrays = {k: _numpy(v, k) for k, v in (("x", x), ("edge_index", edge_index), ("y", y),
                                           ("train_mask", train_mask), ("val_mask", val_mask),
                                           ("test_mask", test_mask))}
    if arrays["x"] is None or arrays["edge_index"] is None:
        raise ValueError("from_arrays needs x (node features) and edge_index (2 x E node ids)")
    if num_classes is not None and num_classes < 1:
        raise ValueError(f"num_classes={num_classes}: expected a positive number of classes")
    info = _core().graph_from_arrays(
        arrays["x"], arrays["edge_index"], arrays["y"], arrays["train_mask"], arrays["val_mask"],
        arrays["test_mask"], example=name, node=node, feature=feature, edge=edge, query=query,
        classes=num_classes or 0, source="from_arrays", share=share)
    return NodeGraph(info, name)


def load_npz(path: Union[str, os.PathLike], *, num_classes: Optional[int] = None, name: str = "graph",
             feature: str = "x", edge: str = "edge", node: str = "node", query: str = "predict",
             share: bool = False) -> NodeGraph:
    """The graph of an .npz file (`numpy.savez(path, x=..., edge_index=..., y=..., train_mask=...)`)
    read by the engine, as `lrnn train --dataset npz:FILE` reads it (docs/datasets.md).
    `share=True`: in an MPI job of more than one rank, this rank's share (see `from_arrays`),
    as `mpirun -np N lrnn train --dataset npz:FILE` reads it."""
    info = _core().load_npz_graph(os.fspath(path), example=name, node=node, feature=feature, edge=edge,
                                  query=query, classes=num_classes or 0, share=share)
    return NodeGraph(info, name)


# ---- PyTorch Geometric ---------------------------------------------------------------------
def _require_pyg() -> Any:
    try:
        import torch  # noqa: F401
        import torch_geometric.data
    except ImportError as e:
        raise ImportError(
            "lrnn.datasets.from_pyg/to_pyg need torch and torch_geometric (pip install torch torch_geometric); "
            f"importing them failed: {e}"
        ) from e
    return torch_geometric.data


def _rows(value: Any) -> Optional[np.ndarray]:
    if value is None:
        return None
    array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
    array = np.asarray(array, dtype=np.float64)
    return array.reshape(-1, 1) if array.ndim == 1 else array


def _vector(row: np.ndarray) -> str:
    return "[" + ", ".join(repr(float(v)) for v in row) + "]"


def _is_node_level(data: Any) -> bool:
    """A single PyG `Data` whose y (if any) has a row per node: a node-level task."""
    pyg = _require_pyg()
    if not isinstance(data, pyg.Data):
        return False
    y = getattr(data, "y", None)
    nodes = data.num_nodes
    return y is None or (nodes is not None and nodes > 1 and int(y.shape[0]) == int(nodes))


def from_pyg(data: Any, name: str = "pyg", *, num_classes: Optional[int] = None,
             share: bool = False) -> Union[NodeGraph, GraphDataset]:
    """PyG data as an lrnn dataset.

    One `Data` with a label per node (PyG's node classification: Planetoid's Cora, ...) is
    ONE graph with a query per node, built by `from_arrays(data.x, data.edge_index, data.y,
    data.train_mask, data.val_mask, data.test_mask, share=share)` (`share=True`: in an MPI
    job, this rank's share of the graph, see `from_arrays`).

    Graph-classification data (a list of `Data` or a PyG dataset, one label y per graph)
    is one sample per graph: `x` rows become `x(i)` vectors, `edge_attr` rows
    `edge_attr(i, j)` vectors, and each graph's label its `predict` target."""
    if _is_node_level(data):
        if getattr(data, "x", None) is None:
            raise ValueError("from_pyg: the Data has no x (node features); from_arrays needs them")
        return from_arrays(data.x, data.edge_index, getattr(data, "y", None), getattr(data, "train_mask", None),
                           getattr(data, "val_mask", None), getattr(data, "test_mask", None),
                           num_classes=num_classes, name=name, share=share)
    if share:
        raise ValueError("from_pyg(share=True) shares one graph with a label per node among MPI ranks; graph "
                         "classification data is split by graph (lrnn.distributed, docs/distributed.md)")
    _require_pyg()
    items = [data] if isinstance(data, _require_pyg().Data) else list(data)
    labels = []
    for k, d in enumerate(items):
        y = getattr(d, "y", None)
        if y is None or np.asarray(_rows(y)).size != 1:
            shape = None if y is None else tuple(np.shape(_rows(y)))
            raise ValueError(f"from_pyg converts graph classification data (one label y per graph); graph {k} has y "
                             f"{'missing' if y is None else f'of shape {shape}'}")
        label = float(_rows(y).ravel()[0])
        if label != int(label):
            raise ValueError(f"graph {k}: the label y = {label} is not a class (an integer)")
        labels.append(int(label))
    class_labels = sorted(set(labels))
    examples, queries, graphs = [], [], []
    for k, (d, label) in enumerate(zip(items, labels)):
        x = _rows(getattr(d, "x", None))
        edge_index = np.asarray(_rows(d.edge_index), dtype=np.int64).reshape(2, -1)
        edge_attr = _rows(getattr(d, "edge_attr", None))
        n = int(d.num_nodes) if getattr(d, "num_nodes", None) is not None else (0 if x is None else len(x))
        if n == 0:
            raise ValueError(f"graph {k} has no nodes (an lrnn example needs at least one fact)")
        if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= n):
            raise ValueError(f"graph {k}: edge_index refers to node {int(edge_index.max())} of a graph of {n} nodes")
        if edge_attr is not None and len(edge_attr) != edge_index.shape[1]:
            raise ValueError(f"graph {k}: {len(edge_attr)} edge_attr rows for {edge_index.shape[1]} edges")
        facts = [f"node({i})" for i in range(n)]
        if x is not None:
            facts += [f"{_vector(row)} x({i})" for i, row in enumerate(x)]
        for e, (i, j) in enumerate(edge_index.T.tolist()):
            facts.append(f"edge({i}, {j})")
            if edge_attr is not None:
                facts.append(f"{_vector(edge_attr[e])} edge_attr({i}, {j})")
        cls = class_labels.index(label)
        target = str(cls) if len(class_labels) <= 2 else _vector(np.eye(len(class_labels))[cls])
        examples.append(f"g{k + 1} :- " + ", ".join(facts) + ".")
        queries.append(f"g{k + 1} :- {target} predict.")
        graphs.append(Graph(n, edge_index, x, None, None, edge_attr, cls))
    samples = _core().SampleSet.from_text("\n".join(examples) + "\n", "\n".join(queries) + "\n")
    return GraphDataset(name, graphs, class_labels, samples)


def to_pyg(dataset: GraphDataset, *, use_node_attr: bool = False, use_edge_attr: bool = False,
           dtype: Any = None) -> List[Any]:
    """The graphs as torch_geometric `Data(x, edge_index, edge_attr, y)`, laid out as PyG's
    own TUDataset: x = node labels one-hot ([node attributes | labels] with use_node_attr),
    edge_attr = edge labels one-hot (edge_attr rows of from_pyg data; [edge attributes |
    labels] with use_edge_attr), y = [class index]. Features in `dtype` (default torch's)."""
    pyg = _require_pyg()
    import torch

    if not isinstance(dataset, GraphDataset):
        raise TypeError(f"to_pyg converts a TUDataset or a from_pyg dataset, got {type(dataset).__name__}")
    dtype = dtype if dtype is not None else torch.get_default_dtype()

    def cat(first: Optional[np.ndarray], second: Optional[np.ndarray]) -> Optional[Any]:
        blocks = [b for b in (first, second) if b is not None]
        return None if not blocks else torch.tensor(np.concatenate(blocks, axis=1), dtype=dtype)

    out = []
    for g in dataset.graphs:
        x = cat(g.attr if use_node_attr else None, g.x)
        edge_attr = cat(g.edge_attr if (use_edge_attr or g.edge_x is None) else None, g.edge_x)
        data = pyg.Data(x=x, edge_index=torch.tensor(g.edge_index, dtype=torch.long), y=torch.tensor([g.y]))
        if edge_attr is not None:
            data.edge_attr = edge_attr
        data.num_nodes = g.num_nodes
        out.append(data)
    return out


__all__ = ["Graph", "GraphDataset", "NodeGraph", "TUDataset", "from_arrays", "from_pyg", "load_npz", "to_pyg"]
