"""Activation (transformation), combination and aggregation functions (docs/language.md
"Functions"), under PyNeuraLogic's names: `Transformation.SIGMOID`, `Combination.PRODUCT`,
`Aggregation.SOFTMAX(agg_terms=["J"])`, and the flat namespace `F` (`F.relu`, `F.product`,
`F.softmax_agg(agg_terms=[V.J])`, ...)."""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Optional, Sequence, Tuple

import numpy as np

from lrnn import _text
from lrnn.core import dsl_classes

TRANSFORMATION, COMBINATION, AGGREGATION = "transformation", "combination", "aggregation"

# The metadata key each kind is written under (docs/language.md: `activation`, alias `transformation`).
META_KEY = {TRANSFORMATION: "activation", COMBINATION: "combination", AGGREGATION: "aggregation"}


def _meta_arg(value: Any) -> str:
    """A metadata argument in the parser's canonical form: `J`, `0.5`, `(0,2)`."""
    from lrnn.core.terms import Term

    if isinstance(value, Term):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return _text.format_number(value)
    if isinstance(value, str):
        if _text.is_identifier(value) or _text.is_variable_name(value) or _text.is_number_text(value):
            return value
        raise ValueError(f"invalid function argument {value!r}")
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_meta_arg(v) for v in value) + ")"
    raise TypeError(f"{value!r} cannot be a function argument")


class Function:
    """A function as written in metadata: `sigmoid`, `softmax(J)`, `slice(rows=(0,2))`."""

    __slots__ = ("kind", "name", "args", "kwargs")

    def __init__(self, kind: str, name: str, args: Sequence[str] = (), kwargs: Sequence[Tuple[str, str]] = ()):
        self.kind = kind
        self.name = name
        self.args = tuple(args)
        self.kwargs = tuple(kwargs)

    def __str__(self) -> str:
        parts = list(self.args) + [f"{k}={v}" for k, v in self.kwargs]
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    def __repr__(self) -> str:
        return f"{self.kind}:{self}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Function) and (self.kind, self.name, self.args, self.kwargs) == (
            other.kind,
            other.name,
            other.args,
            other.kwargs,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.name, self.args, self.kwargs))

    def meta_key(self) -> str:
        return META_KEY[self.kind]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:
            return self
        if self.kind == TRANSFORMATION and len(args) == 1 and not kwargs:
            return apply_to_body(self, args[0])
        if self.kind == COMBINATION and args and not kwargs:
            return dsl_classes.get("FContainer")(args, self)
        raise TypeError(
            f"{self.kind} function '{self.name}' takes no arguments here: attach it to a rule, "
            "(head <= body) | [F.relu], or apply it to body relations, F.relu(R.a)"
        )


def apply_to_body(function: Function, literal: Any) -> Any:
    """PyNeuraLogic's `F.tanh(R.a)` in a rule body: the literal's value goes through the
    function (lrnn.core.containers lowers it to a rule of its own)."""
    Atom, FContainer = dsl_classes.get("Atom"), dsl_classes.get("FContainer")

    if isinstance(literal, Atom):
        if function.name == "identity":
            return literal
        # the two the text format writes on a literal itself: k(J)^T and ~a
        if function.name == "transpose" and literal.body_function is None:
            return literal.T
        if function.name == "reverse" and literal.body_function is None:
            return -literal
        return literal.attach_function(function)
    if isinstance(literal, FContainer):
        return FContainer((literal,), function)
    raise TypeError(f"{function.name}(...) applies to a relation, got {type(literal).__name__}")


class _Slice(Function):
    """`F.slice(rows=(0, 2), cols=(1, 3))`: rows/cols are half-open [begin, end) ranges."""

    __slots__ = ()

    def __call__(self, relation: Any = None, *, rows: Any = ..., cols: Any = ...) -> Any:
        kwargs = []
        for key, rng in (("rows", rows), ("cols", cols)):
            if rng is ... or rng is None:
                continue
            if len(rng) != 2:
                raise ValueError(f"slice {key} is a (begin, end) pair, got {rng!r}")
            kwargs.append((key, _meta_arg(tuple(int(x) for x in rng))))
        if not kwargs:
            raise ValueError("slice needs rows=(begin, end) and/or cols=(begin, end)")
        function = _Slice(TRANSFORMATION, "slice", (), kwargs)
        if relation is not None:
            return apply_to_body(function, relation)
        return function


class _LeakyRelu(Function):
    """`F.leaky_relu` (slope 0.01 below 0), `F.leaky_relu(alpha=0.2)`: written `leaky_relu(0.2)`;
    `F.leaky_relu(R.a, alpha=0.2)` in a body."""

    __slots__ = ()

    def __call__(self, relation: Any = None, *, alpha: Any = None) -> Any:
        function: Function = self
        if alpha is not None:
            if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not np.isfinite(float(alpha)):
                raise ValueError(f"leaky_relu's alpha is a finite number, got {alpha!r}")
            function = _LeakyRelu(TRANSFORMATION, "leaky_relu", (_meta_arg(float(alpha)),))
        return function if relation is None else apply_to_body(function, relation)


class _Reshape(Function):
    """`F.reshape(shape=(2, 3))` (or `F.reshape(2, 3)`): written `reshape(2,3)`."""

    __slots__ = ()

    def __call__(self, *dims: Any, shape: Any = None) -> Any:
        if shape is None:
            shape = dims
        elif dims:
            raise TypeError("give the shape either positionally or as shape=(rows, cols)")
        if isinstance(shape, numbers.Integral):
            shape = (shape,)
        shape = tuple(shape)
        if len(shape) not in (1, 2) or any(
            isinstance(d, bool) or not isinstance(d, numbers.Integral) or d <= 0 for d in shape
        ):
            raise ValueError(f"reshape takes one or two positive dimensions, got {shape!r}")
        return _Reshape(TRANSFORMATION, "reshape", tuple(str(int(d)) for d in shape))


class _SoftmaxAggregation(Function):
    """`Aggregation.SOFTMAX(agg_terms=["J"])` / `F.softmax_agg(agg_terms=[V.J])`: written
    `softmax(J)`, normalising across the groundings that differ only in J."""

    __slots__ = ()

    def __call__(self, *, agg_terms: Optional[Iterable[Any]] = None) -> Any:
        if agg_terms is None:
            return _SoftmaxAggregation(AGGREGATION, "softmax")
        from lrnn.core.terms import Variable

        names = []
        for term in agg_terms:
            name = term.name if isinstance(term, Variable) else term
            if not isinstance(name, str) or not _text.is_variable_name(name):
                raise TypeError(f"softmax aggregates over variables (V.J or 'J'), got {term!r}")
            names.append(name)
        if not names:
            raise ValueError("softmax agg_terms needs at least one variable")
        return _SoftmaxAggregation(AGGREGATION, "softmax", tuple(names))


class _Concat(Function):
    """`F.concat` / `Combination.CONCAT(axis=...)`: only the default axis is supported."""

    __slots__ = ()

    def __call__(self, *relations: Any, axis: int = -1) -> Any:
        if relations:
            return Function.__call__(self, *relations)
        if axis != -1:
            raise ValueError("lrnn's concat joins values into one column vector; it takes no axis")
        return self


def _t(name: str) -> Function:
    return Function(TRANSFORMATION, name)


def _c(name: str) -> Function:
    return Function(COMBINATION, name)


def _a(name: str) -> Function:
    return Function(AGGREGATION, name)


class Transformation:
    """Activation functions (applied to a rule neuron's or an atom neuron's value)."""

    # element-wise
    IDENTITY = _t("identity")
    SIGMOID = _t("sigmoid")
    TANH = _t("tanh")
    RELU = _t("relu")
    LEAKY_RELU = _LeakyRelu(TRANSFORMATION, "leaky_relu")
    EXP = _t("exp")
    LOG = _t("log")
    SQRT = _t("sqrt")
    INVERSE = _t("inverse")
    REVERSE = _t("reverse")
    SIGNUM = _t("signum")
    LUKASIEWICZ = _t("lukasiewicz")
    # on the whole value
    SOFTMAX = _t("softmax")
    SPARSEMAX = _t("sparsemax")
    NORM = _t("norm")
    TRANSP = _t("transpose")
    TRANSPOSE = TRANSP
    SLICE = _Slice(TRANSFORMATION, "slice")
    RESHAPE = _Reshape(TRANSFORMATION, "reshape")


class Combination:
    """How a rule's weighted inputs (or an atom's rules) combine."""

    SUM = _c("sum")
    AVG = _c("avg")
    MAX = _c("max")
    MIN = _c("min")
    COUNT = _c("count")
    PRODUCT = _c("product")
    ELPRODUCT = _c("elproduct")
    CONCAT = _Concat(COMBINATION, "concat")
    CROSSSUM = _c("crosssum")
    COSSIM = _c("cossim")
    SOFTMAX = _c("softmax")


class Aggregation:
    """How the groundings of one rule for one head aggregate."""

    SUM = _a("sum")
    AVG = _a("avg")
    MAX = _a("max")
    MIN = _a("min")
    COUNT = _a("count")
    CONCAT = _a("concat")
    SOFTMAX = _SoftmaxAggregation(AGGREGATION, "softmax")
    PRODUCT = _a("product")  # element-wise, over the groundings


class F:
    """PyNeuraLogic's flat namespace: transformations by name, combinations by name,
    aggregations with an `_agg` suffix."""

    identity = Transformation.IDENTITY
    sigmoid = Transformation.SIGMOID
    tanh = Transformation.TANH
    relu = Transformation.RELU
    leaky_relu = Transformation.LEAKY_RELU
    exp = Transformation.EXP
    log = Transformation.LOG
    sqrt = Transformation.SQRT
    inverse = Transformation.INVERSE
    reverse = Transformation.REVERSE
    signum = Transformation.SIGNUM
    lukasiewicz = Transformation.LUKASIEWICZ
    softmax = Transformation.SOFTMAX
    sparsemax = Transformation.SPARSEMAX
    norm = Transformation.NORM
    transp = Transformation.TRANSP
    transpose = Transformation.TRANSP
    slice = Transformation.SLICE
    reshape = Transformation.RESHAPE

    sum = Combination.SUM
    avg = Combination.AVG
    max = Combination.MAX
    min = Combination.MIN
    count = Combination.COUNT
    product = Combination.PRODUCT
    elproduct = Combination.ELPRODUCT
    concat = Combination.CONCAT
    crosssum = Combination.CROSSSUM
    crossum = Combination.CROSSSUM  # PyNeuraLogic's spelling
    cossim = Combination.COSSIM
    softmax_comb = Combination.SOFTMAX

    sum_agg = Aggregation.SUM
    avg_agg = Aggregation.AVG
    max_agg = Aggregation.MAX
    min_agg = Aggregation.MIN
    count_agg = Aggregation.COUNT
    concat_agg = Aggregation.CONCAT
    softmax_agg = Aggregation.SOFTMAX
    product_agg = Aggregation.PRODUCT
