#!/usr/bin/env python3
"""The CLI is a client of the public API (docs/architecture.md): a file of src/cli/ includes
headers of include/lrnn/ and of src/cli/ only. This fails, naming the file and line, on any
other include (and on an entry of REMAINING that is gone, so the list stays exact).

Usage: check_cli_includes.py [REPO_ROOT]
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# (file, header): internal headers a CLI file may still include while the public API lacks
# what it needs. Empty: the CLI is a client of include/lrnn/ alone; keep it so.
REMAINING: set[tuple[str, str]] = set()


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
    print(f"cli includes ok: {len(found)} internal include(s)" + (", all listed" if found else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
