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

# key, query, where, selector_width, numerical, categorical, indicator, constant: the core's
# functions as they are (python/src/rasp.cpp lists them in `primitives`; exported below).
globals().update({_name: getattr(_rasp, _name) for _name in _rasp.primitives})

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
        _write_text(path, svg)
    return svg


def _write_text(path: Union[str, os.PathLike], text: str) -> None:
    """Saves a picture as lrnn saves every file: atomically (never half written)."""
    from lrnn import _core

    _core.write_text_atomically(os.fspath(path), text)


def set_display_input(input: Any) -> None:
    """The input Jupyter draws s-ops, selectors and programs on when they are shown inline
    (`_repr_svg_`); "hello" by default, as RASPy. A program that cannot run on it is shown
    as text."""
    _rasp.set_display_input(input)


def example_facts(input: Any) -> str:
    """The example of an input for lowered templates: `token(i, v), index(i, i), ...`."""
    return _rasp.example_facts(input)


def _term_key(kind: str, text: str) -> tuple:
    """What identifies a constant of an engine atom: numbers by value, symbols by their text
    (the engine reads 'x' and x as one symbol)."""
    if kind == "number":
        return ("number", float(text))
    return ("symbol", text)


def _decoder(output_values: Sequence[Any]) -> dict:
    """The interpreter's value of every constant the lowered output can hold (value_term
    writes True as 1 and None as the constant `none`; to_template refuses an s-op that can
    hold both None and the string "none")."""
    table = {}
    for value in output_values:
        term = _core_parse_term(_rasp.value_term(value))
        table.setdefault(_term_key(term.kind, term.text), value)
    return table


def _core_parse_term(text: str) -> Any:
    from lrnn import _core

    return _core.parse_literal(f"v({text})", "<value>").args[0]


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

    def _decode(self, term: Any) -> Any:
        """An output atom's constant as the interpreter's value (True, None, "none", 2.5)."""
        if getattr(self, "_decoding", None) is None:
            self._decoding = _decoder(self._lowered.output_values)
        key = _term_key(term.kind, term.text)
        if key not in self._decoding:
            raise ValueError(f"the engine derived the output constant {term.text!r}, which the program cannot produce")
        return self._decoding[key]

    def _number(self, y: float) -> Any:
        """A numerical output as the interpreter's type: bool, int or float."""
        values = self._lowered.output_values
        if values and all(isinstance(v, bool) for v in values):
            return y > 0.5
        if abs(y - round(y)) < 1e-9 and not any(isinstance(v, float) for v in values):
            return int(round(y))
        return y

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
                results[i][position] = self._number(y)
            elif y > 0.5:
                hits[i][position] += 1
                results[i][position] = self._decode(args[1])
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


class CompiledModel:
    """A RASP program compiled to transformer weights (`compile`). `model(input)` runs the
    weights in C++ and decodes the output (argmax per categorical position, the number for
    numerical ones); `verify()` compares with the interpreter on every input up to max_len;
    `table()` prints the residual stream layout; `state_dict()` gives the weights as NumPy
    arrays and `to_torch()` a plain torch.nn.Module computing the same."""

    def __init__(self, compiled: Any, program: Any):
        self._compiled = compiled
        self.program = program

    layers = property(lambda self: self._compiled.layers)
    heads = property(lambda self: self._compiled.heads)
    heads_per_layer = property(lambda self: self._compiled.heads_per_layer)
    residual_width = property(lambda self: self._compiled.d_model)
    mlp_width = property(lambda self: self._compiled.mlp_width)
    mlp_hidden = property(lambda self: self._compiled.mlp_hidden)
    analyzed_layers = property(lambda self: self._compiled.analyzed_layers)
    dim_labels = property(lambda self: self._compiled.dim_labels)
    spaces = property(lambda self: self._compiled.spaces)
    vocab = property(lambda self: self._compiled.vocab)
    max_len = property(lambda self: self._compiled.max_len)
    causal = property(lambda self: self._compiled.causal)

    def __call__(self, input: Any) -> List[Any]:
        return self._compiled(input)

    def verify(self, max_inputs: int = 100000) -> Any:
        """Weights against the interpreter on every input up to max_len (a fixed random
        sample of `max_inputs` when there are more). Truthy when every output agrees."""
        return self._compiled.verify(max_inputs)

    def table(self) -> str:
        return self._compiled.table()

    def to_template(self, *, fixed: bool = False, random: bool = False, readout_scale: float = 0.0) -> str:
        """The transformer as an lrnn template (docs/language.md text): attention and MLP rules
        whose weights are these, as initial values, so lrnn's engine runs, trains and draws
        it. Its query `residual(p)` is the final residual stream at position p (0: BOS).
        `fixed=True` writes the weights fixed (only a readout learns), `random=True` their
        shapes only (the same template from random init); `readout_scale > 0` adds
        `rasp_out(P)`, learnable class logits over the output's values (readout_scale times
        its one-hot), for training with cross-entropy on `readout_queries(outputs)`."""
        return self._compiled.template_text(fixed, random, readout_scale)

    def readout_queries(self, outputs: Any) -> str:
        """The readout's queries for target outputs (one per input position): `[0, 1, 0]
        rasp_out(p)`, a one-hot over the output s-op's values."""
        return self._compiled.readout_query_text(outputs)

    def example_facts(self, input: Any) -> str:
        """The template's example facts of an input (`rasp_input(0)` is BOS)."""
        return self._compiled.example_text(input)

    def queries(self, input: Any) -> str:
        """The template's queries of an input: `residual(p)` for p = 0 (BOS) .. len(input)."""
        return self._compiled.query_text(input)

    def draw(self, input: Any, path: Union[str, os.PathLike, None] = None) -> str:
        """An SVG of the weights on an input: the final residual stream (every named
        dimension at every position, BOS first) and every head's attention weights; compare
        with draw(program, input), the interpreter's selector matrices. Also written to
        `path` when given."""
        svg = self._compiled.draw_svg(input)
        if path is not None:
            _write_text(path, svg)
        return svg

    def attention(self, input: Any) -> List[Any]:
        """Every head's attention weights on an input as (n + 1) x (n + 1) NumPy arrays
        ([query][key], row and column 0 the BOS position), in layer order."""
        import numpy as np

        n = len(_rasp.run(tokens, input)) + 1
        return [np.asarray(a).reshape(n, n) for a in self._compiled.attention(input)]

    def head_list(self) -> List[tuple]:
        """(layer, s-op computed, selector) for every attention head."""
        return self._compiled._heads()

    def __repr__(self) -> str:
        return repr(self._compiled)

    def state_dict(self) -> dict:
        """Every weight matrix as a float64 NumPy array: embed.tokens (vocab x d),
        embed.positions (max_len x d), embed.bos (1 x d), layers.L.heads.H.qk / .ov (d x d:
        score = x_q^T qk x_k, value = ov x_k), layers.L.mlp.w1 (hidden x d), .b1, .w2."""
        import numpy as np

        return {name: np.asarray(flat, dtype=np.float64).reshape(rows, cols)
                for name, rows, cols, flat in self._compiled._weights()}

    def _output_reader(self):
        name, encoding, offset, width, values = self.spaces[self._compiled.output_space]
        return encoding, offset, width, values

    def decode(self, residual: Any, length: int) -> List[Any]:
        """The output values read from a final residual stream ((length + 1) x d array-like)."""
        encoding, offset, width, values = self._output_reader()
        out = []
        for i in range(1, length + 1):
            row = residual[i]
            if encoding == "constant":
                out.append(values[0])
            elif encoding == "categorical":
                scores = [float(row[offset + v]) for v in range(width)]
                out.append(values[max(range(width), key=scores.__getitem__)])
            else:
                y = float(row[offset])
                near = [v for v in values if isinstance(v, (int, float)) and abs(float(v) - y) <= 1e-6 * max(1.0, abs(y))]
                out.append(near[-1] if near else y)
        return out

    def token_ids(self, input: Any) -> List[int]:
        """The vocabulary positions of an input's tokens (the torch module's input)."""
        tokens_in = _rasp.run(tokens, input)
        vocab = self.vocab
        ids = []
        for i, t in enumerate(tokens_in):
            match = [k for k, v in enumerate(vocab) if v == t and type(v) is type(t)]
            if not match:
                raise ValueError(f"input position {i} holds {t!r}, which is not in the vocabulary {vocab!r}")
            ids.append(match[0])
        return ids

    def to_torch(self) -> Any:
        """A torch.nn.Module with the compiled weights as float64 parameters: module(ids)
        takes a LongTensor of vocabulary positions (`token_ids(input)`) and returns the
        final residual stream ((n + 1) x d, row 0 the BOS position); `module.run(input)`
        decodes it. Requires torch (not a dependency of lrnn)."""
        try:
            import torch
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_torch() needs PyTorch (pip install torch)") from e
        return _torch_module(torch, self)

    def __getstate__(self):
        raise TypeError("a CompiledModel is not picklable; keep its state_dict()")


def _torch_module(torch: Any, compiled: "CompiledModel") -> Any:
    weights = {k: torch.tensor(v, dtype=torch.float64) for k, v in compiled.state_dict().items()}
    structure = [(len([k for k in weights if k.startswith(f"layers.{layer}.heads.") and k.endswith(".qk")]))
                 for layer in range(compiled.layers)]

    class CompiledTransformer(torch.nn.Module):
        """The compiled RASP program as a transformer (softmax attention, ReLU MLPs)."""

        def __init__(self) -> None:
            super().__init__()
            self.embed_tokens = torch.nn.Parameter(weights["embed.tokens"])
            self.embed_positions = torch.nn.Parameter(weights["embed.positions"])
            self.embed_bos = torch.nn.Parameter(weights["embed.bos"])
            self.qk = torch.nn.ParameterList()
            self.ov = torch.nn.ParameterList()
            self.w1 = torch.nn.ParameterList()
            self.b1 = torch.nn.ParameterList()
            self.w2 = torch.nn.ParameterList()
            for layer, heads in enumerate(structure):
                for h in range(heads):
                    self.qk.append(torch.nn.Parameter(weights[f"layers.{layer}.heads.{h}.qk"]))
                    self.ov.append(torch.nn.Parameter(weights[f"layers.{layer}.heads.{h}.ov"]))
                self.w1.append(torch.nn.Parameter(weights[f"layers.{layer}.mlp.w1"]))
                self.b1.append(torch.nn.Parameter(weights[f"layers.{layer}.mlp.b1"].reshape(-1)))
                self.w2.append(torch.nn.Parameter(weights[f"layers.{layer}.mlp.w2"]))
            self.causal = compiled.causal

        def forward(self, ids: Any) -> Any:
            n = ids.shape[0]
            x = torch.cat([self.embed_bos, self.embed_tokens[ids] + self.embed_positions[:n]], dim=0)
            head = 0
            for layer, heads in enumerate(structure):
                update = torch.zeros_like(x)
                for _ in range(heads):
                    scores = x @ self.qk[head] @ x.T
                    if self.causal:
                        mask = torch.ones(n + 1, n + 1, dtype=torch.bool).triu(1)
                        scores = scores.masked_fill(mask, float("-inf"))
                    update = update + torch.softmax(scores, dim=-1) @ (x @ self.ov[head].T)
                    head += 1
                x = x + update
                x = x + torch.relu(x @ self.w1[layer].T + self.b1[layer]) @ self.w2[layer].T
            return x

        def run(self, input: Any) -> List[Any]:
            ids = torch.tensor(compiled.token_ids(input), dtype=torch.long)
            with torch.no_grad():
                residual = self.forward(ids)
            return compiled.decode(residual, len(ids))

    return CompiledTransformer()


def compile(program: Union[SOp, Program], vocab: Any, max_len: int, *, convention: Optional[str] = None,
            causal: bool = False, max_inputs: int = 200000) -> CompiledModel:
    """The program as transformer weights for inputs over `vocab` (a str of characters or a
    list of values) of length 1..max_len (docs/rasp.md, "Weight compiler"). Whatever cannot
    be compiled exactly raises LrnnError naming the s-op. `causal=True` gives heads that see
    only earlier positions (refused when a selector looks ahead)."""
    return CompiledModel(_rasp.compile(program, vocab, max_len, convention or "", causal, max_inputs), program)


__all__ = [
    "SOp", "Selector", "Key", "Query", "Program", "Analysis", "Head", "LoweredTemplate",
    "tokens", "indices", "length", "identity",
    "select", "aggregate", "zipmap", "analyze", "draw", "to_template",
    "run", "trace", "load", "parse", "compile", "CompiledModel", "set_display_input",
] + list(_rasp.primitives)
