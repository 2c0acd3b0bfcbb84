"""Logic answers without learning: `template.query(goal, facts)` (PyNeuraLogic's
`model.query`), the same engine as `lrnn query`."""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Union

from lrnn.core.atoms import Atom

_INT = re.compile(r"-?\d+\Z")


def _goal_text(goal: Any) -> str:
    if isinstance(goal, Atom):
        if goal.weight is not None:
            raise ValueError(f"a query goal has no value: {goal.to_str()}")
        return goal.to_str()
    if isinstance(goal, str):
        return goal
    raise TypeError(f"a goal is a relation such as R.reachable(V.X, C.b), got {type(goal).__name__}")


def facts_text(facts: Optional[Iterable[Any]]) -> str:
    """Facts (relations, optionally valued) as one line of an examples file."""
    if facts is None:
        return ""
    if isinstance(facts, str):
        return facts
    from lrnn.dataset.samples import _check_fact

    parts = [_check_fact(f, "the facts of a query").to_str() for f in facts]
    return ", ".join(parts) + "." if parts else ""


def _value(text: str, is_number: bool, number: float) -> str:
    """A term of an answer as PyNeuraLogic gives it: its text (numbers too, `"-1"`), a quoted
    constant without its quotes."""
    if is_number:
        return text
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    return text


def query(template: Any, goal: Any, facts: Optional[Iterable[Any]] = None) -> Union[bool, List[Dict[str, Any]]]:
    """Every answer of `goal` against the template and the facts: a list of
    {variable: value} dicts (every value a str, numbers too, as in PyNeuraLogic), sorted as
    `lrnn query` prints them; True/False for a goal without variables."""
    from lrnn import _core

    variables, rows, ground = _core.answer_query(str(template), facts_text(facts), _goal_text(goal))
    if ground:
        return bool(rows)
    return [{v: _value(*cell) for v, cell in zip(variables, row)} for row in rows]
