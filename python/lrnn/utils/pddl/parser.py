"""PDDL text as nested lists of strings (s-expressions): `(on ?x ?y)` is ["on", "?x", "?y"]."""

from __future__ import annotations

import re
from typing import Any, List

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def tokenize(text: str) -> List[str]:
    """Parentheses and words of `text`; a `;` starts a comment to the end of its line."""
    return _TOKEN.findall(re.sub(r";[^\n]*", "", text))


def parse_sexpr(tokens: List[str]) -> Any:
    """The first s-expression of `tokens` (consumed from the front): a list for `( ... )`,
    else the word. Unbalanced parentheses are refused rather than guessed."""
    if not tokens:
        return None
    token = tokens.pop(0)
    if token == ")":
        raise ValueError("PDDL: a ')' closes nothing")
    if token != "(":
        return token
    items: List[Any] = []
    while tokens and tokens[0] != ")":
        items.append(parse_sexpr(tokens))
    if not tokens:
        raise ValueError("PDDL: a '(' is never closed")
    tokens.pop(0)
    return items


class PDDLReader:
    """Reads a PDDL domain or problem (a file, or its text) into its s-expression."""

    @staticmethod
    def parse_string(content: str) -> Any:
        return parse_sexpr(tokenize(content))

    @staticmethod
    def read(file_path: str) -> Any:
        with open(file_path) as f:
            return PDDLReader.parse_string(f.read())
