#!/usr/bin/env python3
"""docs/architecture.md "How to add ...": each entry says how many source files an addition
touches, lists them, and names an existing instance written that way. This finds every
source file under src/, include/ and python/ that mentions the instance (by the pattern
below) and fails, naming the entry, unless they are exactly the listed files and as many as
the count says; and unless the count is within the bound the project holds itself to.

Usage: check_how_to_add.py [REPO_ROOT]
"""
import re
import sys
from pathlib import Path

# entry (the bold text) -> (the instance's pattern, lines to ignore, bound on the file count or None)
ENTRIES = {
    "an aggregation": (r'AggregationKind::Max\b|\bSum, Avg, Max\b|_a\("max"\)', r"CombinationKind::", 4),
    "a GNN layer in Python": (r"\bGraphConv\b", None, 1),
    "a zoo module in C++": (r"\brelational_attention\b|\bRelationalAttention\b", None, None),
    "a CLI command": (r'"generate"', None, 1),
    "a RASP primitive": (r'\bindicator\(|"indicator"', None, 4),
}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".py"}
HEADING = re.compile(r"^\*\*(.+?)\*\* \((\d+) files?;")
ITEM = re.compile(r"^\d+\. `([^`]+)`")


def documented(doc: str) -> dict:
    """entry -> (count, [listed files]) from the section."""
    section = doc.split("## How to add ...", 1)[1].split("\n## ", 1)[0]
    entries, current = {}, None
    for line in section.splitlines():
        m = HEADING.match(line)
        if m:
            current = m.group(1)
            entries[current] = (int(m.group(2)), [])
            continue
        m = ITEM.match(line)
        if m and current:
            entries[current][1].append(m.group(1))
    return entries


def mentioning(root: Path, pattern: str, ignore: str) -> set:
    found = set()
    for top in ("src", "include", "python"):
        for path in (root / top).rglob("*"):
            if path.suffix not in SOURCE_SUFFIXES or "__pycache__" in path.parts:
                continue
            for line in path.read_text(errors="replace").splitlines():
                if re.search(pattern, line) and not (ignore and re.search(ignore, line)):
                    found.add(path.relative_to(root).as_posix())
                    break
    return found


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    entries = documented((root / "docs" / "architecture.md").read_text())
    problems = []
    for name, (pattern, ignore, bound) in ENTRIES.items():
        if name not in entries:
            problems.append(f'docs/architecture.md: no entry "**{name}** (N files; ...)" under "How to add ..."')
            continue
        count, listed = entries[name]
        found = mentioning(root, pattern, ignore)
        if len(listed) != count:
            problems.append(f"{name}: the count says {count} files, the list has {len(listed)}")
        if set(listed) != found:
            problems.append(f"{name}: listed {sorted(set(listed) - found)} but not found there; "
                            f"found in {sorted(found - set(listed))} but not listed")
        if bound is not None and count > bound:
            problems.append(f"{name}: {count} files, more than the {bound} the project allows")
        print(f"{name}: {len(found)} file(s)" + (f" (at most {bound})" if bound is not None else ""))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
