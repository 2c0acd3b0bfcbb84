"""Template: the rules, facts and predicate declarations of a model (PyNeuraLogic's
`Template`, renamed `Model` in its later versions: both names work here).

A template is text: `str(template)` is the program in lrnn's text format, which is what
the C++ engine parses when the template is built or queried.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

from lrnn.core.atoms import Atom, PredicateDecl
from lrnn.core.rules import Rule, RuleBody
from lrnn.core.settings import Settings
from lrnn.core.text_block import _layout, _TextBlock


Entry = Union[Rule, Atom, PredicateDecl, _TextBlock]


def _check_entry(entry: Any) -> Entry:
    if isinstance(entry, (Rule, PredicateDecl, _TextBlock)):
        return entry
    if isinstance(entry, Atom):
        # a hidden fact (`R._edge(1, 2)`, `*edge(1, 2)`) is logic only, as in PyNeuraLogic
        if entry.negated or entry.soft_negated or entry.transposed or entry.special or entry.body_function is not None:
            raise ValueError(f"a template fact is a plain (optionally weighted) atom, got {entry.to_str()}")
        if entry.hidden and entry.weight is not None:
            raise ValueError(f"a hidden fact is logic only and has no value: {entry.to_str()}")
        return entry
    if isinstance(entry, RuleBody):
        raise TypeError(f"{entry} is a rule body without a head: write R.head <= body")
    raise TypeError(
        f"a template holds rules, facts and predicate declarations, got {type(entry).__name__}: {entry!r}"
    )


# Template.build makes a Model, which lives in the engine layer (lrnn.model) above this
# language module: the package (lrnn/__init__.py, always run before any of its modules)
# hands in a constructor, so the language never imports the engine (issue 31).
_model_factory: Optional[Callable[[], "Template"]] = None


def set_model_factory(factory: Callable[[], "Template"]) -> None:
    """Sets what Template.build calls to make an empty Model (lrnn/__init__.py sets lrnn.model.Model)."""
    global _model_factory
    _model_factory = factory


class Template:
    # lrnn.draw recognises a template (a Model too) by this mark, not by importing the class.
    _draws_as = "template"

    def __init__(self, *, template_file: Optional[str] = None, model_file: Optional[str] = None):
        self._entries: List[Entry] = []
        path = template_file or model_file
        if path is not None:
            self._entries.append(_load_file(path))

    # ---- building ----------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Template":
        """A template from a text file (imports resolved relative to it)."""
        template = cls()
        template._entries.append(_load_file(os.fspath(path)))
        return template

    @classmethod
    def from_string(cls, text: str, name: str = "<string>") -> "Template":
        from lrnn import _core

        template = cls()
        template._entries.append(_TextBlock(_core.canonical_statements(text, name), name))
        return template

    def add_rule(self, rule: Any) -> None:
        self.add_rules([rule])

    def add_rules(self, rules: Iterable[Any]) -> None:
        self._check_mutable()
        self._entries.extend(_check_entry(r) for r in rules)

    def add_module(self, module: Any) -> None:
        self.add_rules(module())

    def __iadd__(self, other: Any) -> "Template":
        if isinstance(other, (list, tuple)) or (
            hasattr(other, "__iter__") and not isinstance(other, (Atom, Rule, PredicateDecl, str, RuleBody))
        ):
            self.add_rules(list(other))
        else:
            self.add_rule(other)
        return self

    def _check_mutable(self) -> None:
        pass

    # ---- container ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    def __getitem__(self, index: int) -> Entry:
        return self._entries[index]

    def _statement_summary(self) -> str:
        """`2 rules, 1 predicate declaration`: the statements themselves, a file or string
        counted by what it holds (len() counts entries, and a loaded file is one entry)."""
        rules = facts = declarations = 0
        for e in self._entries:
            if isinstance(e, _TextBlock):
                rules, facts, declarations = rules + len(e.rules), facts + len(e.facts), declarations + len(e.predicates)
            elif isinstance(e, Rule):
                rules += 1
            elif isinstance(e, PredicateDecl):
                declarations += 1
            else:
                facts += 1
        counts = [(rules, "rule"), (facts, "fact"), (declarations, "predicate declaration")]
        parts = [f"{n} {name}{'' if n == 1 else 's'}" for n, name in counts if n]
        return ", ".join(parts) if parts else "empty"

    def __delitem__(self, index: int) -> None:
        self._check_mutable()
        del self._entries[index]

    def clone(self) -> "Template":
        template = Template()
        template._entries = list(self._entries)
        return template

    __copy__ = clone

    # ---- text --------------------------------------------------------------------------------
    def __str__(self) -> str:
        """The program in lrnn's text format, exactly as the C++ printer writes it:
        predicate declarations, then facts, then rules (each group in the order added)."""
        predicates: List[str] = []
        facts: List[str] = []
        rules: List[str] = []
        new_name = _helper_names(self._entries)
        for e in self._entries:
            if isinstance(e, PredicateDecl):
                predicates.append(str(e))
            elif isinstance(e, Atom):
                facts.append(str(e))
            elif isinstance(e, Rule):
                rules += e.lowered(new_name) if e.has_body_functions() else [str(e)]
            else:
                predicates += e.predicates
                facts += e.facts
                rules += e.rules
        return _layout(predicates, facts, rules)

    def __repr__(self) -> str:
        return str(self)

    def to_text(self) -> str:
        return str(self)

    # ---- pictures (lrnn.draw) ----------------------------------------------------------------
    def draw(self, filename: Optional[str] = None, draw_ipython: bool = True, img_type: Optional[str] = None,
             value_detail: int = 0, graphviz_path: Optional[str] = None, *, show: Optional[bool] = None) -> Any:
        """The template's picture (predicates, rules as labelled edges): into `filename`, else
        SVG text (PNG bytes for img_type="png"); needs Graphviz's `dot` except for .dot.
        PyNeuraLogic's spelling `draw(show=...)` is `draw_ipython`, with PNG as its default."""
        from lrnn.draw import draw_model

        if show is not None:
            draw_ipython = show
        if img_type is None:
            img_type = "svg" if show is None else "png"
        return draw_model(self, filename, draw_ipython, img_type, value_detail, graphviz_path)

    def _repr_svg_(self) -> Optional[str]:
        from lrnn.draw import repr_svg

        return repr_svg(self)

    def save_text(self, path: Union[str, os.PathLike]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_text())

    # ---- using -------------------------------------------------------------------------------
    def build(self, settings: Optional[Settings] = None) -> "Model":
        """Compiles the template for training and inference (see lrnn.Model)."""
        if _model_factory is None:
            raise RuntimeError("Template.build needs lrnn.model's Model, which the lrnn package registers when "
                               "it is imported (set_model_factory)")
        model = _model_factory()
        model._entries = list(self._entries)
        return model.build(settings)

    def query(self, goal: Any, facts: Optional[Iterable[Any]] = None) -> Any:
        """Logic answers (no learning): a list of {variable: value} dicts for a goal with
        variables, True/False for a ground goal."""
        from lrnn.logic import query

        return query(self, goal, facts)

    q = query

    def derivable_queries(self, facts: Optional[Iterable[Any]] = None) -> List[Atom]:
        """Every ground atom the template's facts and rules (and `facts`) derive, hidden
        and builtin ones excepted (PyNeuraLogic's `model.derivable_queries()`): the atoms
        a query could ask for. Predicates in order of appearance, atoms as `query` sorts them."""
        import re

        from lrnn import _core
        from lrnn.core.terms import Constant, Variable

        ast = _core.parse_template(str(self), "<template>")
        written = "\n".join(str(e) for e in self._entries)
        predicates: List[tuple] = []
        literals = [r.head for r in ast.rules] + list(ast.facts)
        for lit in literals:
            key = (lit.predicate, lit.arity)
            if lit.builtin or lit.hidden or key in predicates:
                continue
            if re.fullmatch(r"lrnn_fn\d+", lit.predicate) and lit.predicate not in written:
                continue  # a rule this template wrote for a function in a body
            predicates.append(key)
        for fact in facts or ():
            key = (fact.name, fact.arity)
            if isinstance(fact, Atom) and not fact.hidden and not fact.special and key not in predicates:
                predicates.append(key)
        out: List[Atom] = []
        for name, arity in predicates:
            goal = Atom(name, tuple(Variable(f"X{i}") for i in range(arity)))
            answers = self.query(goal, facts)
            if arity == 0:
                out += [Atom(name)] if answers else []
                continue
            for answer in answers:
                out.append(Atom(name, tuple(Constant(answer[f"X{i}"]) for i in range(arity))))
        return out


def _helper_names(entries: List[Entry]) -> Any:
    """Names for the rules that compute functions in bodies (lrnn.core.containers):
    `lrnn_fn1`, `lrnn_fn2`, ... in order, skipping any name the template uses itself."""
    import itertools
    import re

    needed = any(isinstance(e, Rule) and e.has_body_functions() for e in entries)
    used = set(re.findall(r"lrnn_fn\d+", "\n".join(str(e) for e in entries))) if needed else set()
    counter = itertools.count(1)

    def new_name() -> str:
        while True:
            name = f"lrnn_fn{next(counter)}"
            if name not in used:
                return name

    return new_name


def _load_file(path: str) -> _TextBlock:
    from lrnn import _core

    return _TextBlock(_core.canonical_statements_file(path), path)
