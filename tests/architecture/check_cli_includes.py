#!/usr/bin/env python3
"""The CLI is a client of the public API (issue 31): a file of src/cli/ includes headers of
include/lrnn/ and of src/cli/ only. The includes of internal headers not yet replaced by
public API are listed in REMAINING; this fails, naming the file and line, on any other one,
and on a listed one that is gone (delete it from the list, so the list stays exact).

Usage: check_cli_includes.py [REPO_ROOT]
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# (file, header): what each still needs beyond include/lrnn/ (train's MPI collectives and
# step timing, the training report and configuration, link prediction, the grounder's
# program for `lrnn ground`).
REMAINING = {
    ("src/cli/eval.cpp", "train/report.hpp"),
    ("src/cli/ground.cpp", "logic/grounder.hpp"),
    ("src/cli/ground.cpp", "logic/program.hpp"),
    ("src/cli/train.cpp", "draw/training_report.hpp"),
    ("src/cli/train.cpp", "train/config.hpp"),
    ("src/cli/train.cpp", "train/dataset.hpp"),
    ("src/cli/train.cpp", "train/distributed.hpp"),
    ("src/cli/train.cpp", "train/link_prediction.hpp"),
    ("src/cli/train.cpp", "train/numerics.hpp"),
    ("src/cli/train.cpp", "train/report.hpp"),
}


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    found = set()
    problems = []
    for path in sorted((root / "src" / "cli").glob("*.[ch]pp")):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            header = m.group(1)
            if header.startswith(("lrnn/", "cli/")) or "/" not in header:
                continue
            found.add((rel, header))
            if (rel, header) not in REMAINING:
                problems.append(f"{rel}:{number}: the CLI includes the internal header \"{header}\": use include/lrnn/ "
                                f"(extend the public API where it needs more)")
    for rel, header in sorted(REMAINING - found):
        problems.append(f"{rel} no longer includes \"{header}\": delete it from REMAINING in {Path(__file__).name}")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"cli includes ok: {len(found)} internal include(s) left, all listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
