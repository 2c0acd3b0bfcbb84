"""Relations (atoms and literals) and predicates: `R.p(V.X, C.a)`, `R.p / 2`,
`R.special.leq(V.J, V.I)` (`@leq`), `R.hidden.edge` (`*edge`), `~R.a` (negation as failure,
`!a`, as in PyNeuraLogic), `-R.a` (soft negation, 1 - x), `R.k(V.J).T` (transposed),
`R.p(V.X)[3, 3]` (weighted), `.fixed()`, `F.tanh(R.a)` (a function on a body literal)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Tuple

from lrnn import _text
from lrnn.core import dsl_classes
from lrnn.core.functions import Combination, Transformation
from lrnn.core.terms import Term, to_term
from lrnn.core import values
from lrnn.core.values import Weight, named_weight


class Atom:
    """An atom with its prefixes and its weight/value. As a rule head or body literal it
    prints without the final '.', as a fact (`str(atom)`) with it."""

    _FIELDS = (
        "name", "terms", "special", "hidden", "soft_negated", "negated", "transposed", "weight", "body_function"
    )
    # _text: atom_str() once computed. Every field it prints is set only when the atom is
    # made (no code assigns them later), so it stays valid; a copy that changes only the
    # weight keeps it (a batched NeuraLogic reads the text of every row's facts).
    __slots__ = _FIELDS + ("_text",)

    def __init__(
        self,
        name: str,
        terms: Optional[Tuple[Term, ...]] = None,
        *,
        special: bool = False,
        hidden: bool = False,
        soft_negated: bool = False,
        negated: bool = False,
        transposed: bool = False,
        weight: Optional[Weight] = None,
        body_function: Any = None,
    ):
        self.name = _text.check_predicate_name(name)
        self.terms: Tuple[Term, ...] = () if terms is None else tuple(terms)  # R.p (arity 0) can still take terms
        self.special = special
        self.hidden = hidden
        self.soft_negated = soft_negated
        self.negated = negated
        self.transposed = transposed
        self.weight = weight
        # A transformation applied to this literal's value in a rule body (`F.tanh(R.a)`),
        # after its soft negation / transposition and before its weight.
        self.body_function = body_function
        self._text: Optional[str] = None

    def _copy(self, **changes: Any) -> "Atom":
        if "name" in changes:
            fields = {k: getattr(self, k) for k in Atom._FIELDS}
            fields.update(changes)
            name = fields.pop("name")
            terms = fields.pop("terms")
            return Atom(name, terms, **fields)
        # The name was checked when this atom was made: copy the fields (a fact's atoms are
        # made once per row by a batched NeuraLogic's to_logic, so this is a hot path).
        atom = Atom.__new__(Atom)
        for k in Atom._FIELDS:
            setattr(atom, k, changes[k] if k in changes else getattr(self, k))
        if "terms" in changes:
            atom.terms = () if atom.terms is None else tuple(atom.terms)
        atom._text = self._text if len(changes) == 1 and "weight" in changes else None
        return atom

    def _weighted(self, weight: Weight) -> "Atom":
        """This atom with `weight`: _copy(weight=weight) without its loop over the fields,
        for __getitem__ (called for every fact of every row a batched NeuraLogic reads)."""
        atom = Atom.__new__(Atom)
        atom.name, atom.terms, atom.special, atom.hidden = self.name, self.terms, self.special, self.hidden
        atom.soft_negated, atom.negated, atom.transposed = self.soft_negated, self.negated, self.transposed
        # The text computed on this atom, once, serves every copy made from it.
        atom.weight, atom.body_function, atom._text = weight, self.body_function, self.atom_str()
        return atom

    # ---- building --------------------------------------------------------------------------
    @property
    def arity(self) -> int:
        return len(self.terms)

    @property
    def predicate(self) -> "Predicate":
        return Predicate(self.name, self.arity, special=self.special, hidden=self.hidden)

    def __call__(self, *args: Any) -> "Atom":
        if self.weight is not None:
            raise TypeError(f"cannot give terms to the weighted relation {self.to_str()}: write R.p(V.X)[w]")
        if self.terms:
            raise TypeError(f"the relation {self.to_str()} already has its terms")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])  # R.p([V.X, V.Y]) as in PyNeuraLogic
        flat = []
        for a in args:  # a list among the terms (V.X[1:3]) is spliced in, as in PyNeuraLogic
            flat.extend(a) if isinstance(a, list) else flat.append(a)
        return self._copy(terms=tuple(to_term(a) for a in flat))

    def __getitem__(self, item: Any) -> "Atom":
        if values.tensor_values is not None and type(item) in values.tensor_types and self.weight is None \
                and not self.special and not self.hidden:
            # a row's fact for a batched NeuraLogic (lrnn.nn.torch_function): the common case first
            return self._weighted(values.record_tensor(item))
        if self.weight is not None:
            raise TypeError(f"the relation {self.to_str()} already has a weight")
        if self.special or self.hidden:
            raise ValueError(f"the special/hidden relation {self.to_str()} cannot have a weight")
        return self._weighted(named_weight(item, lambda: f"the weight of {self.to_str()}"))

    @property
    def weight_name(self) -> Optional[str]:
        """The weight's name (`R.p["w": 2, 2]` -> "w"), None when it has none."""
        return None if self.weight is None else self.weight.name

    @property
    def is_fixed(self) -> bool:
        return self.weight is not None and self.weight.is_fixed

    @property
    def function(self) -> Any:
        """PyNeuraLogic's attached function: Transformation.TRANSP for `.T`, REVERSE for
        `-R.a`, the function of `F.tanh(R.a)`, else None."""

        if self.body_function is not None:
            return self.body_function
        if self.transposed:
            return Transformation.TRANSP
        if self.soft_negated:
            return Transformation.REVERSE
        return None

    def attach_function(self, function: Any) -> Any:
        """`F.tanh(R.a)`: the literal's value goes through `function` in the rule body. A
        literal that already has a function (or a weight) is wrapped in a container."""
        FContainer = dsl_classes.get("FContainer")

        if self.negated or self.special or self.hidden:
            raise ValueError(f"{function}(...) needs a literal with a value, got {self.to_str()}")
        if self.weight is not None:
            raise TypeError(f"apply {function} before weighting: {function}(R.a)[w], not {function}({self.to_str()})")
        if self.body_function is not None or self.soft_negated or self.transposed:
            return FContainer((self,), function)
        return self._copy(body_function=function)

    def __add__(self, other: Any) -> Any:
        FContainer = dsl_classes.get("FContainer")

        return FContainer((self, other), Combination.SUM)

    def __mul__(self, other: Any) -> Any:
        FContainer = dsl_classes.get("FContainer")

        return FContainer((self, other), Combination.ELPRODUCT)

    def __matmul__(self, other: Any) -> Any:
        FContainer = dsl_classes.get("FContainer")

        return FContainer((self, other), Combination.PRODUCT)

    def fixed(self) -> "Atom":
        """The weight/value is not learned: `<...>`."""
        if self.weight is None:
            raise ValueError(f"the relation {self.to_str()} has no weight to fix")
        return self._copy(weight=self.weight.fixed())

    @property
    def T(self) -> "Atom":
        """Transposed body literal `k(J)^T`."""
        if self.weight is not None:
            raise TypeError(f"transpose the relation before weighting it: R.k(V.J).T[...], not {self.to_str()}.T")
        if self.special or self.hidden or self.negated:
            raise ValueError(f"the relation {self.to_str()} has no value to transpose")
        if self.body_function is not None:  # transpose what the function gave

            return self.attach_function(Transformation.TRANSP)
        return self._copy(transposed=not self.transposed)

    def __neg__(self) -> "Atom":
        """Soft negation `-R.a` (PyNeuraLogic's reverse), written `~a`: the value x enters as 1 - x."""
        if self.weight is not None:
            raise TypeError(f"negate the relation before weighting it: (-R.a)[w], not -{self.to_str()}")
        if self.special or self.hidden or self.negated:
            raise ValueError(f"the relation {self.to_str()} has no value to negate softly")
        if self.body_function is not None:

            return self.attach_function(Transformation.REVERSE)
        return self._copy(soft_negated=not self.soft_negated)

    reverse = __neg__

    def __invert__(self) -> "Atom":
        """`~R.a` is negation as failure `!a` (stratified, logic only), as in PyNeuraLogic."""
        if self.weight is not None or self.soft_negated or self.transposed or self.body_function is not None:
            raise ValueError(f"the relation {self.to_str()} has a value or a function and cannot be negated as failure")
        return self._copy(negated=not self.negated)

    negation = __invert__

    def __truediv__(self, arity: int) -> "Predicate":
        if self.terms or isinstance(arity, bool) or not isinstance(arity, int) or arity < 0:
            raise TypeError(f"a predicate is written R.name / arity, got {self.to_str()} / {arity!r}")
        return Predicate(self.name, arity, special=self.special, hidden=self.hidden)

    def __le__(self, body: Any) -> "Rule":
        Rule = dsl_classes.get("Rule")

        return Rule(self, body)

    def __and__(self, other: Any) -> "RuleBody":
        RuleBody = dsl_classes.get("RuleBody")

        return RuleBody([self]) & other

    def __or__(self, metadata: Any) -> "RuleBody":
        """`R.h <= R.b | [F.relu]` reads as `R.h <= (R.b | [F.relu])`: a one-literal body
        carrying the rule's metadata."""
        RuleBody = dsl_classes.get("RuleBody")

        return RuleBody([self]) | metadata

    # Atoms are not comparable by value in Python: `<=` builds a rule.
    __hash__ = object.__hash__

    # ---- printing --------------------------------------------------------------------------
    def atom_str(self) -> str:
        """The atom without its weight: `~p(X, a)^T`, `@leq(J, I)`, `*edge(X, Y)`; a literal
        with a function prints as PyNeuraLogic writes it, `sigmoid(input)` (a template lowers
        it to a rule of its own before the engine reads it)."""
        text = self._text
        if text is None:
            text = self._text = self._atom_text()
        return text

    def _atom_text(self) -> str:
        if self.body_function is not None:
            return f"{self.body_function}({self._copy(body_function=None).atom_str()})"
        prefix = ("!" if self.negated else "") + ("~" if self.soft_negated else "")
        prefix += ("@" if self.special else "") + ("*" if self.hidden else "")
        text = prefix + self.name
        if self.terms:
            text += "(" + ", ".join(str(t) for t in self.terms) + ")"
        if self.transposed:
            text += "^T"
        return text

    def to_str(self) -> str:
        """As a literal (rule head or body): weight, then the atom."""
        if self.weight is None:
            return self.atom_str()
        return f"{self.weight} {self.atom_str()}"

    def __str__(self) -> str:
        return self.to_str() + "."

    def __repr__(self) -> str:
        return str(self)


class Predicate:
    """`R.p / 2`: a predicate, to attach metadata `| [...]` or an offset `[...]` to."""

    __slots__ = ("name", "arity", "special", "hidden")

    def __init__(self, name: str, arity: int, *, special: bool = False, hidden: bool = False):
        self.name = _text.check_predicate_name(name)
        self.arity = arity
        self.special = special
        self.hidden = hidden

    def __str__(self) -> str:
        return ("@" if self.special else "") + ("*" if self.hidden else "") + f"{self.name}/{self.arity}"

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Predicate) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def _check_declarable(self) -> None:
        if self.special or self.hidden:
            raise ValueError(f"the special/hidden predicate {self} has no neurons to configure")

    def __or__(self, metadata: Any) -> "PredicateDecl":
        Metadata = dsl_classes.get("Metadata")

        self._check_declarable()
        meta = Metadata.coerce(metadata)
        if meta.aggregation is not None:
            raise ValueError(f"predicate metadata cannot set 'aggregation' ({self}): aggregation belongs to rules")
        if meta.learnable is not None:
            raise ValueError(f"predicate metadata cannot set 'learnable' ({self})")
        return PredicateDecl(self, meta, None)

    def __getitem__(self, item: Any) -> "PredicateDecl":
        """`(R.p / 1)[3, 1]`: the atom's offset (`p/1 {3, 1}`)."""
        self._check_declarable()
        return PredicateDecl(self, None, named_weight(item, lambda: f"the offset of {self}"))


class PredicateDecl:
    """`p/2 [activation=sigmoid]` and/or `p/1 {3, 1}` (an offset)."""

    __slots__ = ("predicate", "metadata", "offset")

    def __init__(self, predicate: Predicate, metadata: Any, offset: Optional[Weight]):
        self.predicate = predicate
        self.metadata = metadata
        self.offset = offset

    def __or__(self, metadata: Any) -> "PredicateDecl":
        decl = self.predicate | metadata
        return PredicateDecl(self.predicate, decl.metadata, self.offset)

    def __getitem__(self, item: Any) -> "PredicateDecl":
        if self.offset is not None:
            raise TypeError(f"{self} already has an offset")
        return PredicateDecl(self.predicate, self.metadata, named_weight(item, lambda: f"the offset of {self.predicate}"))

    def fixed(self) -> "PredicateDecl":
        if self.offset is None:
            raise ValueError(f"{self} has no offset to fix")
        return PredicateDecl(self.predicate, self.metadata, self.offset.fixed())

    def __str__(self) -> str:
        text = str(self.predicate)
        if self.offset is not None:
            text += f" {self.offset}"
        if self.metadata is not None and len(self.metadata):
            text += f" {self.metadata}"
        return text

    def __repr__(self) -> str:
        return str(self)


# PyNeuraLogic's names for the same things.
PredicateMetadata = PredicateDecl


class _SpecialFactory:
    """`R.special.leq(V.J, V.I)` is the builtin `@leq(J, I)`; `R.special.hidden...` and
    `R.hidden.special...` are the same hidden builtin."""

    def __init__(self, hidden: bool = False):
        self._hidden = hidden

    @property
    def hidden(self) -> "_SpecialFactory":
        return _SpecialFactory(True)

    def __getattr__(self, name: str) -> Atom:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def get(self, name: str) -> Atom:
        # PyNeuraLogic spells builtins that clash with Python keywords with a leading '_'.
        name = {"_in": "in", "truepred": "true", "falsepred": "false"}.get(name, name)
        if name.startswith("_") and len(name) > 1:  # R.special._x: a hidden builtin, as R._x is hidden
            return Atom(name[1:], special=True, hidden=True)
        return Atom(name, special=True, hidden=self._hidden)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("R.special is a namespace: write R.special.leq(V.X, V.Y)")


class _HiddenFactory:
    """`R.hidden.edge(V.X, V.Y)` is the hidden literal `*edge(X, Y)`."""

    @property
    def special(self) -> _SpecialFactory:
        return _SpecialFactory(True)

    def __getattr__(self, name: str) -> Atom:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def get(self, name: str) -> Atom:
        return Atom(name, hidden=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("R.hidden is a namespace: write R.hidden.edge(V.X, V.Y)")


class RelationFactory:
    """`R.name` is the relation `name`; `R.get("name")` for names that are not Python
    identifiers or clash with `special` / `hidden` / `get`."""

    def __init__(self) -> None:
        self.special = _SpecialFactory()
        self.hidden = _HiddenFactory()

    def __getattr__(self, name: str) -> Atom:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def get(self, name: str) -> Atom:
        # PyNeuraLogic: a leading '_' makes the relation hidden.
        if name.startswith("_") and len(name) > 1:
            return Atom(name[1:], hidden=True)
        return Atom(name)


Relation = R = RelationFactory()


# Operators of the lower DSL modules (functions) build atoms through the registry.
dsl_classes.register(Atom)
