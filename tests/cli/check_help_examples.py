#!/usr/bin/env python3
"""Every example in the `--help` of every lrnn command runs as written.

The `Example:`/`Examples:` section of a help text holds command lines (`  lrnn ...`, a
trailing `\\` continues one) and, under each, lines of its expected output. Each command is
run by the shell from a copy of the repository's layout (symbolic links to the source's
top-level entries, and `../shared` to the shared data sets next to the source), so the
relative paths of the help resolve as they do from a checkout and the files an example
writes land in a temporary folder. A command must exit 0, and each expected line (except
those holding `...`, which elide) must be a line of its output.

Usage: check_help_examples.py SOURCE_DIR BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
from typing import List, Tuple


def help_text(lrnn: str, words: List[str]) -> str:
    run = subprocess.run([lrnn, *words, "--help"], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"lrnn {' '.join(words)} --help exited {run.returncode}:\n{run.stderr}")
    return run.stdout


def subcommands(text: str) -> List[str]:
    """The names listed under `Subcommands:` (CLI11's layout: two spaces, name, description)."""
    names, inside = [], False
    for line in text.splitlines():
        if line.startswith("SUBCOMMANDS:") or line.startswith("Subcommands:"):
            inside = True
        elif inside and re.match(r"^  \S", line):
            names.append(line.split()[0])
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    return names


def examples(text: str) -> List[Tuple[str, List[str]]]:
    """(command, expected output lines) of the help's Example(s) section."""
    lines = text.splitlines()
    found: List[Tuple[str, List[str]]] = []
    inside = False
    command = None
    for line in lines:
        if re.match(r"^Examples?:\s*$", line):
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("  "):  # a blank or unindented line ends the section
            inside = False
            command = None
            continue
        body = line.strip()
        if command is not None and command.endswith("\\"):
            command = command[:-1].rstrip() + " " + body
            found[-1] = (command, found[-1][1])
        elif body.startswith("lrnn "):
            command = body
            found.append((command, []))
        elif found:
            found[-1][1].append(body)
    return [(c.split("  #")[0].strip(), expected) for c, expected in found]


def sandbox(source: str) -> str:
    """A folder laid out as a checkout next to ../shared, with links instead of copies."""
    root = tempfile.mkdtemp(prefix="lrnn_help_examples_")
    repo = os.path.join(root, "repo")
    os.mkdir(repo)
    for entry in os.listdir(source):
        if entry.startswith("build") or entry == ".git":
            continue
        os.symlink(os.path.join(source, entry), os.path.join(repo, entry))
    shared = os.path.realpath(os.path.join(source, "..", "shared"))
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(root, "shared"))
    return repo


def main() -> int:
    source, build = (os.path.abspath(a) for a in sys.argv[1:3])
    lrnn = os.path.join(build, "lrnn")
    repo = sandbox(source)
    bin_dir = os.path.join(os.path.dirname(repo), "bin")
    os.mkdir(bin_dir)
    os.symlink(lrnn, os.path.join(bin_dir, "lrnn"))
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))

    # Without ../shared (a clone without the shared data sets), the examples that read them
    # are skipped and counted, as the unit tests that read them skip.
    have_shared = os.path.isdir(os.path.join(os.path.dirname(repo), "shared", "datasets"))
    pending, checked, failures, seen, skipped = [[]], 0, [], set(), 0
    while pending:
        words = pending.pop()
        text = help_text(lrnn, words)
        pending.extend(words + [name] for name in subcommands(text))
        for command, expected in examples(text):
            if command in seen:  # a subcommand's help repeats its parent's footer
                continue
            seen.add(command)
            if not have_shared and "../shared" in command:
                skipped += 1
                print(f"skipped (no ../shared/datasets): {command}")
                continue
            run = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True,
                                 timeout=600, check=False)
            output = run.stdout + run.stderr
            out_lines = {line.strip() for line in output.splitlines()}
            missing = [e for e in expected if "..." not in e and e not in out_lines]
            checked += 1
            where = "lrnn " + " ".join(words) + " --help"
            if run.returncode != 0:
                failures.append(f"{where}: `{command}` exited {run.returncode}:\n{output[-2000:]}")
            elif missing:
                failures.append(f"{where}: `{command}` did not print {missing}; it printed:\n{output[-2000:]}")
            else:
                print(f"ok: {command}")
    for failure in failures:
        print("FAIL " + failure, file=sys.stderr)
    if checked == 0:
        print("no example found in any --help", file=sys.stderr)
        return 1
    print(f"{checked - len(failures)} of {checked} --help examples ran as written"
          + (f"; {skipped} that read ../shared/datasets skipped (absent)" if skipped else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
