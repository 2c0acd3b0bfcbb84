"""The DSL classes that a lower DSL module builds through an operator, found by name.

The four DSL modules import one way: functions < atoms < containers < rules. An operator of
a lower one builds objects of a higher one (`R.h <= R.b` a Rule, `R.a + R.b` and `F.tanh(R.a)`
an FContainer, `R.h | [...]` reads Metadata, `F.tanh(R.a)` checks for an Atom): it finds the
class here, registered by the module that defines it, instead of importing that module
(issue 31's import cycle of atoms, containers, functions and rules). lrnn.core imports all
four, and importing any of them runs lrnn.core first, so every class is registered before
an operator runs."""

from __future__ import annotations

from typing import Any, Dict

_classes: Dict[str, Any] = {}


def register(*classes: type) -> None:
    for cls in classes:
        _classes[cls.__name__] = cls


def get(name: str) -> Any:
    """The registered class `name` (Atom, FContainer, Rule, RuleBody, Metadata)."""
    try:
        return _classes[name]
    except KeyError:
        raise RuntimeError(f"the DSL class {name} is not registered yet: import lrnn.core first") from None
