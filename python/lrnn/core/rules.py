"""Rules `R.h(V.X) <= (R.a(V.X), R.b(V.X))` (or `<= R.a(V.X) & R.b(V.X)`), their offset
and their metadata `| [F.relu, Aggregation.SUM]` / `| Metadata(...)`."""

from __future__ import annotations

import numbers
from typing import Any, Iterable, List, Optional

import numpy as np

from lrnn.core import dsl_classes
from lrnn.core.atoms import Atom
from lrnn.core.terms import AllVariables, Variable
from lrnn.core.containers import FContainer, lower_literal
from lrnn.core.functions import AGGREGATION, COMBINATION, TRANSFORMATION, Function
from lrnn.core.values import Weight


class Metadata:
    """A rule's (or a predicate's) `[key=value, ...]` list. Entries print in the order
    transformation, combination, aggregation, learnable, duplicate_grounding, normalization; the
    activation prints as `transformation=`, PyNeuraLogic's key (lrnn's parser reads it as
    `activation=`). `normalization="batch"` (predicates only, lrnn's own: PyNeuraLogic has no
    batch norm) is `P/n [normalization=batch]` (docs/language.md)."""

    __slots__ = ("transformation", "combination", "aggregation", "learnable", "duplicate_grounding", "normalization")

    def __init__(
        self,
        learnable: Optional[bool] = None,
        transformation: Optional[Function] = None,
        combination: Optional[Function] = None,
        aggregation: Optional[Function] = None,
        duplicate_grounding: Optional[bool] = None,
        *,
        activation: Optional[Function] = None,
        normalization: Optional[str] = None,
    ):
        if activation is not None:
            if transformation is not None:
                raise TypeError("give either activation= or transformation= (they are the same key)")
            transformation = activation
        self.transformation = _check_kind(transformation, TRANSFORMATION, "transformation")
        self.combination = _check_kind(combination, COMBINATION, "combination")
        self.aggregation = _check_kind(aggregation, AGGREGATION, "aggregation")
        self.learnable = learnable
        self.duplicate_grounding = duplicate_grounding
        if normalization not in (None, "batch"):
            raise ValueError(f"unknown normalization {normalization!r} (valid: 'batch')")
        self.normalization = normalization

    @staticmethod
    def from_iterable(entries: Iterable[Any]) -> "Metadata":
        meta = Metadata()
        for entry in entries:
            if not isinstance(entry, Function) and callable(entry):
                entry = entry()
            if not isinstance(entry, Function):
                raise TypeError(f"invalid metadata entry {entry!r}: use F.*, Transformation.*, Combination.* or Aggregation.*")
            slot = entry.kind
            if getattr(meta, slot) is not None:
                raise ValueError(f"two {slot} functions in one metadata list: {getattr(meta, slot)} and {entry}")
            setattr(meta, slot, entry)
        return meta

    @staticmethod
    def coerce(value: Any) -> "Metadata":
        if isinstance(value, Metadata):
            return value
        if isinstance(value, Function):
            return Metadata.from_iterable([value])
        if isinstance(value, (list, tuple)):
            return Metadata.from_iterable(value)
        raise TypeError(f"metadata is a list of functions or a Metadata(...), got {type(value).__name__}")

    def entries(self) -> List[tuple]:
        out = []
        if self.transformation is not None:
            out.append(("transformation", str(self.transformation)))
        if self.combination is not None:
            out.append(("combination", str(self.combination)))
        if self.aggregation is not None:
            out.append(("aggregation", str(self.aggregation)))
        if self.learnable is not None:
            out.append(("learnable", "true" if self.learnable else "false"))
        if self.duplicate_grounding is not None:
            out.append(("duplicate_grounding", "true" if self.duplicate_grounding else "false"))
        if self.normalization is not None:
            out.append(("normalization", self.normalization))
        return out

    def __len__(self) -> int:
        return len(self.entries())

    def __str__(self) -> str:
        return "[" + ", ".join(f"{k}={v}" for k, v in self.entries()) + "]"

    def __repr__(self) -> str:
        return f"Metadata{self}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metadata) and self.entries() == other.entries()

    def __add__(self, other: "Metadata") -> "Metadata":
        """PyNeuraLogic's combine: entries of `other` win."""
        pick = lambda a, b: b if b is not None else a  # noqa: E731
        return Metadata(
            learnable=pick(self.learnable, other.learnable),
            transformation=pick(self.transformation, other.transformation),
            combination=pick(self.combination, other.combination),
            aggregation=pick(self.aggregation, other.aggregation),
            duplicate_grounding=pick(self.duplicate_grounding, other.duplicate_grounding),
            normalization=pick(self.normalization, other.normalization),
        )

    combine = __add__

    def copy(self) -> "Metadata":
        return Metadata() + self


def _check_kind(function: Optional[Function], kind: str, key: str) -> Optional[Function]:
    if function is None:
        return None
    if not isinstance(function, Function) and callable(function):
        function = function()
    if not isinstance(function, Function) or function.kind != kind:
        raise TypeError(f"{key}= takes a {kind} function, got {function!r}")
    return function


def _is_offset(item: Any) -> bool:
    return isinstance(item, (Weight, numbers.Real, np.ndarray, list)) and not isinstance(item, bool)


class RuleBody:
    """`R.a(V.X) & R.b(V.X)`: body literals (and at most one offset) before `<=` sees them."""

    __slots__ = ("literals", "metadata")

    def __init__(self, literals: List[Any], metadata: Optional[Metadata] = None):
        self.literals = list(literals)
        self.metadata = metadata

    def __and__(self, other: Any) -> "RuleBody":
        if isinstance(other, RuleBody):
            return RuleBody(self.literals + other.literals, self.metadata or other.metadata)
        if isinstance(other, (Atom, FContainer)) or _is_offset(other):
            return RuleBody(self.literals + [other], self.metadata)
        raise TypeError(f"cannot add {type(other).__name__} to a rule body")

    def __or__(self, metadata: Any) -> "RuleBody":
        return RuleBody(self.literals, Metadata.coerce(metadata))

    def __str__(self) -> str:
        return ", ".join(x.to_str() if isinstance(x, (Atom, FContainer)) else str(x) for x in self.literals)

    def __repr__(self) -> str:
        return str(self)


class Rule:
    """`head :- body, offset. [metadata]`."""

    __slots__ = ("head", "body", "offset", "metadata")

    def __init__(self, head: Atom, body: Any, metadata: Optional[Metadata] = None):
        if not isinstance(head, Atom):
            raise TypeError(f"a rule head is a relation, got {type(head).__name__}")
        if head.negated or head.soft_negated or head.transposed or head.special or head.body_function is not None:
            raise ValueError(f"a rule head cannot be negated, transposed or a builtin: {head.to_str()}")
        self.head = head
        self.metadata = metadata
        if isinstance(body, RuleBody):
            if body.metadata is not None and metadata is None:
                self.metadata = body.metadata
            items = body.literals
        elif isinstance(body, (Atom, Weight, FContainer)) or (_is_offset(body) and not isinstance(body, list)):
            items = [body]
        elif isinstance(body, (tuple, list)):
            items = list(body)
        else:
            try:
                items = list(body)
            except TypeError:
                raise TypeError(f"a rule body is a relation, a tuple/list of relations or a & b, got {type(body).__name__}") from None
        self.body: List[Any] = []  # Atoms, and FContainers (functions in the body)
        self.offset: Optional[Weight] = None
        for item in items:
            self._add(item)
        if not self.body:
            raise ValueError(f"the rule for {head.to_str()} has an empty body")
        self._expand_all_variables()

    def _expand_all_variables(self) -> None:
        """`R.special.alldiff(...)`: `...` is every variable of the rule (PyNeuraLogic's
        alldiff over all of them), written out here; `...` in any other literal is refused."""
        literals = [self.head] + [x for x in self.body if isinstance(x, Atom)]
        if not any(isinstance(t, AllVariables) for lit in literals for t in lit.terms):
            return
        variables: List[Any] = []
        for lit in literals:
            for t in lit.terms:
                if isinstance(t, Variable) and t not in variables:
                    variables.append(t)
        for i, item in enumerate(self.body):
            if not isinstance(item, Atom) or not any(isinstance(t, AllVariables) for t in item.terms):
                continue
            if not (item.special and item.name == "alldiff"):
                raise ValueError(f"`...` (all the rule's variables) is for R.special.alldiff(...), not {item.to_str()}")
            given = [t for t in item.terms if not isinstance(t, AllVariables)]
            self.body[i] = item._copy(terms=tuple(given + [v for v in variables if v not in given]))
        if any(isinstance(t, AllVariables) for t in self.head.terms):
            raise ValueError(f"`...` cannot be a term of the rule head {self.head.to_str()}")

    def _add(self, item: Any) -> None:
        if isinstance(item, (Atom, FContainer)):
            self.body.append(item)
        elif _is_offset(item):
            if self.offset is not None:
                raise ValueError(f"a rule has at most one offset; {self.head.to_str()} got {self.offset} and {item}")
            self.offset = item if isinstance(item, Weight) else Weight.value(item)
            if self.offset.kind == Weight.REFERENCE and self.offset.name is None:
                raise ValueError("invalid offset")
        else:
            raise TypeError(
                f"{item!r} ({type(item).__name__}) cannot be part of a rule body: use relations, "
                "and at most one offset (a number, list, array or W[...])"
            )

    def _copy(self) -> "Rule":
        rule = Rule.__new__(Rule)
        rule.head, rule.body, rule.offset, rule.metadata = self.head, list(self.body), self.offset, self.metadata
        return rule

    def __and__(self, other: Any) -> "Rule":
        """PyNeuraLogic: `(R.h <= R.a) & R.b` appends to the body."""
        rule = self._copy()
        for item in other.literals if isinstance(other, RuleBody) else (other if isinstance(other, (list, tuple)) else [other]):
            rule._add(item)
        return rule

    def __or__(self, metadata: Any) -> "Rule":
        rule = self._copy()
        rule.metadata = Metadata.coerce(metadata)
        return rule

    def to_str(self) -> str:
        parts = [lit.to_str() for lit in self.body]
        if self.offset is not None:
            parts.append(str(self.offset))
        text = f"{self.head.to_str()} :- {', '.join(parts)}."
        if self.metadata is not None and len(self.metadata):
            text += f" {self.metadata}"
        return text

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return self.to_str()

    def has_body_functions(self) -> bool:
        return any(isinstance(x, FContainer) or x.body_function is not None for x in self.body)

    def lowered(self, new_name: Any) -> List[str]:
        """The rule as the engine reads it: functions in the body become rules of their own
        (lrnn.core.containers), listed before this one; `new_name()` names each."""
        if not self.has_body_functions():
            return [self.to_str()]
        helpers: List[str] = []
        parts = [lower_literal(lit, new_name, helpers) for lit in self.body]
        if self.offset is not None:
            parts.append(str(self.offset))
        text = f"{self.head.to_str()} :- {', '.join(parts)}."
        if self.metadata is not None and len(self.metadata):
            text += f" {self.metadata}"
        return helpers + [text]


# Atom's operators (<=, &, |) build rules and read metadata through the registry.
dsl_classes.register(Metadata, RuleBody, Rule)
