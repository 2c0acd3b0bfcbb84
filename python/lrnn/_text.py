"""How Python values are written in lrnn's text format (LANGUAGE.md).

Every construct of the DSL prints itself through these helpers, so the text the package
hands to the C++ parser is the same canonical text the C++ printer writes.
"""

from __future__ import annotations

import math
import re

_IDENT = re.compile(r"[a-z][A-Za-z0-9_]*\Z")
_VARIABLE = re.compile(r"[A-Z_][A-Za-z0-9_]*\Z")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")


def format_number(x: float) -> str:
    """The shortest text that reads back as the same double (`1`, `0.5`, `1e-05`)."""
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"lrnn values must be finite numbers, got {x!r}")
    if x == 0.0:
        return "0"  # also -0.0: the parser reads "-0" as 0 anyway
    text = repr(x)
    if text.endswith(".0"):
        text = text[:-2]
    return text


def is_identifier(text: str) -> bool:
    """A bare constant or predicate name: starts with a lower-case letter."""
    return bool(_IDENT.match(text))


def is_variable_name(text: str) -> bool:
    return bool(_VARIABLE.match(text))


def is_number_text(text: str) -> bool:
    return bool(_NUMBER.match(text))


def quote(text: str) -> str:
    """A quoted string term: `'New York'` (backslash escapes quote and backslash)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def check_predicate_name(name: str) -> str:
    if not isinstance(name, str) or not is_identifier(name):
        raise ValueError(
            f"invalid predicate name {name!r}: a predicate starts with a lower-case letter "
            "and continues with letters, digits or '_'"
        )
    return name
