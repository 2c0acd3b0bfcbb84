"""PyNeuraLogic's printed rules in lrnn's text format, where lrnn spells the same thing
differently. A module's lines are PyNeuraLogic's (`str(module)`); the template gets each line
as it is when lrnn's parser takes it, and otherwise this respelling, so the module runs:

    transpose(a)                      ->  a^T
    reverse(a)                        ->  ~a             (1 - a, soft negation)
    tanh(a), sigmoid(a), relu(a), ..  ->  a__tanh        with the rule  a__tanh :- a. [transformation=tanh]
    slice(rows=[0, 2], cols=...)      ->  slice(rows=(0,2))
    softmax(agg_terms=[Y])            ->  softmax(Y)

Each is the same computation (tests/python/test_pnl_zoo.py: GRU, LSTM, Attention,
MultiheadAttention and the transformer encoder equal torch's layers). lrnn's parser now reads
most of PyNeuraLogic's spellings itself (docs/language.md: `sqrt(a)` on a body atom, an atom's
rules combined by `combination=product`, `leakyrelu(slope)`, `duplicate_grounding=True`), so
the lines of the normalised GCN/SG/TAG/APPNP and of GATv2 are kept as PyNeuraLogic wrote them;
a line neither the parser nor this respelling takes is refused with the engine's error naming it.
"""

import re
from typing import Dict, List, Optional, Tuple

_ATOM = r"\*?[a-z]\w*(?:\([^()]*\))?"
_TRANSPOSE = re.compile(rf"\btranspose\(({_ATOM})\)")
_REVERSE = re.compile(rf"\breverse\(({_ATOM})\)")
_ACTIVATION = re.compile(rf"\b(tanh|sigmoid|relu|exp|log|inverse|signum)\(([a-z]\w*)(\([^()]*\))?\)")
_SLICE = re.compile(r"slice\(rows=\[(\d+), (\d+)\], cols=\.\.\.\)")
_SOFTMAX = re.compile(r"softmax\(agg_terms=\[([A-Z]\w*(?:, [A-Z]\w*)*)\]\)")


def _split(line: str) -> Tuple[str, str]:
    """The line without and with its trailing metadata `[...]`."""
    if line.endswith("]") and ". [" in line:
        at = line.rindex(". [")
        return line[:at + 1], line[at + 1:]
    return line, ""


def respell(line: str, helpers: Dict[str, str]) -> str:
    """`line` in lrnn's spelling; the rules of new helper atoms go into `helpers` (by head)."""
    statement, metadata = _split(line)
    if ":-" in statement:
        head, body = statement.split(":-", 1)
        body = _TRANSPOSE.sub(r"\1^T", body)
        body = _REVERSE.sub(r"~\1", body)

        def helper(match: "re.Match[str]") -> str:
            function, name, args = match.group(1), match.group(2), match.group(3) or ""
            atom = f"{name}__{function}{args}"
            helpers.setdefault(atom, f"{atom} :- {name}{args}. [transformation={function}]")
            return atom

        body = _ACTIVATION.sub(helper, body)
        statement = head + ":-" + body
    metadata = _SLICE.sub(r"slice(rows=(\1,\2))", metadata)
    metadata = _SOFTMAX.sub(lambda m: f"softmax({m.group(1)})", metadata)
    return statement + metadata


def _accepted(text: str) -> bool:
    """Whether lrnn's engine builds a template from `text` (parsed and checked)."""
    from lrnn import _core
    from lrnn.errors import LrnnError
    from lrnn.nn.init import Glorot

    try:
        _core.Model(text, Glorot().engine_spec(), 1)
    except (LrnnError, ValueError):
        return False
    return True


def engine_lines(lines: List[str]) -> List[List[str]]:
    """For each PyNeuraLogic line, the lines the template gets. When lrnn builds the module as
    written, the lines themselves; else each line lrnn does not take alone is respelled and
    followed by the helper rules it introduces first (a helper used by several lines is defined
    once), if lrnn then builds the module; else the lines as PyNeuraLogic wrote them (building
    names the line lrnn does not take)."""
    if _accepted("\n".join(lines)):
        return [[line] for line in lines]
    defined: Dict[str, str] = {}
    out: List[List[str]] = []
    for line in lines:
        if _accepted(line):
            out.append([line])
            continue
        helpers: Dict[str, str] = {}
        respelled = respell(line, helpers)
        new: Optional[List[str]] = [rule for key, rule in helpers.items() if key not in defined]
        defined.update(helpers)
        out.append([respelled] + (new or []))
    if not _accepted("\n".join(line for group in out for line in group)):
        return [[line] for line in lines]
    return out
