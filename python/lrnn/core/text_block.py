"""Template statements that came as text (a file or a string), kept as the C++ printer
prints them: an entry of a Template (lrnn.core.template) beside rules and facts, and the
base of the nn layers' rule blocks (lrnn.nn.module.module)."""

from __future__ import annotations

from typing import List


class _TextBlock:
    """Statements that came as text (a file or a string), each kept in the C++ printer's
    canonical form, by kind."""

    __slots__ = ("predicates", "facts", "rules", "origin")

    def __init__(self, statements: tuple, origin: str):
        self.predicates, self.facts, self.rules = (list(x) for x in statements)
        self.origin = origin

    def __str__(self) -> str:
        return _layout(self.predicates, self.facts, self.rules)

    def __repr__(self) -> str:
        return f"<template text from {self.origin}>"


def _layout(predicates: List[str], facts: List[str], rules: List[str]) -> str:
    """The C++ printer's layout: declarations, facts, rules, a blank line between groups."""
    groups = [g for g in (predicates, facts, rules) if g]
    return "\n".join("".join(line + "\n" for line in g) for g in groups)
