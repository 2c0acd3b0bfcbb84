"""How Python values are written in lrnn's text format (docs/language.md).

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
    """The shortest text that reads back as the same double, chosen exactly as C++'s
    std::to_chars (the C++ printer) chooses it: the shortest round-trip digits, written
    in fixed or scientific notation, whichever is shorter (fixed on a tie)."""
    x = float(x)
    text = repr(x)
    # Fast path: a non-integer in fixed notation with at most two zeros after the point is
    # never longer than its scientific form, so to_chars writes what repr writes.
    if "e" not in text and "n" not in text and not text.endswith(".0") and abs(x) >= 1e-3:
        return text
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"lrnn values must be finite numbers, got {x!r}")
    if x == 0.0:
        return "0"  # -0.0 too: it reads back equal, and the parser gives 0 for "-0" anyway
    sign = "-" if x < 0 else ""
    # repr gives the shortest round-trip digits; take them apart.
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # position of the decimal point relative to the first significant digit
    point = len(int_part.lstrip("0")) if int_part.strip("0") else -(len(frac_part) - len(frac_part.lstrip("0")))
    point += exponent
    digits = digits.rstrip("0") or "0"
    # fixed notation
    if point <= 0:
        fixed = "0." + "0" * (-point) + digits
    elif point >= len(digits):
        # an integer: to_chars writes the double's exact integer value, not padded digits
        fixed = str(int(abs(x)))
    else:
        fixed = digits[:point] + "." + digits[point:]
    # scientific notation: d.ddde+XX (at least two exponent digits)
    sci_exp = point - 1
    sci = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    sci += "e" + ("-" if sci_exp < 0 else "+") + f"{abs(sci_exp):02d}"
    return sign + (fixed if len(fixed) <= len(sci) else sci)


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
