"""lrnn.distributed: `mpirun -np N python3 script.py` trains lrnn.Model over N ranks through
the same C++ path as `lrnn train`; 1, 2 and 3 ranks give the same weights, rank 0 gets the
gathered evaluation, and an uncaught exception on one rank ends the job naming that rank.
Skipped when lrnn was built without MPI or mpirun is missing."""
import json
import shutil
import time
from pathlib import Path

import pytest

from lrnn._core import distributed as core_distributed

ROOT = Path(__file__).resolve().parents[2]
MUTAGENESIS = ROOT.parent / "shared" / "datasets" / "neuralogic" / "molecules" / "mutagenesis"

pytestmark = pytest.mark.skipif(
    not core_distributed.built_with_mpi() or shutil.which("mpirun") is None,
    reason="lrnn built without MPI (LRNN_MPI) or mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)",
)

SCRIPT = """
import json, sys
import lrnn.distributed as dist
from lrnn import Adam, FileDataset, Settings
from lrnn.model import Model

model = Model(template_file=sys.argv[1]).build(Settings(optimizer=Adam(lr=0.003), epochs=3, batch_size=16, seed=2))
data = FileDataset(examples_file=sys.argv[2], queries_file=sys.argv[3])
if len(sys.argv) > 5 and dist.rank() == 1:
    raise ValueError("a failure on rank 1 only")
history = model.train(data, progress=False)
evaluation = model.test(data)
out = {"rank": dist.rank(), "size": dist.size(), "active": dist.active(),
       "weights": {k: v.tolist() for k, v in model.state_dict()["weights"].items()},
       "loss": evaluation.loss, "outputs": len(evaluation.queries)}
with open(f"{sys.argv[4]}.{dist.rank()}", "w") as fp:
    json.dump(out, fp)
"""


@pytest.fixture
def mpirun(tmp_path, mpirun_python):
    """mpirun(ranks, *extra): SCRIPT on mutagenesis over `ranks` ranks; (process, result path)."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)

    def run(ranks, *extra):
        out = tmp_path / f"result{ranks}"
        return mpirun_python(ranks, script, ROOT / "examples/templates/mutagenesis.lrnn", MUTAGENESIS / "examples.txt",
                             MUTAGENESIS / "queries.txt", out, *extra), out

    return run


def test_one_two_three_ranks_train_the_same_weights(mpirun):
    results = {}
    for ranks in (1, 2, 3):
        run, out = mpirun(ranks)
        assert run.returncode == 0, run.stderr[-3000:]
        per_rank = [json.loads(Path(f"{out}.{r}").read_text()) for r in range(ranks)]
        assert [(p["rank"], p["size"], p["active"]) for p in per_rank] == [(r, ranks, True) for r in range(ranks)]
        # Every rank holds the same model; rank 0 has every output, the others the metrics.
        assert all(p["weights"] == per_rank[0]["weights"] for p in per_rank)
        assert per_rank[0]["outputs"] == 188
        assert all(p["outputs"] == 0 and p["loss"] == per_rank[0]["loss"] for p in per_rank[1:])
        results[ranks] = per_rank[0]
    for ranks in (2, 3):
        for name, values in results[1]["weights"].items():
            difference = max(abs(a - b) for a, b in zip(_flat(values), _flat(results[ranks]["weights"][name])))
            assert difference <= 1e-12, (name, ranks, difference)
        assert results[ranks]["loss"] == results[1]["loss"]


def test_an_exception_on_one_rank_ends_the_job(mpirun):
    t0 = time.monotonic()
    run, _ = mpirun(2, "fail")
    assert run.returncode != 0
    assert time.monotonic() - t0 < 60
    assert "rank 1 of 2 failed: ValueError: a failure on rank 1 only" in run.stderr


MATRIX_SCRIPT = """
import json, sys
import lrnn.distributed as dist
from lrnn import Settings
from lrnn.model import Model

model = Model(template_file=sys.argv[1]).build(Settings(epochs=1, seed=1))
from lrnn import FileDataset
evaluation = model.test(FileDataset(examples_file=sys.argv[2]))
out = [[list(map(float, row)) for row in value.tolist()] if value.ndim == 2 else value.tolist()
       for value in evaluation.outputs]
with open(f"{sys.argv[3]}.{dist.rank()}", "w") as fp:
    json.dump({"shapes": [list(v.shape) for v in evaluation.outputs], "values": out}, fp)
"""


def test_matrix_outputs_keep_their_shape_when_gathered(tmp_path, mpirun_python):
    # The gathered outputs once lost their rows and columns: rank 0 returned a 2x2 value as a
    # vector of 4 (and the query split of each output as "train").
    (tmp_path / "m.lrnn").write_text("{2,2} q :- a.\n")
    (tmp_path / "m.txt").write_text("".join(f"[[1,0],[0,1]] q :- [[{i},1],[2,{i}]] a.\n" for i in range(5)))
    script = tmp_path / "matrix.py"
    script.write_text(MATRIX_SCRIPT)
    results = {}
    for ranks in (1, 2):
        out = tmp_path / f"matrix{ranks}"
        run = mpirun_python(ranks, script, tmp_path / "m.lrnn", tmp_path / "m.txt", out)
        assert run.returncode == 0, run.stderr[-3000:]
        results[ranks] = json.loads(Path(f"{out}.0").read_text())
    assert results[1]["shapes"] == [[2, 2]] * 5
    assert results[2] == results[1]


def _flat(values):
    if isinstance(values, list):
        return [x for v in values for x in _flat(v)]
    return [values]
