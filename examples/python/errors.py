"""Errors: a malformed template raises lrnn.LrnnError (a ValueError) whose message is
exactly what the CLI prints: file:line:col, the source line and a caret.

    python examples/python/errors.py
"""

import lrnn
from lrnn import Template

try:
    Template.from_string("h(X) :- a(X).\ng(X) :- b(X) c.\n", "model.lrnn")
except lrnn.LrnnError as e:
    print(e)
    print(f"-> {e.kind} error at line {e.line}, column {e.col}: {e.message}")
else:
    raise SystemExit("expected a parse error")
