"""The exception every engine error becomes in Python, and the warnings of the engine."""

from __future__ import annotations

from typing import Optional


class LrnnError(ValueError):
    """An lrnn error: `str(e)` is the complete diagnostic the CLI prints
    (`file:line:col: error: message`, the source line and a caret line).

    Attributes: `message` (without position), `kind` ("parse", "semantic", "limit",
    "shape", "io", "runtime"), `file`, `line`, `col` (None when unknown).
    """

    def __init__(
        self,
        diagnostic: str,
        message: Optional[str] = None,
        kind: str = "runtime",
        file: Optional[str] = None,
        line: Optional[int] = None,
        col: Optional[int] = None,
    ):
        super().__init__(diagnostic)
        self.message = diagnostic if message is None else message
        self.kind = kind
        self.file = file
        self.line = line
        self.col = col


class UnderivableQueryWarning(UserWarning):
    """A query that no rule or fact derives in its sample: it outputs 0 whatever the weights
    (docs/semantics.md "Underivable queries"). Usually a query beyond what the template
    covers (a position past its length, a predicate spelled differently in the data)."""
