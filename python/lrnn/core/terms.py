"""Terms: variables (`V.X`), constants (`C.a`), numbers and strings, as in PyNeuraLogic."""

from __future__ import annotations

import numbers
from typing import Any, Optional

from lrnn import _text


class Term:
    """A term of an atom. Printing gives its text-format form (`X`, `a`, `woman:Y`)."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type: Optional[str] = None):
        self.name = name
        self.type = type

    def _bare(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        bare = self._bare()
        return f"{self.type}:{bare}" if self.type else bare

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Term):
            return type(self) is type(other) and str(self) == str(other)
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: Any) -> bool:
        return str(self) < str(other)


class AllVariables(Term):
    """`...` among a builtin's terms (`R.special.alldiff(...)`, as in PyNeuraLogic): every
    variable of the rule it is in. A Rule replaces it by them; anywhere else it is refused."""

    def __init__(self) -> None:
        super().__init__("...")

    def _bare(self) -> str:
        return "..."


class Variable(Term):
    """`V.X`. `V.X("woman")` gives the typed variable `woman:X`; `V.X[1:4]` gives X1..X3."""

    __slots__ = ()

    def __init__(self, name: str, type: Optional[str] = None):
        if not _text.is_variable_name(name):
            raise ValueError(f"invalid variable name {name!r}: a variable starts with an upper-case letter or '_'")
        if type is not None and not _text.is_identifier(type):
            raise ValueError(f"invalid type name {type!r}: a type starts with a lower-case letter")
        super().__init__(name, type)

    def _bare(self) -> str:
        return self.name

    def __call__(self, type: str) -> "Variable":
        if not isinstance(type, str):
            raise TypeError("a variable's type is a string, e.g. V.X('woman')")
        return Variable(self.name, type)

    def __getitem__(self, item: slice) -> list:
        if not isinstance(item, slice) or item.start is None or item.stop is None:
            raise TypeError("a range of variables is written V.X[start:stop] (or V.X[start:stop:step])")
        step = 1 if item.step is None else item.step
        return [Variable(f"{self.name}{i}", self.type) for i in range(item.start, item.stop, step)]


class Constant(Term):
    """`C.a`, or any Python str/int/float used as a term."""

    __slots__ = ()

    def __init__(self, name: str, type: Optional[str] = None):
        if type is not None and not _text.is_identifier(type):
            raise ValueError(f"invalid type name {type!r}: a type starts with a lower-case letter")
        super().__init__(name, type)

    def _bare(self) -> str:
        if _text.is_identifier(self.name) or _text.is_number_text(self.name):
            return self.name
        return _text.quote(self.name)

    def __call__(self, type: str) -> "Constant":
        if not isinstance(type, str):
            raise TypeError("a constant's type is a string, e.g. C.aida('horse')")
        return Constant(self.name, type)


class VariableFactory:
    """`V.X` is the variable X; a lower-case first letter is raised (`V.x` is X)."""

    def __getattr__(self, name: str) -> Variable:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def get(self, name: str, type: Optional[str] = None) -> Variable:
        if name and name[0].islower():
            name = name[0].upper() + name[1:]
        return Variable(name, type)


class ConstantFactory:
    """`C.a` is the constant a; an upper-case first letter is lowered (`C.Aida` is aida),
    since an upper-case name would read as a variable."""

    def __getattr__(self, name: str) -> Constant:
        if name.startswith("__"):
            raise AttributeError(name)
        if name[0].isupper():
            name = name[0].lower() + name[1:]
        return Constant(name)

    def get(self, name: str, type: Optional[str] = None) -> Constant:
        """The constant `name`: an upper-case first letter is lowered, as for `C.Name` and
        in PyNeuraLogic (`C.get("Abc")` is abc); anything else is kept as given, quoted if it
        is not a bare name."""
        name = str(name)
        if name[:1].isupper() and _text.is_identifier(name[0].lower() + name[1:]):
            name = name[0].lower() + name[1:]
        return Constant(name, type)


Var = V = VariableFactory()
Const = C = ConstantFactory()


def to_term(value: Any) -> Term:
    """A Python value as a term: Terms stay, numbers become number constants, a string
    is a variable if it reads as one (`"X"`, as PyNeuraLogic passes it to the parser),
    else a constant (quoted when it is not a bare name)."""
    if isinstance(value, Term):
        return value
    if value is Ellipsis:
        return AllVariables()
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is not a term (use a constant such as C.true)")
    if isinstance(value, numbers.Integral):
        return Constant(str(int(value)))
    if isinstance(value, numbers.Real):
        return Constant(_text.format_number(float(value)))
    if isinstance(value, str):
        if _text.is_variable_name(value):
            return Variable(value)
        return Constant(value)
    raise TypeError(f"{value!r} of type {type(value).__name__} cannot be a term (use V.X, C.a, a number or a str)")
