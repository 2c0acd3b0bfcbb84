"""One graph from arrays: lrnn.datasets.from_arrays trains to exactly the weights of the same
graph written as text; numpy and torch inputs give the same sample; from_pyg of a node-level
PyG Data; the .npz reader (lrnn.datasets.load_npz and `lrnn train --dataset npz:FILE`) on
files numpy writes, with every refusal naming the file and the array."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lrnn
from lrnn import FileDataset, Settings
from lrnn.datasets import NodeGraph, from_arrays, from_pyg, load_npz

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))
needs_cli = pytest.mark.skipif(not CLI.exists(), reason="the lrnn CLI is not built")

TEMPLATE = """\
h(X) :- {4,3} x(X).
h(X) :- {4,3} x(Y), *edge(X, Y). [aggregation=sum]
h/1 [activation=relu]
{3,4} predict(X) :- h(X).
"""


def small_graph(seed=0, nodes=7, edges=15):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(nodes, 3))
    edge_index = rng.integers(0, nodes, size=(2, edges))
    y = rng.integers(0, 3, size=nodes)
    y[:3] = [0, 1, 2]  # every class present: three classes, one-hot targets
    return x, edge_index, y


def as_text(x, edge_index, y):
    """The examples and queries files a user would write for the graph."""
    facts = []
    for i, row in enumerate(x):
        facts += [f"node({i})", "[" + ", ".join(repr(float(v)) for v in row) + f"] x({i})"]
    facts += [f"edge({int(i)}, {int(j)})" for i, j in edge_index.T]
    examples = "graph :- " + ", ".join(facts) + ".\n"
    queries = "".join("graph :- [" + ", ".join("1" if c == label else "0" for c in range(3)) + f"] predict({i}).\n"
                      for i, label in enumerate(y))
    return examples, queries


def model(tmp_path, epochs=4):
    template = tmp_path / "gcn.lrnn"
    template.write_text(TEMPLATE)
    return lrnn.Model(template_file=str(template)).build(
        Settings(epochs=epochs, batch_size=0, error_function=lrnn.CrossEntropy()))


def weights(m):
    return {k: np.asarray(v) for k, v in m.state_dict()["weights"].items()}


def test_from_arrays_trains_to_the_text_forms_weights_exactly(tmp_path):
    x, edge_index, y = small_graph()
    graph = from_arrays(x, edge_index, y)
    assert isinstance(graph, NodeGraph) and len(graph) == 1
    assert (graph.num_nodes, graph.num_edges, graph.num_features, graph.num_classes) == (7, 15, 3, 3)
    examples, queries = as_text(x, edge_index, y)
    (tmp_path / "examples.txt").write_text(examples)
    (tmp_path / "queries.txt").write_text(queries)
    text = FileDataset(examples_file=str(tmp_path / "examples.txt"), queries_file=str(tmp_path / "queries.txt"))

    on_arrays, on_text = model(tmp_path), model(tmp_path)
    before = np.asarray(on_arrays(graph))
    assert before.shape[0] == 7
    np.testing.assert_array_equal(before, np.asarray(on_text(text)))
    on_arrays.train(graph, progress=False)
    on_text.train(text, progress=False)
    a, b = weights(on_arrays), weights(on_text)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    after = np.asarray(on_arrays(graph))
    assert not np.array_equal(after, before)
    np.testing.assert_array_equal(after, np.asarray(on_text(text)))


def test_dtypes_and_torch_tensors_give_the_same_outputs(tmp_path):
    x, edge_index, y = small_graph(1)
    reference = np.asarray(model(tmp_path, 0)(from_arrays(x, edge_index, y)))
    same = [from_arrays(x.tolist(), edge_index.astype(np.int32), y.astype(np.uint8)),
            from_arrays(x, edge_index.tolist(), y.astype(np.int16))]
    torch = pytest.importorskip("torch")
    same.append(from_arrays(torch.tensor(x), torch.tensor(edge_index), torch.tensor(y)))
    for graph in same:
        np.testing.assert_array_equal(np.asarray(model(tmp_path, 0)(graph)), reference)


def test_masks_become_each_nodes_split():
    x, edge_index, y = small_graph()
    train = np.zeros(7, dtype=bool)
    train[:4] = True
    test = np.zeros(7, dtype=bool)
    test[5:] = True
    graph = from_arrays(x, edge_index, y, train_mask=train, test_mask=test)
    assert list(graph.split) == ["train"] * 4 + ["none"] + ["test"] * 2
    np.testing.assert_array_equal(graph.mask("train"), train)
    assert from_arrays(x, edge_index, y).split is None
    # without train_mask, every node outside val and test trains (as build_dataset reads masks)
    assert list(from_arrays(x, edge_index, y, test_mask=test).split) == ["train"] * 5 + ["test"] * 2


def test_masked_graph_trains_on_its_train_nodes_only(tmp_path):
    """The masks are the query split the engine trains with: the same weights as the graph
    given with no masks and only its train nodes' queries (as text)."""
    x, edge_index, y = small_graph(5)
    train = np.array([1, 1, 0, 1, 0, 1, 1], dtype=bool)
    masked = from_arrays(x, edge_index, y, train_mask=train, test_mask=~train)
    examples, queries = as_text(x, edge_index, y)
    (tmp_path / "examples.txt").write_text(examples)
    (tmp_path / "queries.txt").write_text("".join(q for q, t in zip(queries.splitlines(True), train) if t))
    text = FileDataset(examples_file=str(tmp_path / "examples.txt"), queries_file=str(tmp_path / "queries.txt"))
    on_masked, on_text = model(tmp_path), model(tmp_path)
    on_masked.train(masked, progress=False)
    on_text.train(text, progress=False)
    a, b = weights(on_masked), weights(on_text)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-12, err_msg=name)
    assert any(not np.array_equal(a[n], weights(model(tmp_path))[n]) for n in a)  # it trained


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(edge_index=np.array([[0, 1], [2, 7]])), r"from_arrays: edge_index\[1, 1\] = 7 is not a node id"),
    (lambda a: a["x"].__setitem__((2, 1), np.nan), r"x\[2, 1\] \(node 2\) is nan"),
    (lambda a: a["y"].__setitem__(4, -1), r"y\[4\] = -1 is a negative class id"),
    (lambda a: a.update(x=a["x"][:, :, None]), r"x has shape \(7, 3, 1\)"),
    (lambda a: a.update(train_mask=np.ones(7, bool), test_mask=np.eye(7, dtype=bool)[3]),
     "node 3 is in both train_mask and test_mask"),
])
def test_bad_arrays_are_refused_by_name(change, message):
    x, edge_index, y = small_graph()
    arrays = dict(x=x, edge_index=edge_index, y=y)
    change(arrays)
    with pytest.raises(lrnn.LrnnError, match=message):
        from_arrays(**arrays)


def test_from_pyg_of_a_node_level_data(tmp_path):
    pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    import torch
    from torch_geometric.data import Data

    x, edge_index, y = small_graph(2)
    train = torch.zeros(7, dtype=torch.bool)
    train[:5] = True
    data = Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.tensor(edge_index), y=torch.tensor(y),
                train_mask=train, val_mask=~train)
    graph = from_pyg(data)
    assert isinstance(graph, NodeGraph)
    assert (graph.num_nodes, graph.num_edges, graph.num_classes) == (7, 15, 3)
    assert list(graph.split) == ["train"] * 5 + ["val"] * 2
    direct = from_arrays(x.astype(np.float32), edge_index, y)
    m = model(tmp_path, 0)
    np.testing.assert_array_equal(np.asarray(m(graph)), np.asarray(m(direct)))


# ---- .npz -----------------------------------------------------------------------------------
def write_npz(path, compressed=False, **arrays):
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_reads_what_numpy_writes(tmp_path, compressed):
    x, edge_index, y = small_graph(3)
    train = np.arange(7) < 4
    path = write_npz(tmp_path / "g.npz", compressed, x=x.astype(np.float32), edge_index=edge_index, y=y,
                     train_mask=train, test_mask=~train)
    graph = load_npz(path)
    assert (graph.num_nodes, graph.num_edges, graph.num_features, graph.num_classes) == (7, 15, 3, 3)
    assert list(graph.split) == ["train"] * 4 + ["test"] * 3
    m = model(tmp_path, 0)
    np.testing.assert_array_equal(np.asarray(m(graph)), np.asarray(m(from_arrays(x.astype(np.float32), edge_index, y))))


@pytest.mark.parametrize("arrays, message", [
    (dict(x=np.asfortranarray(np.ones((7, 3))), edge_index=np.zeros((2, 1), np.int64)),
     "array 'x' is in Fortran order"),
    (dict(x=np.ones((7, 3), np.float16), edge_index=np.zeros((2, 1), np.int64)), "array 'x' has dtype '<f2'"),
    (dict(x=np.ones((7, 3)), edge_index=np.zeros((2, 1), np.uint32)), "array 'edge_index' has dtype '<u4'"),
    (dict(x=np.ones((7, 3)), edge_index=np.zeros((2, 1), np.int64), trian_mask=np.ones(7, bool)),
     "array 'trian_mask' is not a graph array"),
    (dict(x=np.ones((7, 3))), "no array 'edge_index'"),
    (dict(x=np.ones((7, 3)), edge_index=np.array([[0], [9]])), r"edge_index\[1, 0\] = 9 is not a node id"),
    (dict(x=np.ones((7, 3)), edge_index=np.zeros((3, 1), np.int64)), r"edge_index has shape \(3, 1\)"),
])
def test_npz_refusals_name_the_file_and_array(tmp_path, arrays, message):
    path = write_npz(tmp_path / "bad.npz", **arrays)
    with pytest.raises(lrnn.LrnnError, match=f"bad.npz: .*{message}"):
        load_npz(path)


def test_npz_that_is_no_zip_is_refused(tmp_path):
    path = tmp_path / "text.npz"
    path.write_text("x, y\n")
    with pytest.raises(lrnn.LrnnError, match="text.npz: not an .npz file"):
        load_npz(path)
    with pytest.raises(lrnn.LrnnError, match="missing.npz: cannot read the file"):
        load_npz(tmp_path / "missing.npz")


@needs_cli
def test_cli_trains_from_npz_as_from_the_text(tmp_path):
    x, edge_index, y = small_graph(4)
    write_npz(tmp_path / "g.npz", x=x, edge_index=edge_index, y=y)
    examples, queries = as_text(x, edge_index, y)
    (tmp_path / "examples.txt").write_text(examples)
    (tmp_path / "queries.txt").write_text(queries)
    (tmp_path / "gcn.lrnn").write_text(TEMPLATE)
    common = [str(CLI), "train", str(tmp_path / "gcn.lrnn"), "--epochs", "5", "--loss", "crossentropy", "--json"]
    npz = subprocess.run(common + ["--dataset", f"npz:{tmp_path / 'g.npz'}"], capture_output=True, text=True)
    assert npz.returncode == 0, npz.stderr
    text = subprocess.run(common + ["--examples", str(tmp_path / "examples.txt"), "--queries",
                                    str(tmp_path / "queries.txt")], capture_output=True, text=True, check=True)
    a, b = json.loads(npz.stdout), json.loads(text.stdout)
    assert a["count"] == 7 and a["samples"] == 1
    assert (a["loss"], a["accuracy"], a["outputs"]) == (b["loss"], b["accuracy"], b["outputs"])
    losses = [[epoch["train"]["loss"] for epoch in run["history"]] for run in (a, b)]
    assert len(losses[0]) == 5 and losses[0] == losses[1]
    # The masks are the query split: train on the train nodes, report val and test.
    train, val = np.arange(7) < 4, np.arange(7) == 4
    write_npz(tmp_path / "split.npz", x=x, edge_index=edge_index, y=y, train_mask=train, val_mask=val,
              test_mask=~(train | val))
    split = subprocess.run(common + ["--dataset", f"npz:{tmp_path / 'split.npz'}"], capture_output=True, text=True)
    assert split.returncode == 0, split.stderr
    parts = json.loads(split.stdout)["splits"]
    assert (parts["train"]["count"], parts["val"]["count"], parts["test"]["count"]) == (4, 1, 2)
    bad = subprocess.run(common + ["--dataset", f"npz:{write_npz(tmp_path / 'bad.npz', x=x)}"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "bad.npz: no array 'edge_index'" in bad.stderr


def test_a_share_outside_an_mpi_job_is_the_whole_graph(tmp_path):
    """share=True makes a rank's share only in an MPI job of more than one rank
    (tests/python/test_distributed_partition.py runs one); alone it is the whole graph,
    which a model grounds as the graph without share."""
    x, edge_index, y = small_graph(4)
    m = model(tmp_path, 0)
    whole = np.asarray(m(from_arrays(x, edge_index, y)))
    np.testing.assert_array_equal(np.asarray(m(from_arrays(x, edge_index, y, share=True))), whole)
    path = write_npz(tmp_path / "g.npz", x=x, edge_index=edge_index, y=y)
    np.testing.assert_array_equal(np.asarray(m(load_npz(path, share=True))), whole)


def test_from_pyg_shares_only_a_node_level_graph():
    pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    import torch
    from torch_geometric.data import Data

    graphs = [Data(x=torch.ones(3, 2), edge_index=torch.tensor([[0, 1], [1, 2]]), y=torch.tensor([k % 2]))
              for k in range(2)]
    with pytest.raises(ValueError, match="split by graph"):
        from_pyg(graphs, share=True)
