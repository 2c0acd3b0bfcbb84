"""The base of every zoo module: PyNeuraLogic's `Module` (a rule generator).

A module's rules are text lines exactly as PyNeuraLogic 0.9.2 prints them (`str(rule)`,
`str(module)`). `template += module` adds them in the module's order, each as a `ModuleRule`:
the template prints (and the engine reads) the line itself where lrnn's parser takes it, else
its lrnn spelling (spelling.py: `transpose(a)` is `a^T`, ...), so `print(template)` shows what
PyNeuraLogic shows wherever the two languages agree, and is always a program lrnn reads back.
"""

from typing import Any, Iterable, Iterator, List, Optional, Sequence, Union

from lrnn.core.text_block import _TextBlock


class ModuleRule(_TextBlock):
    """One line of a module (a rule, fact or predicate declaration): `str()` is PyNeuraLogic's
    text; a template prints, where it was added, `engine_text` (that text, or its lrnn spelling
    with any helper rule it needs)."""

    __slots__ = ("text",)

    def __init__(self, line: str, origin: str, engine_text: Optional[Sequence[str]] = None):
        super().__init__(((), (), tuple(engine_text or (line,))), origin)
        self.text = line

    @property
    def engine_text(self) -> List[str]:
        return list(self.rules)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"ModuleRule({self.text!r})"

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, ModuleRule):
            return self.text == other.text and self.rules == other.rules
        return isinstance(other, str) and self.text == other

    def __hash__(self) -> int:
        return hash(self.text)


class Module:
    """`module()` returns the module's rules; `template += module` adds them.

    The zoo's modules write their lines in `rules()`. A user's module may instead override
    `__call__` and return rules built with the DSL (`[R.h(V.X) <= R.x(V.X)]`), as
    PyNeuraLogic's `Module` subclasses do."""

    def rules(self) -> List[str]:
        """The module's lines as PyNeuraLogic prints them."""
        raise NotImplementedError(f"{type(self).__name__} must define rules() (text lines) or __call__() (rules)")

    def __call__(self) -> List[Any]:
        from lrnn.nn.module.spelling import engine_lines

        name, lines = type(self).__name__, self.rules()
        return [ModuleRule(line, name, engine) for line, engine in zip(lines, engine_lines(lines))]

    def __str__(self) -> str:
        return "\n".join(str(rule) for rule in self())

    def __repr__(self) -> str:
        from lrnn.nn._repr import constructor_repr

        return constructor_repr(self)

    def __iter__(self) -> Iterator[ModuleRule]:
        # so `template += module` adds the rules (Template.__iadd__ takes iterables)
        return iter(self())


# ---- how PyNeuraLogic writes names, numbers and functions --------------------------------------


def predicate(name: str) -> str:
    """A predicate as `R.get(name)` prints it: a leading '_' makes it hidden (`_edge` -> `*edge`)."""
    return "*" + name.lstrip("_") if name.startswith("_") else name


def hidden(name: str) -> str:
    """A predicate as `R.hidden.get(name)` prints it."""
    return "*" + name.lstrip("_")


def number(value: Union[int, float]) -> str:
    """A value as PyNeuraLogic prints it: ints as ints, floats by repr (`0.5`, `1e-07`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    return str(value) if isinstance(value, int) else repr(float(value))


def function(f: Any, argument: str = "activation") -> str:
    """A transformation/aggregation given by name ("relu") or as an lrnn function object."""
    if f is None:
        raise ValueError(f"{argument} must be a function, got None")
    name = f if isinstance(f, str) else getattr(f, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{argument} must be a function name or an lrnn function (F.relu, Aggregation.SUM), "
                        f"got {f!r}")
    return name.lower()


def terms(names: Iterable[str]) -> str:
    """`(A, B)` for an atom's arguments, nothing for a nullary atom."""
    names = list(names)
    return f"({', '.join(names)})" if names else ""


def arity_terms(arity: int) -> List[str]:
    """PyNeuraLogic's `X0, .., X{arity-1}` arguments."""
    if not isinstance(arity, int) or isinstance(arity, bool) or arity < 0:
        raise ValueError(f"arity must be a non-negative int, got {arity!r}")
    return [f"X{i}" for i in range(arity)]


def weight(rows: int, cols: int) -> str:
    for size in (rows, cols):
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"a weight dimension must be a positive int, got {size!r}")
    return f"{{{rows}, {cols}}}"


def names(values: Sequence[str], argument: str) -> List[str]:
    values = list(values)
    if not values or not all(isinstance(v, str) and v for v in values):
        raise ValueError(f"{argument} must be a non-empty list of names, got {values!r}")
    return values
