"""PyNeuraLogic's numbering of a template's weights, for `parameters()["weights"]`.

PyNeuraLogic keys a model's weights by an integer: the order in which its parser meets each
weight in the template text - statement by statement, in a rule the head's weight before the
body literals' weights, left to right; a named weight (`$w=...`) takes a number where it first
appears and keeps it; fixed weights (`<...>`) take a number too but are not parameters. lrnn's
engine names the same weights `rule3.head`, `rule3.body1`, `fact0.p` and `$w`. This module walks
the template's entries in the order added (PyNeuraLogic's text of each, or the DSL rule) and
pairs each of PyNeuraLogic's numbers with the engine name of the same weight, found in the
text the engine was given.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

_NAMED = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\s*=")
_DECLARATION = re.compile(r"^[A-Za-z_@$][\w]*\s*/\s*\d+(\s|$)")
_OPEN, _CLOSE = "([{<", ")]}>"


def _split_top(text: str, separator: str) -> List[str]:
    """`text` cut at each `separator` outside brackets and quotes."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE and depth > 0:
            # `:-` never closes anything; `<` and `>` only bracket weights at a literal's start
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            i += len(separator)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _statement_body(line: str) -> Optional[str]:
    """The statement of one template line without its final `.` and trailing `[...]`
    metadata, or None for a predicate declaration, a comment or a blank line."""
    line = line.strip()
    if not line or line.startswith(("%", "#", "//")) or _DECLARATION.match(line):
        return None
    pieces = _split_top(line, ".")
    # the statement ends at the first top-level `.` (numbers inside weights are bracketed,
    # a bare leading number like `2 zz.` is handled by joining numeric pieces back)
    statement = pieces[0]
    k = 1
    while k < len(pieces) and re.fullmatch(r"-?\d*", statement.strip().split()[-1] if statement.strip() else "") \
            and pieces[k][:1].isdigit():
        statement += "." + pieces[k]
        k += 1
    return statement if k < len(pieces) else None


def _weight_of(literal: str) -> Optional[Tuple[Optional[str], bool]]:
    """(name or None, fixed) of the weight written before a literal, or None if it has none."""
    literal = literal.strip()
    named = _NAMED.match(literal)
    if named:
        rest = literal[named.end():].lstrip()
        return named.group(1), rest.startswith("<")
    if literal[:1] in "[{<" or re.match(r"-?\d", literal):
        return None, literal.startswith("<")
    return None


def _is_bare_weight(literal: str) -> bool:
    """Whether a body element is a weight alone (a rule's offset), not a weighted literal."""
    literal = literal.strip()
    named = _NAMED.match(literal)
    if named:
        literal = literal[named.end():].lstrip()
    if re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", literal):
        return True
    if literal[:1] in "[{<":
        depth = 0
        for i, c in enumerate(literal):
            depth += c in _OPEN
            depth -= c in _CLOSE
            if depth == 0:
                return not literal[i + 1:].strip()
    return False


def _statement_weights(statement: str) -> Tuple[bool, List[Tuple[str, Optional[str], bool, str]]]:
    """(is a rule, [(slot, name, fixed, literal)]) of one statement's weights in
    PyNeuraLogic's order: slot is `head`, `body<j>` or `fact`, literal the weighted
    literal's text."""
    sides = _split_top(statement, ":-")
    if len(sides) == 2:
        found = []
        head = _weight_of(sides[0])
        if head is not None:
            found.append(("head", *head, sides[0].strip()))
        for j, literal in enumerate(_split_top(sides[1], ",")):
            weight = _weight_of(literal)
            if weight is not None:
                slot = "offset" if _is_bare_weight(literal) else f"body{j}"
                found.append((slot, *weight, literal.strip()))
        return True, found
    weight = _weight_of(statement)
    return False, ([("fact", *weight, statement.strip())] if weight is not None else [])


def _rule_weights(rule: Any) -> List[Tuple[Optional[str], bool, str]]:
    """(name, fixed, literal) of a DSL rule's weights in PyNeuraLogic's order: the head's,
    then the body's left to right, into functions and sums (`R.a[2, 2] + R.b[2, 2]`), then
    the offset."""
    from lrnn.core.atoms import Atom
    from lrnn.core.containers import FContainer

    found: List[Tuple[Optional[str], bool, str]] = []

    def visit(node: Any) -> None:
        if isinstance(node, FContainer):
            for inner in node.nodes:
                visit(inner)
        elif isinstance(node, Atom):
            if node.body_function is not None:
                found.extend(_atom_weight(node._copy(body_function=None)))
            else:
                found.extend(_atom_weight(node))

    found.extend(_atom_weight(rule.head))
    for node in rule.body:
        visit(node)
    if rule.offset is not None:
        found.append((rule.offset.name, bool(rule.offset.is_fixed), str(rule.offset)))
    return found


def _atom_weight(atom: Any) -> List[Tuple[Optional[str], bool, str]]:
    weight = atom.weight
    if weight is None:
        return []
    return [(weight.name, bool(weight.is_fixed), atom.to_str())]


_DECLARED_OFFSET = re.compile(r"^[@*]?([A-Za-z_]\w*)\s*/\s*(\d+)\s+(?!\[\s*[A-Za-z_]\w*\s*=)(\$([A-Za-z_]\w*)\s*=)?\S")


def declared_offsets(entries: List[Any]) -> Tuple[str, ...]:
    """The engine names of the predicates' declared offsets (`p/1 {3, 1}`, `R.p / 1 [...]`
    with an offset), in the order declared: `p/1.offset`, or `$name` for a named one.
    A declaration's metadata `[key=value]` is not an offset."""
    from lrnn.core.atoms import PredicateDecl

    names: List[str] = []
    for entry in entries:
        if isinstance(entry, PredicateDecl):
            if entry.offset is not None:
                p = entry.predicate
                names.append(f"${entry.offset.name}" if entry.offset.name else f"{p.name}/{p.arity}.offset")
            continue
        for line in getattr(entry, "predicates", ()):
            m = _DECLARED_OFFSET.match(line.strip())
            if m:
                names.append(f"${m.group(4)}" if m.group(4) else f"{m.group(1)}/{m.group(2)}.offset")
    return tuple(names)


def pnl_numbering(entries: List[Tuple[Any, List[str], List[str]]], engine_names: List[str],
                  offsets: Tuple[str, ...] = ()) -> List[Tuple[int, str]]:
    """(PyNeuraLogic's index, engine name) of each weight the engine has, in index order.

    `offsets` are the engine names of the predicates' declared offsets (`p/1 {3, 1}` is
    `p/1.offset`) in the order declared: PyNeuraLogic numbers them after every rule and fact
    (observed with 0.9.2: `a / 0 {1}` written first still takes the last index but one).

    `entries` are the template's entries in the order added, each as (its statements as
    PyNeuraLogic prints them - or the DSL Rule itself -, the fact lines and the rule lines it puts in the engine's
    text). The engine's text holds every entry's fact lines, then every entry's rule lines;
    the engine numbers facts (`fact<i>.`) and rules (`rule<k>.`) in that text's order."""
    fact_names: Dict[int, str] = {}
    for name in engine_names:
        m = re.fullmatch(r"fact(\d+)\..+", name)
        if m:
            fact_names[int(m.group(1))] = name
    known = set(engine_names)

    # the engine's weights of each entry: (engine name or None, named, fixed, literal)
    engine_weights: List[List[Tuple[Optional[str], Optional[str], bool, str]]] = [[] for _ in entries]
    fact_index, rule_index = 0, 0
    for group in (1, 2):
        for e, entry in enumerate(entries):
            for line in entry[group]:
                statement = _statement_body(line)
                if statement is None:
                    continue
                is_rule, weights = _statement_weights(statement)
                if is_rule:
                    for slot, name, fixed, literal in weights:
                        engine_weights[e].append((f"${name}" if name else f"rule{rule_index}.{slot}", name, fixed, literal))
                    rule_index += 1
                else:
                    for _slot, name, fixed, literal in weights:
                        engine_weights[e].append((f"${name}" if name else fact_names.get(fact_index), name, fixed, literal))
                    fact_index += 1

    numbered: List[Tuple[int, str]] = []
    named_seen: Dict[str, int] = {}
    next_index = 0
    for e, entry in enumerate(entries):
        # an entry's unnamed weights pair with the engine's: the same weighted literal first
        # (a lowered rule moves literals into helper rules), else in order with the same
        # fixedness (a lowered spelling may add fixed constants)
        unclaimed = [w for w in engine_weights[e] if w[1] is None]
        pnl = entry[0]
        if isinstance(pnl, list):
            weights = []
            for line in pnl:
                statement = _statement_body(line)
                if statement is not None:
                    weights += [(name, fixed, literal) for _slot, name, fixed, literal in _statement_weights(statement)[1]]
        else:
            weights = _rule_weights(pnl)
        for name, fixed, literal in weights:
            engine_name: Optional[str] = None
            if name is not None:
                if name in named_seen:
                    continue
                named_seen[name] = next_index
                engine_name = f"${name}"
            else:
                match = next((w for w in unclaimed if w[3] == literal), None) or \
                    next((w for w in unclaimed if w[2] == fixed), None)
                if match is not None:
                    unclaimed.remove(match)
                    engine_name = match[0]
            if engine_name is not None and engine_name in known:
                numbered.append((next_index, engine_name))
            next_index += 1
    for engine_name in offsets:
        if engine_name.startswith("$") and engine_name[1:] in named_seen:
            continue  # a named weight keeps the number it took where it first appeared
        if engine_name in known:
            numbered.append((next_index, engine_name))
        next_index += 1
    return numbered
