#!/usr/bin/env python3
"""docs/architecture.md "How to add ...": each entry says how many source files an addition
touches, lists them, and names an existing instance written that way. This finds every
source file under src/, include/ and python/ that mentions the instance (by the pattern
below) and fails, naming the entry, unless they are exactly the listed files and as many as
the count says; and unless the count is within the bound the project holds itself to.

The zoo's registry makes the C++ entry hold for every module, not only the named one: each
`LRNN_ZOO_MODULE(name)` of src/zoo/*.cpp must be named (as `"name"`) by exactly one Python
file of python/lrnn/nn/ (its class, not an __init__.py), by no other source file, and the
generic binding python/src/zoo.cpp and the exporting __init__.py files must name neither the
module nor its Python classes: a module that needed a binding, a header line or an export of
its own fails here, naming it.

Usage: check_how_to_add.py [REPO_ROOT]
"""
import ast
import re
import sys
from pathlib import Path

# entry (the bold text) -> (the instance's pattern, lines to ignore, bound on the file count or None)
ENTRIES = {
    "an aggregation": (r'AggregationKind::Max\b|\bSum, Avg, Max\b|_a\("max"\)', r"CombinationKind::", 4),
    "a GNN layer in Python": (r"\bGraphConv\b", None, 1),
    "a zoo module in C++": (r"\brelational_attention\b|\bRelationalAttention\b", None, 2),
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
    for rel, text in source_files(root):
        for line in text.splitlines():
            if re.search(pattern, line) and not (ignore and re.search(ignore, line)):
                found.add(rel)
                break
    return found


REGISTRATION = re.compile(r"^LRNN_ZOO_MODULE\((\w+)\)", re.M)
# The files a new zoo module may not need to touch: the one binding, the exports.
ZOO_GENERIC = ("python/src/zoo.cpp", "python/lrnn/nn/__init__.py", "python/lrnn/nn/zoo/__init__.py")


def source_files(root: Path):
    for top in ("src", "include", "python"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                yield path.relative_to(root).as_posix(), path.read_text(errors="replace")


def code_words(rel: str, text: str) -> set:
    """The identifiers and string literals of a file's code: comments and docstrings, which
    may mention anything, left out."""
    if rel.endswith(".py"):
        tree = ast.parse(text, rel)
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        words = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                words.add(n.id)
            elif isinstance(n, ast.Attribute):
                words.add(n.attr)
            elif isinstance(n, ast.alias):
                words.update(x for x in (n.name.split(".")[-1], n.asname) if x)
            elif isinstance(n, ast.ClassDef):
                words.add(n.name)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                words.add(n.value)
        return words
    code = re.sub(r"/\*.*?\*/", "", re.sub(r"//[^\n]*", "", text), flags=re.S)
    return set(re.findall(r"\w+", code)) | set(re.findall(r'"((?:[^"\\]|\\.)*)"', code))


def zoo_modules(root: Path) -> list:
    """Problems with the registered zoo modules; prints them."""
    files = dict(source_files(root))
    registered = {}
    for rel, text in files.items():
        if rel.startswith("src/zoo/"):
            for name in REGISTRATION.findall(text):
                registered.setdefault(name, []).append(rel)
    problems = [] if registered else ["src/zoo/: no LRNN_ZOO_MODULE(name) registration found"]
    words = {rel: code_words(rel, text) for rel, text in files.items()
             if rel in ZOO_GENERIC or (rel.startswith("python/lrnn/nn/") and "zoo_name" in text)}
    for name, where in sorted(registered.items()):
        if len(where) != 1:
            problems.append(f"zoo module {name}: registered in {where}")
        # its Python class: the one file under python/lrnn/nn/ whose code gives it as a zoo_name
        python = [rel for rel, w in words.items() if rel not in ZOO_GENERIC and "zoo_name" in w and name in w]
        if len(python) != 1:
            problems.append(f"zoo module {name}: one Python file under python/lrnn/nn/ should give it as a "
                            f"zoo_name; found {python}")
            continue
        classes = re.findall(r"^class (\w+)", files[python[0]], re.M)
        for rel in ZOO_GENERIC:
            for word in sorted(words.get(rel, set()) & set([name] + classes)):
                problems.append(f"zoo module {name}: {rel} names {word}; the binding and the exports are generic")
    print(f"zoo modules registered: {len(registered)}: " +
          ", ".join(f"{n} ({w[0]})" for n, w in sorted(registered.items())))
    return problems


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
    problems += zoo_modules(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
