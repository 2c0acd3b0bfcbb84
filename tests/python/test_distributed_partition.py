"""One big sample partitioned over MPI ranks from Python (docs/distributed.md "One sample over
many ranks"): `mpirun -np N python3 script.py` with one example and a query per node goes
through the same lrnn::Model as `lrnn train`, so 1 and 2 ranks train the same weights and
rank 0 gets every output in the queries' order. Skipped when lrnn was built without MPI or
mpirun is missing."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lrnn._core import distributed as core_distributed

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not core_distributed.built_with_mpi() or shutil.which("mpirun") is None,
    reason="lrnn built without MPI (LRNN_MPI) or mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)",
)

SCRIPT = """
import json, sys
import lrnn.distributed as dist
from lrnn import Adam, FileDataset, Settings
from lrnn.model import Model

model = Model(template_file=sys.argv[1]).build(Settings(optimizer=Adam(lr=0.01), epochs=4, seed=3))
data = FileDataset(examples_file=sys.argv[2], queries_file=sys.argv[3])
model.train(data, progress=False)
evaluation = model.test(data)
out = {"weights": {k: v.tolist() for k, v in model.state_dict()["weights"].items()},
       "loss": evaluation.loss, "queries": [str(q) for q in evaluation.queries]}
with open(f"{sys.argv[4]}.{dist.rank()}", "w") as fp:
    json.dump(out, fp)
"""


def _flat(values):
    if isinstance(values, list):
        return [x for v in values for x in _flat(v)]
    return [values]


def _rank0_results(tmp_path, mpirun_python, script_text):
    """`script_text` run on a 300-node planted graph by 1 and 2 ranks: rank 0's JSON of each."""
    graph = tmp_path / "planted"
    if not Path(f"{graph}.examples.txt").exists():
        subprocess.run([sys.executable, str(ROOT / "examples/big_graphs/planted_partition.py"), "--nodes", "300",
                        "--degree", "4", "--seed", "1", "--out", str(graph)], check=True, capture_output=True)
    script = tmp_path / "script.py"
    script.write_text(script_text)
    results = {}
    for ranks in (1, 2):
        out = tmp_path / f"result{ranks}"
        run = mpirun_python(ranks, script, ROOT / "examples/big_graphs/gcn.lrnn", f"{graph}.examples.txt",
                            f"{graph}.queries.txt", out)
        assert run.returncode == 0, run.stderr[-3000:]
        results[ranks] = json.loads(Path(f"{out}.0").read_text())
    return results


def test_one_sample_partitioned_over_two_ranks_trains_as_one(tmp_path, mpirun_python):
    results = _rank0_results(tmp_path, mpirun_python, SCRIPT)
    assert len(results[2]["queries"]) == 300
    assert results[2]["queries"] == results[1]["queries"]  # rank 0: every output, in order
    assert abs(results[2]["loss"] - results[1]["loss"]) <= 1e-12 * abs(results[1]["loss"])
    scale = max(abs(x) for values in results[1]["weights"].values() for x in _flat(values))
    for name, values in results[1]["weights"].items():
        difference = max(abs(a - b) for a, b in zip(_flat(values), _flat(results[2]["weights"][name])))
        assert difference <= 1e-12 * scale, (name, difference)


SPLIT_SCRIPT = """
import json, sys
import lrnn.distributed as dist
from lrnn import Adam, FileDataset, Settings
from lrnn.model import Model

model = Model(template_file=sys.argv[1]).build(Settings(optimizer=Adam(lr=0.01), epochs=4, seed=3))
data = model.build_dataset(FileDataset(examples_file=sys.argv[2], queries_file=sys.argv[3]), split=(0.6, 0.2, 0.2))
history = model.train(data, progress=False)
out = {"train": history.train_losses, "val": history.val_losses + history.val_accuracies,
       "test": history.test_losses + history.test_accuracies}
with open(f"{sys.argv[4]}.{dist.rank()}", "w") as fp:
    json.dump(out, fp)
"""


def test_a_query_split_partitioned_over_two_ranks_reports_as_one(tmp_path, mpirun_python):
    """PyG's node masks on one partitioned graph: every epoch's training, validation and test
    numbers of 2 ranks are one rank's (docs/distributed.md "Query splits")."""
    results = _rank0_results(tmp_path, mpirun_python, SPLIT_SCRIPT)
    assert len(results[1]["val"]) == 8 and len(results[1]["test"]) == 8  # 4 epochs: losses, then accuracies
    for part in ("train", "val", "test"):
        for a, b in zip(results[2][part], results[1][part], strict=True):
            assert abs(a - b) <= 1e-12 * max(abs(b), 1e-12), (part, a, b)


BATCH_SCRIPT = SCRIPT.replace("epochs=4, seed=3)", "epochs=4, seed=3, batch_size=0, query_batch_size=32)")


def test_query_batches_partitioned_over_two_ranks_train_as_one(tmp_path, mpirun_python):
    """Mini-batches of the queries of one partitioned graph: 1 rank and 2 ranks take the same
    steps (docs/distributed.md "One sample over many ranks"), and the steps are not the
    full-batch ones (the same 4 epochs without batches end elsewhere)."""
    assert BATCH_SCRIPT != SCRIPT
    batched = _rank0_results(tmp_path, mpirun_python, BATCH_SCRIPT)
    assert abs(batched[2]["loss"] - batched[1]["loss"]) <= 1e-12 * abs(batched[1]["loss"])
    scale = max(abs(x) for values in batched[1]["weights"].values() for x in _flat(values))
    for name, values in batched[1]["weights"].items():
        difference = max(abs(a - b) for a, b in zip(_flat(values), _flat(batched[2]["weights"][name])))
        assert difference <= 1e-12 * scale, (name, difference)
    whole = _rank0_results(tmp_path, mpirun_python, SCRIPT)
    assert abs(whole[1]["loss"] - batched[1]["loss"]) > 1e-6 * abs(whole[1]["loss"])


NPZ_SCRIPT = """
import json, sys
import lrnn
from lrnn.datasets import load_npz
import lrnn.distributed as dist
from lrnn import Adam, Settings
from lrnn.model import Model

model = Model(template_file=sys.argv[1]).build(Settings(optimizer=Adam(lr=0.01), epochs=4, seed=3))
data = load_npz(sys.argv[2], share=True)
try:
    data._lrnn_samples().subset([0])  # a subset reads the facts: refused for a share
    refused = ""
except lrnn.LrnnError as e:
    refused = str(e)
model.train(data, progress=False)
evaluation = model.test(data)
out = {"weights": {k: v.tolist() for k, v in model.state_dict()["weights"].items()},
       "loss": evaluation.loss, "queries": [str(q) for q in evaluation.queries], "refused": refused}
with open(f"{sys.argv[3]}.{dist.rank()}", "w") as fp:
    json.dump(out, fp)
"""


def test_an_npz_share_over_two_ranks_trains_as_one(tmp_path, mpirun_python):
    """`lrnn.datasets.load_npz(path, share=True)`: with 2 ranks each builds only its part of the graph's
    facts (a subset, which would read them all, is refused) and the 2 ranks train one rank's
    weights; with 1 rank it is the whole graph."""
    width, height = 20, 10
    npz = tmp_path / "grid.npz"
    subprocess.run([sys.executable, str(ROOT / "examples/big_graphs/grid_graph.py"), "--width", str(width),
                    "--height", str(height), "--out", str(npz)], check=True, capture_output=True)
    script = tmp_path / "npz_script.py"
    script.write_text(NPZ_SCRIPT)
    results = {}
    for ranks in (1, 2):
        out = tmp_path / f"npz{ranks}"
        run = mpirun_python(ranks, script, ROOT / "examples/big_graphs/gcn_arrays.lrnn", npz, out)
        assert run.returncode == 0, run.stderr[-3000:]
        results[ranks] = json.loads(Path(f"{out}.0").read_text())
    assert results[1]["refused"] == ""
    assert "a rank's share of one graph" in results[2]["refused"]
    assert len(results[2]["queries"]) == width * height and results[2]["queries"] == results[1]["queries"]
    assert abs(results[2]["loss"] - results[1]["loss"]) <= 1e-12 * abs(results[1]["loss"])
    scale = max(abs(x) for values in results[1]["weights"].values() for x in _flat(values))
    for name, values in results[1]["weights"].items():
        difference = max(abs(a - b) for a, b in zip(_flat(values), _flat(results[2]["weights"][name])))
        assert difference <= 1e-12 * scale, (name, difference)
