#!/usr/bin/env python3
"""Runs PyNeuraLogic's repository examples on lrnn, ported the way a user would port them:
imports renamed (neuralogic -> lrnn) and nothing else. Notebooks are run as the script of
their code cells (shell lines `!pip ...` and magics `%...` left out, as a script has none).
The examples are read from a PyNeuraLogic checkout and never copied into this project.

Usage: scripts/pyneuralogic_examples.py PYNEURALOGIC_CHECKOUT [WORKDIR] [--timeout S] [--only NAME]
  (git clone https://github.com/LukasZahradnik/PyNeuraLogic). Run it with the interpreter
  that has lrnn installed. Prints one line per example (ok / FAIL and the last error line)
  and the counts; exits 1 if any failed."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RENAME = re.compile(r"\bneuralogic\b")


def notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        for line in text.splitlines():
            stripped = line.lstrip()
            if stripped.startswith(("!", "%")):
                continue  # shell commands and IPython magics are not Python
            lines.append(line)
        lines.append("")
    return "\n".join(lines) + "\n"


def ported_examples(checkout: Path, work: Path) -> list:
    """Copies examples/ into `work` with imports renamed; returns the runnable scripts."""
    source = checkout / "examples"
    target = work / "examples"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("outdated"))
    runnable = sorted(target.glob("*.py"))  # the scripts; examples/datasets holds modules
    for path in sorted(target.rglob("*")):
        if path.suffix == ".py":
            path.write_text(RENAME.sub("lrnn", path.read_text()))
        elif path.suffix == ".ipynb":
            script = path.with_suffix(".py")
            script.write_text(RENAME.sub("lrnn", notebook_code(path)))
            runnable.append(script)
    return sorted(runnable)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("work", type=Path, nargs="?")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="pyneuralogic-examples-"))
    work.mkdir(parents=True, exist_ok=True)
    scripts = ported_examples(args.checkout, work)
    failed = 0
    for script in scripts:
        if args.only and args.only not in script.name:
            continue
        env_cwd = script.parent
        try:
            run = subprocess.run([sys.executable, script.name], cwd=env_cwd, capture_output=True, text=True,
                                 timeout=args.timeout, env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(work)})
            ok, detail = run.returncode == 0, (run.stderr.strip().splitlines() or [""])[-1]
        except subprocess.TimeoutExpired:
            ok, detail = False, f"timed out after {args.timeout:g} s"
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {script.relative_to(work)}" + ("" if ok else f": {detail}"), flush=True)
    ran = len([s for s in scripts if not args.only or args.only in s.name])
    print(f"{ran - failed} of {ran} examples ran ({work})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
