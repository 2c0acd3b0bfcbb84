"""What `lrnn train` shows on a terminal while it builds (src/cli/train.cpp, BuildStatus):
one line naming the phase (reading, grounding, planning and the first epoch) with the time
so far, overwritten by the next and by the epochs' bar; an error starts its own line. Off a
terminal nothing of it is written (logs hold the epochs' lines only)."""
import os
import pty
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LRNN = ROOT / "build" / "lrnn"

pytestmark = pytest.mark.skipif(not LRNN.exists(), reason="build/lrnn is not built (run `make build`)")

GRAPH = ("<[1.0, 0.5]> x(a), <[0.2, -1.0]> x(b), <[0.3, 0.1]> x(c), edge(a, b), edge(b, a), edge(b, c), "
         "edge(c, b).\n")
TEMPLATE = ("h(X) :- {2,2} x(Y), *edge(X, Y). [aggregation=sum]\n"
            "h(X) :- {2,2} x(X).\n"
            "out(X) :- {1,2} h(X).\n")


def stderr_on_a_terminal(args, cwd):
    try:
        master, slave = pty.openpty()
    except OSError as e:  # a container without /dev/ptmx
        pytest.skip(f"no pseudo-terminal here ({e})")
    run = subprocess.run([str(LRNN)] + args, stdout=subprocess.PIPE, stderr=slave, cwd=cwd, timeout=120)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other end is closed: everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return run.returncode, b"".join(chunks).decode()


def test_the_build_shows_its_phases_on_a_terminal(tmp_path):
    (tmp_path / "t.lrnn").write_text(TEMPLATE)
    (tmp_path / "e.txt").write_text(GRAPH)
    (tmp_path / "q.txt").write_text("1.0 out(a). 0.0 out(b). 1.0 out(c).\n")
    args = ["train", "t.lrnn", "-e", "e.txt", "-q", "q.txt", "--epochs", "2"]
    code, shown = stderr_on_a_terminal(args, tmp_path)
    assert code == 0, shown
    phases = [shown.index(p) for p in ("reading e.txt ...", "grounding 1 sample(s) ...", "planning and epoch 1 ...",
                                        "epoch 2/2")]
    assert phases == sorted(phases), shown
    assert "\r\x1b[K[" in shown  # each phase and bar line clears the one before
    # Off a terminal: the epochs' lines only.
    plain = subprocess.run([str(LRNN)] + args, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert plain.returncode == 0 and "reading" not in plain.stderr and "\x1b[K" not in plain.stderr, plain.stderr


def test_an_error_while_building_starts_its_own_line(tmp_path):
    (tmp_path / "t.lrnn").write_text(TEMPLATE)
    (tmp_path / "e.txt").write_text(GRAPH.replace("edge(c, b).", "edge(c, ."))
    code, shown = stderr_on_a_terminal(["train", "t.lrnn", "-e", "e.txt", "--epochs", "1"], tmp_path)
    assert code != 0, shown
    assert "reading e.txt ..." in shown
    error = shown.index("e.txt:1:")
    assert shown[:error].endswith("\r\x1b[K"), repr(shown[:error + 20])  # the phase's line cleared first


def test_the_json_splits_the_build_into_its_phases(tmp_path):
    """`--json`'s timing: build_s is read_s (the files parsed), then the grounding (ground_s
    for the training set), then plan_s (the plans and the training's setup)."""
    import json
    (tmp_path / "t.lrnn").write_text(TEMPLATE)
    (tmp_path / "e.txt").write_text(GRAPH)
    (tmp_path / "q.txt").write_text("1.0 out(a). 0.0 out(b). 1.0 out(c).\n")
    run = subprocess.run([str(LRNN), "train", "t.lrnn", "-e", "e.txt", "-q", "q.txt", "--epochs", "2", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    t = json.loads(run.stdout)["timing"]
    for key in ("build_s", "read_s", "ground_s", "plan_s"):
        assert t[key] > 0, (key, t)
    assert t["read_s"] + t["ground_s"] + t["plan_s"] <= t["build_s"] + 1e-6, t
    # The CPU time of reading and grounding: lrnn's own (user) and the kernel's (system).
    cpu = t["load_cpu_s"]
    assert set(cpu) == {"user", "system"}, cpu
    assert cpu["user"] >= 0 and cpu["system"] >= 0 and cpu["user"] + cpu["system"] > 0, cpu
    assert cpu["user"] + cpu["system"] <= (t["read_s"] + t["ground_s"]) * (os.cpu_count() or 1) + 0.05, t
