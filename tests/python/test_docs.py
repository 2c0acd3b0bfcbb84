"""Every command the README and docs show runs as written (so the docs cannot rot).

Fenced blocks tagged ```sh are shell commands, run one by one from the repository root;
blocks tagged ```python are run as one script. Untagged blocks (synopses with [options],
output listings) are not run. After a shell command, a comment line `#=> REGEX` states
what its output must contain (a regular expression), e.g. the accuracy a training command
reaches. `make ...` lines are the suite itself and are skipped.

The commands run in a sandbox: a temporary folder whose entries link to the repository's
top-level entries, with ../shared beside it, so files the commands write (xor.json, ...)
never land in the checkout.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [ROOT / "README.md", ROOT / "python" / "README.md", ROOT / "bench" / "README.md"]
    + list((ROOT / "docs").glob("*.md"))
    + list((ROOT / "examples").glob("**/README.md"))
)
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```", re.S | re.M)


def blocks(lang):
    for doc in DOCS:
        if not doc.exists():
            continue
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                line = text.count("\n", 0, m.start()) + 1
                yield pytest.param(m.group(2), id=f"{doc.relative_to(ROOT)}:{line}")


def shell_commands(block):
    """(command, [expected regexes]) per command; backslash continuations joined."""
    commands, pending = [], ""
    for raw in block.splitlines():
        line = raw.rstrip()
        if line.startswith("#=>"):
            assert commands, f"'#=>' before any command: {line}"
            commands[-1][1].append(line[3:].strip())
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        commands.append((pending + line, []))
        pending = ""
    return [(c, e) for c, e in commands if not c.lstrip().startswith("make ")]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    repo = base / "repo"
    repo.mkdir()
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (repo / entry.name).symlink_to(entry)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (base / "shared").symlink_to(shared)
    return repo


def require_cli():
    if not (ROOT / "build" / "lrnn").exists():
        pytest.skip("build/lrnn is not built (run `make build`)")
    if not (ROOT.parent / "shared" / "datasets").exists():
        pytest.skip("../shared/datasets is absent")


@pytest.mark.parametrize("block", list(blocks("sh")))
def test_shell_block_runs_as_written(block, sandbox):
    require_cli()
    for command, expected in shell_commands(block):
        run = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=sandbox,
                             capture_output=True, text=True, timeout=600)
        out = run.stdout + run.stderr
        assert run.returncode == 0, f"`{command}` exited {run.returncode}:\n{out[-3000:]}"
        for pattern in expected:
            assert re.search(pattern, out), f"`{command}`: output does not match {pattern!r}:\n{out[-3000:]}"


@pytest.mark.parametrize("block", list(blocks("python")))
def test_python_block_runs_as_written(block, sandbox):
    require_cli()
    run = subprocess.run([sys.executable, "-c", block], cwd=sandbox, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert run.returncode == 0, f"exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"


def test_runnable_blocks_exist():
    # The README's command examples are tagged, so this suite really runs them.
    assert len(list(blocks("sh"))) >= 3 and len(list(blocks("python"))) >= 2
