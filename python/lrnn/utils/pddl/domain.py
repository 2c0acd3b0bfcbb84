"""A PDDL domain's actions as rules `effect :- precondition.` (PyNeuraLogic's conversion):
one rule per effect literal, its body the precondition's literals, `?x` the variable X."""

from __future__ import annotations

from typing import Any, Iterator, List, Union

from lrnn.core.terms import C, V
from lrnn.core.atoms import Atom, R
from lrnn.core.rules import Rule


class DeleteEffect:
    """A delete effect `(not (p ?x))` of an action: PyNeuraLogic writes it as a rule with the
    negated, hidden head `!*p(X) :- pre.` (its `~` marks the predicate hidden), and so does
    str() here. It is not a Rule: lrnn's programs have no negated heads (a least model only
    adds atoms, docs/language.md), so a template or a built dataset holding one refuses it."""

    __slots__ = ("head", "body")  # head: the deleted atom, written without the negation

    def __init__(self, head: Atom, body: List[Any]):
        self.head = head
        self.body = list(body)

    def to_str(self) -> str:
        return f"!*{self.head.atom_str()} :- " + ", ".join(lit.to_str() for lit in self.body)

    def __str__(self) -> str:
        return self.to_str() + "."

    def __repr__(self) -> str:
        return str(self)


def sections(sexpr: Any, kind: str) -> Iterator[List[Any]]:
    """The parenthesised parts of a `(define (kind name) ...)` (a domain or a problem);
    anything else is refused, naming what was found."""
    if not isinstance(sexpr, list) or not sexpr or sexpr[0] != "define":
        raise ValueError(f"PDDL: a {kind} starts with (define ({kind} name) ...), got {str(sexpr)[:80]!r}")
    return (item for item in sexpr[1:] if isinstance(item, list) and item)


def literal(sexpr: Any, variables: bool) -> Atom:
    """`(on ?x b)` as the atom on(X, b); `?x` is a variable only where `variables` (action
    schemata), and a term is never silently read as something else."""
    if not isinstance(sexpr, list) or not sexpr or not isinstance(sexpr[0], str):
        raise ValueError(f"PDDL: expected a literal such as (on ?x ?y), got {sexpr!r}")
    terms = []
    for term in sexpr[1:]:
        if not isinstance(term, str):
            raise ValueError(f"PDDL: a term of {sexpr!r} is a list ({term!r}); functions are not supported")
        if term.startswith("?"):
            if not variables:
                raise ValueError(f"PDDL: {term} in {sexpr!r} is a variable where only objects may stand")
            terms.append(V.get(term[1:]))
        else:
            terms.append(C.get(term))
    return R.get(sexpr[0])(*terms)


def conjunction(sexpr: Any) -> List[Any]:
    """The literals of `(and ...)` (nested ands flattened) or of one literal; `(not l)` is a
    negated atom (`~`). An empty condition `()` has no literals."""
    if not sexpr:
        return []
    if sexpr[0] == "and":
        return [lit for sub in sexpr[1:] for lit in conjunction(sub)]
    if sexpr[0] == "not":
        if len(sexpr) != 2:
            raise ValueError(f"PDDL: (not ...) takes one literal, got {sexpr!r}")
        return [~lit for lit in conjunction(sexpr[1])]
    return [literal(sexpr, variables=True)]


class Action:
    """A PDDL action: name, parameters, precondition and effect as read (s-expressions)."""

    def __init__(self, name: str, parameters: Any, precondition: Any, effect: Any):
        self.name = name
        self.parameters = parameters
        self.precondition = precondition
        self.effect = effect

    def to_rules(self) -> List[Union[Rule, DeleteEffect]]:
        """One rule `effect :- precondition.` per effect literal, in the effect's order; a
        delete effect is a DeleteEffect. An action without a precondition is refused (a rule
        needs a body)."""
        body = conjunction(self.precondition)
        if not body:
            raise ValueError(f"PDDL action {self.name!r} has no precondition: its effects would be rules without a body")
        rules: List[Union[Rule, DeleteEffect]] = []
        for head in conjunction(self.effect):
            if head.negated:
                rules.append(DeleteEffect(head._copy(negated=False), body))
            else:
                rules.append(Rule(head, body))
        return rules


class PDDLDomain:
    """A `(define (domain name) ...)`: its name, requirements, types, predicates and actions."""

    def __init__(self, sexpr: Any):
        self.name = ""
        self.requirements: List[Any] = []
        self.types: List[Any] = []
        self.predicates: List[Any] = []
        self.actions: List[Action] = []
        for item in sections(sexpr, "domain"):
            if item[0] == "domain":
                self.name = item[1]
            elif item[0] == ":action":
                self.actions.append(self._action(item))
            elif item[0] in (":requirements", ":types", ":predicates"):
                setattr(self, item[0][1:], item[1:])

    @staticmethod
    def _action(item: List[Any]) -> Action:
        fields = {":parameters": [], ":precondition": None, ":effect": None}
        i = 2
        while i < len(item):
            if item[i] in fields and i + 1 < len(item):
                fields[item[i]] = item[i + 1]
                i += 2
            else:
                i += 1
        return Action(item[1], fields[":parameters"], fields[":precondition"], fields[":effect"])

    def to_rules(self) -> List[Union[Rule, DeleteEffect]]:
        """Every action's rules, in the order the actions are written."""
        return [rule for action in self.actions for rule in action.to_rules()]
