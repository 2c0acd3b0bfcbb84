"""RASP ("Thinking Like Transformers") in Python, with RASPy's API.

    from lrnn.rasp import *

    length = (key(1) == query(1)).value(1).name("length")
    flip = (key(length - indices - 1) == query(indices)).value(tokens)
    flip("hello")              # ['o', 'l', 'l', 'e', 'h']
    flip.input([1, 2, 3])      # [3, 2, 1]
    analyze(flip).layers       # 2
    to_template(flip, "abc", 4).text   # an lrnn template computing the same
    draw(flip, "hello", "flip.svg")

Programs are built, run, analysed, lowered and drawn by lrnn's C++ RASP library
(include/lrnn/rasp.hpp); this module only gives it RASPy's spelling. As in RASPy an
aggregate sums the selected values (`convention="mean"` gives the paper's average), one
selected value passes through and nothing selected gives the default (0 unless given).
`.rasp` files (the original RASP language, mean aggregation) load with `load(path)`.
"""

from __future__ import annotations

import operator
import os
from typing import Any, Iterable, List, Optional, Sequence, Union

from lrnn._core import rasp as _rasp

SOp = _rasp.SOp
Selector = _rasp.Selector
Key = _rasp.Key
Query = _rasp.Query
Program = _rasp.Program
Analysis = _rasp.Analysis
Head = _rasp.Head

# The inputs: s-ops, not functions (RASPy's `tokens`, `indices`). `length` is built in (one
# attention layer, as the blog's `(key(1) == query(1)).value(1)`).
tokens = _rasp.tokens()
indices = _rasp.indices()
length = _rasp.length()
identity = tokens  # RASPy's other name for the input

key = _rasp.key
query = _rasp.query
where = _rasp.where
selector_width = _rasp.selector_width
numerical = _rasp.numerical
categorical = _rasp.categorical
indicator = _rasp.indicator
constant = _rasp.constant

# select's predicate: the comparisons of the C++ core, in every spelling users bring along
# (RASPy passes operator.eq and friends, tracr Comparison names, the `.rasp` symbols).
_PREDICATES = {
    operator.eq: "==", operator.ne: "!=", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}
_PREDICATE_NAMES = {
    "==": "==", "eq": "==", "!=": "!=", "ne": "!=", "neq": "!=", "<": "<", "lt": "<",
    "<=": "<=", "le": "<=", "leq": "<=", ">": ">", "gt": ">", ">=": ">=", "ge": ">=", "geq": ">=",
    "true": "true", "false": "false",
}


def _predicate_symbol(predicate: Any) -> str:
    if predicate is True or predicate is False:
        return "true" if predicate else "false"
    if isinstance(predicate, str):
        symbol = _PREDICATE_NAMES.get(predicate.lower())
        if symbol is not None:
            return symbol
    else:
        try:
            symbol = _PREDICATES.get(predicate)
        except TypeError:  # unhashable
            symbol = None
        if symbol is not None:
            return symbol
    raise TypeError(
        f"select's predicate must be a comparison: operator.eq/ne/lt/le/gt/ge, one of "
        f"'==' '!=' '<' '<=' '>' '>=', or True/False (select all/none); got {predicate!r}. "
        f"Other predicates are not attention patterns lrnn can analyse or lower: compare "
        f"mapped s-ops instead, e.g. select(keys.map(f), queries.map(g), operator.eq)"
    )


def select(keys: Any, queries: Any, predicate: Any) -> Selector:
    """The selector whose entry (query i, key j) is predicate(keys[j], queries[i]); also
    written key(keys) == query(queries) (and != < <= > >=)."""
    return _rasp.select(keys, queries, _predicate_symbol(predicate))


def aggregate(selector: Selector, values: Any, default: Any = 0, name: str = "",
              convention: Optional[str] = None) -> SOp:
    """For every query position, the selected values combined: nothing selected gives
    `default`, one value passes through, several numbers are summed (RASPy) or averaged
    (convention="mean"; by default the convention of the program it runs in)."""
    out = _rasp.aggregate(selector, values, default, convention or "")
    return out.name(name) if name else out


def zipmap(fn: Any, *sops: Any) -> SOp:
    """fn(a[i], b[i], ...) at every position (RASPy's SOp.zip(fn, a, b, ...))."""
    return SOp.zip(fn, *sops)


def run(program: Union[SOp, Program], input: Any, convention: Optional[str] = None) -> List[Any]:
    """The program's values on an input (a str is its characters; a list its elements).
    An s-op runs with RASPy's sum convention, a loaded `.rasp` program with its own."""
    return _rasp.run(program, input, convention or "")


def trace(program: Union[SOp, Program], input: Any, convention: Optional[str] = None) -> List[tuple]:
    """Every s-op the program computes on an input, inputs first: (label, values) pairs."""
    return _rasp.trace(program, input, convention or "")


def analyze(program: Union[SOp, Program]) -> Analysis:
    """Attention layers and heads per layer (`.layers`, `.heads_per_layer`, `.max_heads`,
    `.heads`), as docs/rasp.md defines them."""
    return _rasp.analyze(program)


analyse = analyze


def load(path: Union[str, os.PathLike]) -> Program:
    """A `.rasp` file (the original RASP language; mean aggregation). `program(input)` runs
    its last assigned s-op, `program.get(name)` any named one."""
    return _rasp.load_rasp_file(os.fspath(path))


def parse(text: str, name: str = "<string>") -> Program:
    """A program in `.rasp` syntax given as text."""
    return _rasp.parse_rasp(text, name)


def draw(program: Union[SOp, Program], input: Any, path: Union[str, os.PathLike, None] = None,
         convention: Optional[str] = None) -> str:
    """An SVG picture of the program on an input: every s-op's values by layer and every
    layer's selector matrices (RASPy's diagrams). Returns the SVG text; also writes it to
    `path` when given."""
    svg = _rasp.draw_svg(program, input, convention or "")
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(svg)
    return svg


def example_facts(input: Any) -> str:
    """The example of an input for lowered templates: `token(i, v), index(i, i), ...`."""
    return _rasp.example_facts(input)


def _decode(term: Any) -> Any:
    """A constant of an engine atom back to a Python value (how value_term wrote it)."""
    if term.kind == "number":
        number = float(term.text)
        return int(number) if number.is_integer() and "." not in term.text and "e" not in term.text.lower() else number
    return term.text


class LoweredTemplate:
    """An lrnn template computing a RASP program (`to_template`). `text` is the template,
    `facts(input)` the example of an input, `goal` the output query; `run(input)` and
    `run_many(inputs)` evaluate the template with the lrnn engine (grounding and the forward
    pass) and read the output back as values."""

    def __init__(self, lowered: Any):
        self._lowered = lowered
        self._engine: Any = None

    text = property(lambda self: self._lowered.text)
    ast = property(lambda self: self._lowered.ast)
    output_predicate = property(lambda self: self._lowered.output_predicate)
    output_numeric = property(lambda self: self._lowered.output_numeric)
    exact = property(lambda self: self._lowered.exact)
    values_enumerated = property(lambda self: self._lowered.values_enumerated)
    value_sets = property(lambda self: self._lowered.value_sets)

    @property
    def goal(self) -> str:
        """The query that reads the output: `out(I)` (numerical) or `out(I, V)`."""
        name = self.output_predicate.split("/")[0]
        return f"{name}(I)" if self.output_numeric else f"{name}(I, V)"

    def facts(self, input: Any) -> str:
        return example_facts(input)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        kind = "numerical" if self.output_numeric else "categorical"
        return f"LoweredTemplate({self.output_predicate}, {kind}, exact={self.exact}, {len(self.ast.rules)} rules)"

    def run(self, input: Any) -> List[Any]:
        return self.run_many([input])[0]

    def run_many(self, inputs: Iterable[Any]) -> List[List[Any]]:
        """The engine's output on every input: per position the number (numerical outputs)
        or the one candidate value whose atom is 1 (None where not exactly one is)."""
        from lrnn import _core

        inputs = [list(x) if not isinstance(x, str) else x for x in inputs]
        lengths = [len(_rasp.run(tokens, x)) for x in inputs]
        results: List[List[Any]] = [[None] * n for n in lengths]
        live = [i for i, n in enumerate(lengths) if n > 0]
        if not live:
            return results
        if self._engine is None:
            self._engine = _core.Model(self.text)
        examples = "".join(example_facts(inputs[i]) + "\n" for i in live)
        queries = "".join(self.goal + ".\n" for _ in live)
        prepared = self._engine.prepare_text(examples, queries)
        outputs = self._engine.evaluate(prepared, "mse")["outputs"]
        hits = [[0] * n for n in lengths]
        for (sample, atom, _target), value in zip(prepared.outputs(), outputs):
            if atom.replace(" ", "") == self.goal.replace(" ", ""):
                continue  # the goal matched no atom (it is reported as written)
            args = _core.parse_literal(atom, "<output>").args
            i = live[sample]
            position = int(float(args[0].text))
            y = float(value[0])
            if self.output_numeric:
                results[i][position] = int(round(y)) if abs(y - round(y)) < 1e-9 else y
            elif y > 0.5:
                hits[i][position] += 1
                results[i][position] = _decode(args[1])
        if not self.output_numeric:
            for i, row in enumerate(hits):
                for position, count in enumerate(row):
                    if count != 1:
                        results[i][position] = None
        return results


def to_template(program: Union[SOp, Program], vocab: Any, max_len: int, convention: Optional[str] = None,
                max_values: int = 4096) -> LoweredTemplate:
    """The program as an lrnn template, for inputs over `vocab` (a str of characters or a
    list of values) of length at most `max_len` (docs/rasp.md, "Lowering to a template")."""
    return LoweredTemplate(_rasp.to_template(program, vocab, max_len, convention or "", max_values))


__all__ = [
    "SOp", "Selector", "Key", "Query", "Program", "Analysis", "Head", "LoweredTemplate",
    "tokens", "indices", "length", "identity",
    "key", "query", "select", "aggregate", "where", "selector_width", "zipmap",
    "numerical", "categorical", "indicator", "analyze", "draw", "to_template",
]
