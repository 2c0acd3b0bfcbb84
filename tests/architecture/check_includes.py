#!/usr/bin/env python3
"""The stages of lrnn include one way: a file may include headers of its own stage and of
earlier stages only (docs/architecture.md). This reads every `#include "..."` of src/ and
include/lrnn/ and fails, naming the file and line, when a stage includes a later one or a
folder belongs to no stage.

Usage: check_includes.py [REPO_ROOT]
"""
import re
import sys
from pathlib import Path

# The pipeline, earliest first. Entries of one tuple share a stage: they may include each
# other's headers. Public headers (lrnn/x.hpp) sit in the stage that implements them.
STAGES = [
    ("lrnn/ast.hpp", "lrnn/diagnostics.hpp", "lrnn/memory.hpp", "lrnn/training.hpp"),  # plain data, no code
    ("syntax", "lrnn/syntax.hpp", "lrnn/atomic_file.hpp", "lrnn/suggest.hpp"),
    ("logic", "lrnn/logic.hpp"),
    ("neural",),
    ("exec",),
    ("train",),
    ("rasp", "lrnn/rasp.hpp"),
    ("zoo", "lrnn/zoo.hpp"),
    ("api", "lrnn/model.hpp", "lrnn/distributed.hpp"),
    ("data", "lrnn/datasets.hpp"),
    ("draw", "lrnn/draw.hpp", "lrnn/report.hpp"),
    ("cli", "lrnn/lrnn.hpp"),
]
RANK = {name: rank for rank, names in enumerate(STAGES) for name in names}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def stage_of_header(header: str) -> str:
    """`exec/plan.hpp` -> `exec`; `lrnn/model.hpp` -> itself (a public header)."""
    return header if header.startswith("lrnn/") else header.split("/", 1)[0]


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    files = sorted((root / "src").rglob("*.[ch]pp")) + sorted((root / "include" / "lrnn").glob("*.hpp"))
    problems = []
    for path in files:
        rel = path.relative_to(root)
        if rel.parts[0] == "src":
            own = rel.parts[1]
        else:
            own = "lrnn/" + rel.name
        if own not in RANK:
            problems.append(f"{rel}: '{own}' belongs to no stage (add it to STAGES in tests/architecture/check_includes.py)")
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            header = m.group(1)
            if "/" not in header:
                continue  # a header beside the file, same stage
            target = stage_of_header(header)
            if target not in RANK:
                problems.append(f"{rel}:{number}: includes \"{header}\" of unknown stage '{target}'")
            elif RANK[target] > RANK[own]:
                problems.append(f"{rel}:{number}: stage '{own}' includes \"{header}\" of the later stage '{target}'")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the stage order")
        return 1
    print(f"include order ok: {len(files)} files, {len(STAGES)} stages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
