"""Functions inside rule bodies, as PyNeuraLogic writes them: `F.tanh(R.a)`,
`F.slice(R.x, rows=(1, 3))`, `R.a + R.b` (sum), `R.a * R.b` (element-wise product),
`R.a @ R.b` (matrix product), `F.concat(R.a, R.b)`, nested freely.

lrnn's text format has no function literals, so a template lowers each one to a rule of its
own before the engine reads it: `h :- tanh(a(X)).` becomes

    h :- lrnn_fn1(X).
    lrnn_fn1(X) :- a(X). [activation=tanh]

The new head takes every variable of the wrapped literals, so each of its ground atoms has
exactly one grounding and its value is exactly the function of its inputs (the default
identity activation of the atom and `avg` of one grounding change nothing).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Tuple

from lrnn.core import dsl_classes
from lrnn.core.atoms import Atom
from lrnn.core.functions import COMBINATION, TRANSFORMATION, Function


class FContainer:
    """A function applied to literals (or to other containers) in a rule body."""

    __slots__ = ("nodes", "function")

    def __init__(self, nodes: Any, function: Function):
        if not isinstance(function, Function) or function.kind not in (TRANSFORMATION, COMBINATION):
            raise TypeError(f"a function in a rule body is a transformation or a combination, got {function!r}")
        nodes = tuple(nodes) if isinstance(nodes, (list, tuple)) else (nodes,)
        flat: List[Any] = []
        for node in nodes:
            if not isinstance(node, (Atom, FContainer)):
                raise TypeError(f"{function}(...) takes relations, got {type(node).__name__}: {node!r}")
            # a builtin in a sum (`R.f(T) + R.h(Z) + R.special.next(Z, T)`, as PyNeuraLogic
            # writes its recurrent rules) is a condition of the sum's body, not a term of it
            is_condition = isinstance(node, Atom) and node.special and not node.negated and function.name == "sum" \
                and function.kind == COMBINATION
            if isinstance(node, Atom) and (node.negated or node.special or node.hidden) and not is_condition:
                raise ValueError(f"{function}(...) needs literals with a value, got {node.to_str()}")
            # sums of sums (R.a + R.b + R.c) are one sum, as in PyNeuraLogic
            if isinstance(node, FContainer) and function.kind == COMBINATION and node.function == function:
                flat.extend(node.nodes)
            else:
                flat.append(node)
        if all(isinstance(n, Atom) and n.special for n in flat):
            raise ValueError(f"{function}(...) needs a literal with a value besides builtins")
        if function.kind == TRANSFORMATION and len(flat) != 1:
            raise ValueError(f"the transformation {function} applies to one relation, got {len(flat)}")
        self.nodes: Tuple[Any, ...] = tuple(flat)
        self.function = function

    def __add__(self, other: Any) -> "FContainer":
        from lrnn.core.functions import Combination

        return FContainer((self, other), Combination.SUM)

    def __mul__(self, other: Any) -> "FContainer":
        from lrnn.core.functions import Combination

        return FContainer((self, other), Combination.ELPRODUCT)

    def __matmul__(self, other: Any) -> "FContainer":
        from lrnn.core.functions import Combination

        return FContainer((self, other), Combination.PRODUCT)

    def __iter__(self) -> Iterator[Atom]:
        """The literals inside, depth first."""
        for node in self.nodes:
            if isinstance(node, FContainer):
                yield from node
            else:
                yield node

    def variables(self) -> List[Any]:
        """Every variable of the literals inside, in order of first appearance."""
        from lrnn.core.terms import Variable

        seen: List[Any] = []
        for atom in self:
            for term in atom.terms or ():
                if isinstance(term, Variable) and term not in seen:
                    seen.append(term)
        return seen

    def to_str(self) -> str:
        operator = {"sum": " + ", "elproduct": " * ", "product": " @ "}.get(self.function.name)
        if operator is not None and self.function.kind == COMBINATION:
            return operator.join(
                f"({n.to_str()})" if isinstance(n, FContainer) else n.to_str() for n in self.nodes
            )
        return f"{self.function}({', '.join(n.to_str() for n in self.nodes)})"

    __str__ = to_str

    def __repr__(self) -> str:
        return self.to_str()


def lower_literal(literal: Any, new_name: Callable[[], str], rules: List[str]) -> str:
    """The literal as the engine reads it: a plain literal stays, a literal with a function
    or a container becomes a call of a new predicate whose rule (appended to `rules`,
    innermost first) computes the function."""
    if isinstance(literal, Atom) and literal.body_function is None:
        return literal.to_str()
    if isinstance(literal, Atom):
        container = FContainer((literal._copy(body_function=None, weight=None),), literal.body_function)
        weight = literal.weight
    else:
        container, weight = literal, None
    head = Atom(new_name(), tuple(container.variables()) or None)
    body = [lower_literal(node, new_name, rules) for node in container.nodes]
    key = "activation" if container.function.kind == TRANSFORMATION else "combination"
    rules.append(f"{head.to_str()} :- {', '.join(body)}. [{key}={container.function}]")
    return head.to_str() if weight is None else f"{weight} {head.to_str()}"


# Atom's operators (+, *, @) and F.concat(...) build containers through the registry.
dsl_classes.register(FContainer)
