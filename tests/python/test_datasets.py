"""lrnn.datasets: TUDataset counts on the real TU files (checked against the files
themselves), training and cross-validation on it (to the CLI's exact numbers), and the
PyG conversions (to_pyg equals PyG's own TUDataset; from_pyg(to_pyg(d)) trains to the same
outputs; a from_pyg/to_pyg round trip keeps every array)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lrnn
from lrnn import Dataset, R, Settings
from lrnn.datasets import GraphDataset, TUDataset, from_pyg, to_pyg

ROOT = Path(__file__).resolve().parents[2]
TU = ROOT.parent / "shared" / "datasets" / "tu"
GCN = ROOT / "examples" / "graphs" / "gcn_mutag.lrnn"
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))
needs_cli = pytest.mark.skipif(not CLI.exists(), reason="the lrnn CLI is not built")


def column(name, suffix):
    return np.loadtxt(TU / name / f"{name}_{suffix}.txt", delimiter=",", dtype=np.int64)


@pytest.fixture(scope="module")
def mutag():
    return TUDataset(TU, "MUTAG")


def gcn_model(epochs=2):
    return lrnn.Model(template_file=str(GCN)).build(Settings(epochs=epochs))


def test_mutag_counts_match_the_files(mutag):
    labels = column("MUTAG", "graph_labels")
    indicator = column("MUTAG", "graph_indicator")
    edges = column("MUTAG", "A")
    assert (len(mutag), mutag.num_nodes, mutag.num_edges) == (188, 3371, 7442)
    assert (len(labels), len(indicator), len(edges)) == (188, 3371, 7442)
    assert mutag.class_labels == [-1, 1] and mutag.num_classes == 2
    assert (int((mutag.y == 1).sum()), int((mutag.y == 0).sum())) == (125, 63)
    np.testing.assert_array_equal(mutag.y, (labels == 1).astype(np.int64))
    # Graph 1's nodes and edges, 0-based within the graph, as the files say.
    n1 = int((indicator == 1).sum())
    g = mutag[0]
    assert g.num_nodes == n1 == 17
    in_graph_1 = edges[(edges[:, 0] <= n1)] - 1
    np.testing.assert_array_equal(g.edge_index.T, in_graph_1)
    node_labels = column("MUTAG", "node_labels")[:n1]
    np.testing.assert_array_equal(g.x.argmax(axis=1), node_labels)
    assert g.x.shape == (17, 7) and g.x.sum() == 17
    assert g.edge_x.shape == (38, 4) and g.attr is None and g.edge_attr is None
    np.testing.assert_array_equal(g.edge_x.argmax(axis=1), column("MUTAG", "edge_labels")[: len(in_graph_1)])


def test_nci1_counts_match_the_files():
    nci1 = TUDataset(TU, "NCI1")
    labels = column("NCI1", "graph_labels")
    assert len(nci1) == len(labels) == 4110
    assert nci1.num_nodes == len(column("NCI1", "graph_indicator"))
    assert nci1.num_edges == len(column("NCI1", "A"))
    assert nci1.class_labels == [0, 1]
    assert (int((nci1.y == 0).sum()), int((nci1.y == 1).sum())) == (2053, 2057)
    assert nci1.num_node_labels == 37


def test_missing_dataset_names_the_file(tmp_path):
    with pytest.raises(lrnn.LrnnError, match="NONE_graph_indicator.txt"):
        TUDataset(tmp_path, "NONE")


def test_pyg_raw_layout_is_read(tmp_path, mutag):
    raw = tmp_path / "MUTAG" / "raw"
    raw.mkdir(parents=True)
    for f in (TU / "MUTAG").glob("MUTAG_*.txt"):
        shutil.copy(f, raw)
    again = TUDataset(tmp_path, "MUTAG")
    assert (len(again), again.num_edges) == (188, 7442)


def test_trains_and_subsets(mutag):
    model = gcn_model(epochs=3)
    history = model.train(mutag, progress=False)
    assert len(history.epochs) == 3 and np.isfinite(history.train_losses[-1])
    part = mutag[[0, 5, 7]]
    assert len(part) == 3 and list(part.y) == [mutag.y[0], mutag.y[5], mutag.y[7]]
    out_part = model(part)
    out_all = model(mutag)
    np.testing.assert_array_equal(out_part, out_all[[0, 5, 7]])
    with pytest.raises(IndexError, match="sample index 188 out of range for a dataset of 188 graphs"):
        mutag[[188]]


@needs_cli
def test_cross_validate_equals_the_cli(mutag):
    cv = gcn_model(epochs=2).cross_validate(mutag, k=3, progress=False)
    run = subprocess.run([str(CLI), "train", str(GCN), "--dataset", f"tu:{TU / 'MUTAG'}", "--folds", "3",
                          "--epochs", "2", "--json"], capture_output=True, text=True, check=True)
    cli = json.loads(run.stdout)
    assert len(cv) == 3 and cv.k == 3
    np.testing.assert_array_equal(cv.accuracies, [f["test"]["accuracy"] for f in cli["folds"]])
    np.testing.assert_array_equal(cv.fold_of_sample, cli["fold_of_sample"])
    assert cv.mean == cli["mean_accuracy"] and cv.std == cli["std_accuracy"]
    assert cv.std == pytest.approx(np.std(cv.accuracies), abs=1e-15)
    # Stratified: each fold's class counts are within one of each other.
    for cls in (0, 1):
        per_fold = np.bincount(cv.fold_of_sample[mutag.y == cls], minlength=3)
        assert per_fold.max() - per_fold.min() <= 1


@needs_cli
def test_cross_validate_test_curve_equals_the_cli(mutag):
    reports = []
    cv = gcn_model(epochs=3).cross_validate(mutag, k=3, progress=False, test_curve=True,
                                            callback=lambda fold, r: reports.append((fold, r)))
    run = subprocess.run([str(CLI), "train", str(GCN), "--dataset", f"tu:{TU / 'MUTAG'}", "--folds", "3",
                          "--epochs", "3", "--test-curve", "--json"], capture_output=True, text=True, check=True)
    cli = json.loads(run.stdout)
    assert cv.accuracies_by_epoch.shape == (3, 3)
    np.testing.assert_array_equal(cv.accuracies_by_epoch, [f["test_accuracy_by_epoch"] for f in cli["folds"]])
    np.testing.assert_array_equal(cv.mean_by_epoch, cli["mean_accuracy_by_epoch"])
    np.testing.assert_allclose(cv.mean_by_epoch, cv.accuracies_by_epoch.mean(axis=0), atol=1e-15)
    np.testing.assert_allclose(cv.std_by_epoch, cv.accuracies_by_epoch.std(axis=0), atol=1e-15)
    assert cv.best_epoch == cli["best_epoch"] == int(np.argmax(cv.mean_by_epoch)) + 1
    assert cv.best_mean == cv.mean_by_epoch.max() and cv.mean == cv.mean_by_epoch[-1]
    # the callback sees each epoch's test metrics, the ones the curve holds
    assert [r["test"]["accuracy"] for _, r in reports] == list(cv.accuracies_by_epoch.ravel())
    assert "best epoch" in repr(cv)
    plain = gcn_model(epochs=3).cross_validate(mutag, k=3, progress=False)
    assert plain.best_epoch is None and plain.accuracies_by_epoch is None
    np.testing.assert_array_equal(plain.accuracies, cv.accuracies)


def test_cross_validate_refusals(mutag):
    model = gcn_model()
    with pytest.raises(lrnn.LrnnError, match="cross-validation needs at least 2 folds, got 1"):
        model.cross_validate(mutag, k=1, progress=False)
    with pytest.raises(lrnn.LrnnError, match="class with target 0 has 63"):
        model.cross_validate(mutag, k=64, progress=False)


def test_cross_validate_python_dataset():
    data = Dataset()
    for i in range(8):
        data.add(R.q[1 if i < 4 else 0], [R.a[0.9 if i < 4 else 0.1]])
    model = lrnn.Model()
    model += R.q <= R.a
    model.build(Settings(epochs=30, optimizer=lrnn.Adam(lr=0.1)))
    cv = model.cross_validate(data, k=2, progress=False)
    assert [f["test_samples"] for f in cv.folds] == [4, 4]
    assert sorted(np.bincount(cv.fold_of_sample)) == [4, 4]


# ---- PyG ------------------------------------------------------------------------------------
def test_pyg_missing_gives_a_clear_import_error(monkeypatch, mutag):
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    with pytest.raises(ImportError, match="need torch and torch_geometric"):
        to_pyg(mutag)
    with pytest.raises(ImportError, match="need torch and torch_geometric"):
        from_pyg([])


def test_to_pyg_equals_pygs_own_tudataset(tmp_path, mutag):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (test-only dependency)")
    datasets = pytest.importorskip("torch_geometric.datasets", reason="torch_geometric is not installed")
    raw = tmp_path / "MUTAG" / "raw"
    raw.mkdir(parents=True)
    for f in (TU / "MUTAG").glob("MUTAG_*.txt"):
        shutil.copy(f, raw)
    theirs = datasets.TUDataset(str(tmp_path), "MUTAG")
    ours = to_pyg(mutag, dtype=torch.float32)
    assert len(ours) == len(theirs) == 188
    for a, b in zip(ours, theirs):
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
        # PyG sorts (coalesces) the edges; MUTAG lists each once per direction.
        order_a = np.lexsort((a.edge_index[1].numpy(), a.edge_index[0].numpy()))
        order_b = np.lexsort((b.edge_index[1].numpy(), b.edge_index[0].numpy()))
        assert torch.equal(a.edge_index[:, order_a], b.edge_index[:, order_b])
        assert torch.equal(a.edge_attr[order_a], b.edge_attr[order_b])


def test_from_pyg_of_to_pyg_trains_to_the_same_outputs(mutag):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (test-only dependency)")
    pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    back = from_pyg(to_pyg(mutag, dtype=torch.float64), name="MUTAG")
    assert isinstance(back, GraphDataset) and back.class_labels == [0, 1]
    np.testing.assert_array_equal(back.y, mutag.y)
    a, b = gcn_model(epochs=2), gcn_model(epochs=2)
    a.train(mutag, progress=False)
    b.train(back, progress=False)
    np.testing.assert_array_equal(a(mutag), b(back))


def test_from_pyg_round_trip_keeps_every_array(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (test-only dependency)")
    data_mod = pytest.importorskip("torch_geometric.data", reason="torch_geometric is not installed")
    rng = np.random.default_rng(3)
    graphs = []
    for k in range(6):
        n, e = int(rng.integers(2, 7)), int(rng.integers(1, 10))
        graphs.append(data_mod.Data(x=torch.tensor(rng.normal(size=(n, 3))),
                                    edge_index=torch.tensor(rng.integers(0, n, size=(2, e))),
                                    edge_attr=torch.tensor(rng.normal(size=(e, 2))), y=torch.tensor([k % 3])))
    dataset = from_pyg(graphs)
    assert dataset.class_labels == [0, 1, 2] and len(dataset) == 6
    back = to_pyg(dataset, dtype=torch.float64)
    for a, b in zip(graphs, back):
        assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
        assert torch.equal(a.edge_attr, b.edge_attr) and torch.equal(a.y, b.y)
    # Three classes: one-hot targets of the `predict` query, facts as the docstring says.
    template = tmp_path / "sum.lrnn"
    template.write_text("predict :- {3,3} x(I). [aggregation=sum]\npredict :- {3,2} edge_attr(I, J). [aggregation=sum]\n")
    model = lrnn.Model(template_file=str(template)).build(Settings(epochs=1))
    built = model.build_dataset(dataset)
    for k, target in enumerate(built.targets):
        np.testing.assert_array_equal(target, np.eye(3)[k % 3])
    evaluation = model.test(dataset)
    assert evaluation.outputs.shape == (6, 3)
    w = model.parameters()
    x_weight = [v for name, v in w.items() if v.shape == (3, 3)][0]
    e_weight = [v for name, v in w.items() if v.shape == (3, 2)][0]
    expected = [x_weight @ g.x.numpy().sum(axis=0) + e_weight @ g.edge_attr.numpy().sum(axis=0) for g in graphs]
    np.testing.assert_allclose(evaluation.outputs, np.array(expected), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="graph 0 has y of shape"):
        from_pyg([data_mod.Data(x=torch.zeros(3, 1), edge_index=torch.zeros(2, 0, dtype=torch.long),
                                y=torch.tensor([0, 1, 0]))])
    with pytest.raises(ValueError, match="graph 0: edge_index refers to node 5 of a graph of 2 nodes"):
        from_pyg([data_mod.Data(x=torch.zeros(2, 1), edge_index=torch.tensor([[0], [5]]), y=torch.tensor([1]))])
    with pytest.raises(ValueError, match="graph 0 has no nodes"):
        from_pyg([data_mod.Data(x=torch.zeros(0, 1), edge_index=torch.zeros(2, 0, dtype=torch.long),
                                y=torch.tensor([1]))])
