"""A PDDL problem: its initial state as facts and its goal as query atoms."""

from __future__ import annotations

from typing import Any, List

from lrnn.core.terms import C
from lrnn.core.atoms import Atom
from lrnn.utils.pddl.domain import literal, sections


def _ground(sexpr: Any) -> Atom:
    if isinstance(sexpr, list) and sexpr and sexpr[0] == "not":
        return ~_ground(sexpr[1])
    return literal(sexpr, variables=False)


class PDDLProblem:
    """A `(define (problem name) ...)`: name, domain, objects, init (facts), goal (atoms)."""

    def __init__(self, sexpr: Any):
        self.name = ""
        self.domain = ""
        self.objects: List[Any] = []
        self.init: List[Atom] = []
        self.goal: List[Atom] = []
        for item in sections(sexpr, "problem"):
            tag = item[0]
            if tag == "problem":
                self.name = item[1]
            elif tag == ":domain":
                self.domain = item[1]
            elif tag == ":objects":
                self.objects = item[1:]
            elif tag == ":init":
                self.init = [_ground(lit) for lit in item[1:]]
            elif tag == ":goal":
                goal = item[1] if len(item) > 1 else []
                parts = goal[1:] if goal and goal[0] == "and" else ([goal] if goal else [])
                self.goal = [_ground(lit) for lit in parts]

    def get_objects(self) -> List[Any]:
        """The objects as constants (a typed list's `- type` words left out)."""
        objects, skip = [], False
        for word in self.objects:
            if skip:
                skip = False
            elif word == "-":
                skip = True
            else:
                objects.append(C.get(word))
        return objects
