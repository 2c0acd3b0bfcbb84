"""PyNeuraLogic 0.9.2's general modules (`neuralogic.nn.module.general`): the same
constructor arguments and the same rules, as PyNeuraLogic prints them (tests/python/
test_pnl_zoo.py compares them with the recorded ones).

GRU, LSTM, Attention, MultiheadAttention and the transformers write functions on body atoms
(`reverse(a)`, `tanh(a)`, `transpose(a)`) and `slice(rows=[a, b], cols=...)`; a template gets
those lines in lrnn's spelling (spelling.py), and they compute torch's layers
(tests/python/test_pnl_zoo.py).
"""

import math
from typing import Any, List, Optional, Union

import numpy as np

from lrnn.nn.module.module import Module, arity_terms, function, hidden, number, predicate, terms, weight


def _positive(value: Any, argument: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{argument} must be a positive int, got {value!r}")
    return value


class Linear(Module):
    """`h(X..) = act(W x(X..))`, W of shape (out_channels, in_channels)."""

    def __init__(self, in_channels: int, out_channels: int, output_name: str, input_name: str,
                 activation: Any = "identity", arity: int = 1):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_name, self.input_name = output_name, input_name
        self.activation, self.arity = activation, arity

    def rules(self) -> List[str]:
        args = terms(arity_terms(self.arity))
        h = predicate(self.output_name)
        return [f"{weight(self.out_channels, self.in_channels)} {h}{args} :- {predicate(self.input_name)}{args}.",
                f"{h}/{self.arity} [transformation={function(self.activation)}]"]


class MLP(Module):
    """PyNeuraLogic's MLP: one rule per pair of layers (a body weight and a head weight), the
    activations given once for all layers or per layer."""

    def __init__(self, units: List[int], output_name: str, input_name: str,
                 activation: Union[Any, List[Any]] = "relu", arity: int = 1):
        self.units, self.output_name, self.input_name = list(units), output_name, input_name
        self.activation, self.arity = activation, arity

    def _activations(self, layers: int) -> List[str]:
        if isinstance(self.activation, (list, tuple)):
            if len(self.activation) < layers:
                raise ValueError(f"MLP with units {self.units} needs {layers} activations (one per rule and "
                                 f"per declaration), got {len(self.activation)}")
            return [function(a) for a in self.activation]
        return [function(self.activation)] * layers

    def rules(self) -> List[str]:
        if len(self.units) < 2:
            raise ValueError(f"MLP units must list at least an input and an output size, got {self.units}")
        for u in self.units:
            _positive(u, "every MLP unit")
        args = terms(arity_terms(self.arity))
        iters = len(self.units) - 1
        starts = list(range(0, iters, 2))
        acts = self._activations(starts[-1] + 2)
        lines, previous = [], predicate(self.input_name)
        for index in starts:
            head = self.output_name if index == starts[-1] else f"{self.output_name}__mlp{index // 2}"
            head_weight = (weight(self.units[index + 2], self.units[index + 1]) + " "
                           if index + 2 < len(self.units) else "")
            body = f"{weight(self.units[index + 1], self.units[index])} {previous}{args}"
            lines.append(f"{head_weight}{predicate(head)}{args} :- {body}. [transformation={acts[index]}]")
            lines.append(f"{predicate(head)}/{self.arity} [transformation={acts[index + 1]}]")
            previous = predicate(head)
        return lines


class _Recurrent(Module):
    """The shared shape of RNN/GRU/LSTM: `h(X.., 0)` from the initial state, `h(X.., T)` from
    `f(X.., T)` and `h(X.., Z)` with `@next(Z, T)`."""

    def _names(self):
        args = arity_terms(self.arity)
        at = lambda name, t: f"{name}{terms(args + [t])}"  # noqa: E731
        return args, at

    def _gate(self, head: str, act: str) -> str:
        _, at = self._names()
        h, i = self.hidden_size, self.input_size
        return (f"{at(head, 'T')} :- {weight(h, i)} {at(predicate(self.input_name), 'T')}, "
                f"{weight(h, h)} {at(predicate(self.output_name), 'Z')}, @next(Z, T). [transformation={act}]")

    def _start(self, state_name: str, head: Optional[str] = None) -> str:
        args, at = self._names()
        return f"{at(head or predicate(self.output_name), '0')} :- {predicate(state_name)}{terms(args)}."


class RNN(_Recurrent):
    """`h_t = act(W_ih x_t + W_hh h_{t-1})` over time steps 1..n (`@next(Z, T)`), h_0 given."""

    def __init__(self, input_size: int, hidden_size: int, output_name: str, input_name: str, hidden_0_name: str,
                 activation: Any = "tanh", arity: int = 1):
        self.input_size, self.hidden_size = input_size, hidden_size
        self.output_name, self.input_name, self.hidden_0_name = output_name, input_name, hidden_0_name
        self.activation, self.arity = activation, arity

    def rules(self) -> List[str]:
        return [self._start(self.hidden_0_name), self._gate(predicate(self.output_name), function(self.activation))]


class GRU(_Recurrent):
    """PyNeuraLogic's GRU (reset r, update z, candidate n; `h_t = (1 - z) n + z h_{t-1}`).
    `next_name` is accepted as PyNeuraLogic 0.9.2 accepts it; like there, the rules use `@next`."""

    def __init__(self, input_size: int, hidden_size: int, output_name: str, input_name: str, hidden_0_name: str,
                 arity: int = 1, next_name: str = "_next__positive"):
        self.input_size, self.hidden_size = input_size, hidden_size
        self.output_name, self.input_name, self.hidden_0_name = output_name, input_name, hidden_0_name
        self.arity, self.next_name = arity, next_name

    def rules(self) -> List[str]:
        _, at = self._names()
        o, hs = self.output_name, self.hidden_size
        h = predicate(o)
        return [
            self._start(self.hidden_0_name),
            self._gate(f"{o}__r", "sigmoid"),
            self._gate(f"{o}__z", "sigmoid"),
            f"{at(f'{o}__n_helper', 'T')} :- {at(f'{o}__r', 'T')}, {weight(hs, hs)} {at(h, 'Z')}, @next(Z, T). "
            "[combination=elproduct]",
            f"{at(f'{o}__n', 'T')} :- {weight(hs, self.input_size)} {at(predicate(self.input_name), 'T')}, "
            f"{at(f'{o}__n_helper', 'T')}. [transformation=tanh]",
            f"{at(f'{o}__left', 'T')} :- reverse({at(f'{o}__z', 'T')}), {at(f'{o}__n', 'T')}. [combination=elproduct]",
            f"{at(f'{o}__right', 'T')} :- {at(f'{o}__z', 'T')}, {at(h, 'Z')}, @next(Z, T). [combination=elproduct]",
            f"{at(h, 'T')} :- {at(f'{o}__left', 'T')}, {at(f'{o}__right', 'T')}.",
        ]


class LSTM(_Recurrent):
    """PyNeuraLogic's LSTM (gates i, f, o, candidate n, cell c; `h_t = o tanh(c_t)`)."""

    def __init__(self, input_size: int, hidden_size: int, output_name: str, input_name: str, hidden_0_name: str,
                 cell_state_0_name: str, arity: int = 1):
        self.input_size, self.hidden_size = input_size, hidden_size
        self.output_name, self.input_name, self.hidden_0_name = output_name, input_name, hidden_0_name
        self.cell_state_0_name, self.arity = cell_state_0_name, arity

    def rules(self) -> List[str]:
        _, at = self._names()
        o = self.output_name
        return [
            self._start(self.hidden_0_name),
            self._gate(f"{o}__i", "sigmoid"),
            self._gate(f"{o}__f", "sigmoid"),
            self._gate(f"{o}__o", "sigmoid"),
            self._gate(f"{o}__n", "tanh"),
            f"{at(f'{o}__left', 'T')} :- {at(f'{o}__f', 'T')}, {at(f'{o}__c', 'Z')}, @next(Z, T). "
            "[combination=elproduct]",
            f"{at(f'{o}__right', 'T')} :- {at(f'{o}__i', 'T')}, {at(f'{o}__n', 'T')}. [combination=elproduct]",
            f"{at(f'{o}__c', 'T')} :- {at(f'{o}__left', 'T')}, {at(f'{o}__right', 'T')}.",
            self._start(self.cell_state_0_name, f"{o}__c"),
            f"{at(predicate(o), 'T')} :- {at(f'{o}__o', 'T')}, tanh({at(f'{o}__c', 'T')}). [combination=elproduct]",
        ]


class RvNN(Module):
    """Recursive network over trees: `h(P) = act(agg(W_k h(C_k)))` for a parent P with children
    C_1..C_n (`parent_map_name(P, C1, .., Cn)`), leaves from `input_name(P)`.

    The parent map is a hidden atom (`*parent(P, C1)`): it only says which children a node has.
    PyNeuraLogic 0.9.2 writes it as a plain atom, whose value (1) is then added to every
    node's sum: act(.. + 1), not its documented formula (docs/peers.md, Modules)."""

    def __init__(self, input_size: int, output_name: str, input_name: str, parent_map_name: str,
                 max_children: int = 2, activation: Any = "tanh", aggregation: Any = "sum", arity: int = 1):
        self.input_size, self.output_name, self.input_name = input_size, output_name, input_name
        self.parent_map_name, self.max_children = parent_map_name, max_children
        self.activation, self.aggregation, self.arity = activation, aggregation, arity

    def rules(self) -> List[str]:
        args = arity_terms(self.arity)
        h, parent = predicate(self.output_name), hidden(self.parent_map_name)
        meta = f"[transformation={function(self.activation)}, aggregation={function(self.aggregation, 'aggregation')}]"
        head = f"{h}{terms(args + ['P'])}"
        lines = [f"{head} :- {predicate(self.input_name)}{terms(args + ['P'])}, {parent}(P). {meta}"]
        body: List[str] = []
        for i in range(1, _positive(self.max_children, "max_children") + 1):
            n = self.input_size
            body.append(f"${self.output_name}__rvnn_{i}={weight(n, n)} {h}{terms(args + [f'C{i}'])}")
            children = ", ".join(["P"] + [f"C{k}" for k in range(1, i + 1)])
            lines.append(f"{head} :- {', '.join(body)}, {parent}({children}). {meta}")
        return lines


class Pooling(Module):
    """`out = agg over X.. of x(X..)` (a readout over nodes, edges, ...)."""

    def __init__(self, output_name: str, input_name: str, aggregation: Any, input_arity: int = 1):
        self.output_name, self.input_name = output_name, input_name
        self.aggregation, self.input_arity = aggregation, input_arity

    def rules(self) -> List[str]:
        return [f"{predicate(self.output_name)} :- {predicate(self.input_name)}{terms(arity_terms(self.input_arity))}. "
                f"[aggregation={function(self.aggregation, 'aggregation')}]"]


class SumPooling(Pooling):
    def __init__(self, output_name: str, input_name: str, input_arity: int = 1):
        super().__init__(output_name, input_name, "sum", input_arity)


class AvgPooling(Pooling):
    def __init__(self, output_name: str, input_name: str, input_arity: int = 1):
        super().__init__(output_name, input_name, "avg", input_arity)


class MaxPooling(Pooling):
    def __init__(self, output_name: str, input_name: str, input_arity: int = 1):
        super().__init__(output_name, input_name, "max", input_arity)


class Attention(Module):
    """Scaled dot-product attention: `att(X) = sum_Y softmax_Y(q_X . k_Y / sqrt(d)) v_Y`; the
    first `arity - 1` terms are shared (batch/head), a mask is a hidden atom `mask(.., X, Y)`."""

    def __init__(self, embed_dim: int, output_name: str, query_name: str, key_name: str, value_name: str,
                 mask_name: Optional[str] = None, arity: int = 1):
        self.embed_dim, self.output_name = embed_dim, output_name
        self.query_name, self.key_name, self.value_name = query_name, key_name, value_name
        self.mask_name, self.arity = mask_name, arity

    def rules(self) -> List[str]:
        shared = arity_terms(max(self.arity - 1, 0))
        out, dk, dot = self.output_name, f"{self.output_name}__dk", f"{self.output_name}__dot"
        scale = 1 / math.sqrt(_positive(self.embed_dim, "embed_dim"))
        pair, query, key = terms(shared + ["X", "Y"]), terms(shared + ["X"]), terms(shared + ["Y"])
        mask = f", {hidden(self.mask_name)}{pair}" if self.mask_name is not None else ""
        return [
            f"<{number(scale)}> {dk}.",
            f"{dot}{pair} :- {dk}, transpose({predicate(self.key_name)}{key}), {predicate(self.query_name)}{query}"
            f"{mask}. [combination=product, aggregation=softmax(agg_terms=[Y])]",
            f"{predicate(out)}{query} :- {dot}{pair}, {predicate(self.value_name)}{key}. "
            "[combination=product, aggregation=sum]",
        ]


class MultiheadAttention(Module):
    """PyNeuraLogic's multi-head attention: query/key/value projections (`$out_qw`, `$out_kw`,
    `$out_vw`), per head a row slice of them, the heads concatenated and projected."""

    def __init__(self, embed_dim: int, num_heads: int, output_name: str, query_name: str, key_name: str,
                 value_name: str, vdim: Optional[int] = None, kdim: Optional[int] = None,
                 mask_name: Optional[str] = None, arity: int = 1):
        self.embed_dim, self.num_heads, self.output_name = embed_dim, num_heads, output_name
        self.query_name, self.key_name, self.value_name = query_name, key_name, value_name
        self.vdim = embed_dim if vdim is None else vdim
        self.kdim = embed_dim if kdim is None else kdim
        self.mask_name, self.arity = mask_name, arity

    def rules(self) -> List[str]:
        dim, heads = _positive(self.embed_dim, "embed_dim"), _positive(self.num_heads, "num_heads")
        if dim % heads:
            raise ValueError(f"embed_dim ({dim}) must be divisible by num_heads ({heads})")
        if self.arity < 1:
            # the last term is the sequence position; PyNeuraLogic's arity-0 rules have none, so
            # their attention runs across the heads (or, with one head, grounds nothing)
            raise ValueError(f"MultiheadAttention needs arity >= 1 (the last term is the position), got {self.arity}")
        out = self.output_name
        args = arity_terms(self.arity)
        q, k, v = (predicate(n) for n in (self.query_name, self.key_name, self.value_name))
        qw, kw, vw = f"${out}_qw={weight(dim, dim)}", f"${out}_kw={weight(dim, self.kdim)}", \
            f"${out}_vw={weight(dim, self.vdim)}"
        attention = Attention(dim // heads, f"{out}__attention", f"{out}__qproj", f"{out}__kproj", f"{out}__vproj",
                              self.mask_name, self.arity + (heads != 1))
        lines = attention.rules()
        if heads == 1:
            a = terms(args)
            return lines + [f"{qw} {out}__qproj{a} :- {q}{a}.", f"{vw} {out}__vproj{a} :- {v}{a}.",
                            f"{kw} {out}__kproj{a} :- {k}{a}.", f"{weight(dim, dim)} {predicate(out)}{a} :- "
                            f"{out}__attention{a}."]
        size, a = dim // heads, terms(args)
        for i in range(heads):
            at = terms([str(i)] + args)
            meta = f"[transformation=slice(rows=[{i * size}, {(i + 1) * size}], cols=...)]"
            lines += [f"{out}__qproj{at} :- {qw} {q}{a}. {meta}", f"{out}__vproj{at} :- {vw} {v}{a}. {meta}",
                      f"{out}__kproj{at} :- {kw} {k}{a}. {meta}"]
        concat = ", ".join(f"{out}__attention{terms([str(i)] + args)}" for i in range(heads))
        return lines + [f"{weight(dim, dim)} {predicate(out)}{a} :- {concat}. [combination=concat]"]


class PositionalEncoding(Module):
    """Sinusoidal position embeddings added to the input: `out(X) = pe(X) + x(X)` with the
    values as facts (fixed, or learnable with `learnable=True`). PyNeuraLogic 0.9.2 uses the
    base 1000 (`base=1000.0`, the default here so the rules are its rules); "Attention Is All
    You Need" uses 10000: pass `base=10000.0` for that."""

    def __init__(self, embed_dim: int, max_len: int, output_name: str, input_name: str, arity: int = 1,
                 learnable: bool = False, base: float = 1000.0):
        self.embed_dim, self.max_len, self.output_name, self.input_name = embed_dim, max_len, output_name, input_name
        self.arity, self.learnable, self.base = arity, learnable, base

    def table(self) -> np.ndarray:
        """The [max_len, embed_dim] encodings: sin at even columns, cos at odd ones."""
        dim, length = _positive(self.embed_dim, "embed_dim"), _positive(self.max_len, "max_len")
        if dim % 2:
            raise ValueError(f"PositionalEncoding needs an even embed_dim (sin/cos pairs), got {dim}")
        position = np.arange(0, length).reshape((length, 1))
        frequencies = np.exp(np.arange(0, dim, 2) * (-math.log(self.base) / dim))
        angles = position * frequencies
        pe = np.zeros((length, dim))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
        return pe

    def rules(self) -> List[str]:
        shared, args = arity_terms(max(self.arity - 1, 0)), arity_terms(self.arity)
        pe = f"{self.output_name}__pe"
        lines = []
        for i, row in enumerate(self.table()):
            value = "[" + ", ".join(repr(float(x)) for x in row) + "]"
            value = value if self.learnable else f"<{value}>"
            lines.append(f"{value} {pe}{terms(shared + [str(i)])}.")
        a = terms(args)
        return lines + [f"{predicate(self.output_name)}{a} :- {pe}{a}, {predicate(self.input_name)}{a}. "
                        "[combination=sum]"]


class _EncoderBlock(Module):
    """Attention over (query, key, value), a residual norm, then (with `mlp`) a feed-forward
    MLP and a second residual norm."""

    def __init__(self, input_dim: int, num_heads: int, dim_feedforward: int, output_name: str, query_name: str,
                 key_name: str, value_name: str, mask_name: Optional[str] = None, arity: int = 1, mlp: bool = True):
        self.input_dim, self.num_heads, self.dim_feedforward = input_dim, num_heads, dim_feedforward
        self.output_name, self.query_name, self.key_name, self.value_name = output_name, query_name, key_name, \
            value_name
        self.mask_name, self.arity, self.mlp = mask_name, arity, mlp

    def rules(self) -> List[str]:
        a = terms(arity_terms(self.arity))
        out = self.output_name
        attn, norm, mlp = f"{out}__mhattn", f"{out}__norm", f"{out}__mlp"
        lines = MultiheadAttention(self.input_dim, self.num_heads, attn, self.query_name, self.key_name,
                                   self.value_name, mask_name=self.mask_name, arity=self.arity).rules()
        residual = f"{attn}{a}, {predicate(self.query_name)}{a}"
        if not self.mlp:
            return lines + [f"{predicate(out)}{a} :- {residual}. [transformation=norm]"]
        return lines + [
            f"{norm}{a} :- {residual}. [transformation=norm]",
            *MLP([self.input_dim, self.dim_feedforward, self.input_dim], mlp, norm, ["relu", "identity"],
                 self.arity).rules(),
            f"{predicate(out)}{a} :- {norm}{a}, {mlp}{a}. [transformation=norm]",
        ]


class TransformerEncoder(_EncoderBlock):
    """Self-attention over `input_name`, norm, feed-forward, norm (post-norm, no dropout)."""

    def __init__(self, input_dim: int, num_heads: int, dim_feedforward: int, output_name: str, input_name: str,
                 mask_name: Optional[str] = None, arity: int = 1):
        super().__init__(input_dim, num_heads, dim_feedforward, output_name, input_name, input_name, input_name,
                         mask_name, arity, True)
        self.input_name = input_name


class TransformerDecoder(Module):
    """Self-attention over `input_name` (with `mask_name`) and norm, then attention to the
    encoder's output (with `memory_mask_name`), norm, feed-forward, norm."""

    def __init__(self, input_dim: int, num_heads: int, dim_feedforward: int, output_name: str, input_name: str,
                 encoder_name: str, mask_name: Optional[str] = None, memory_mask_name: Optional[str] = None,
                 arity: int = 1):
        self.input_dim, self.num_heads, self.dim_feedforward = input_dim, num_heads, dim_feedforward
        self.output_name, self.input_name, self.encoder_name = output_name, input_name, encoder_name
        self.mask_name, self.memory_mask_name, self.arity = mask_name, memory_mask_name, arity

    def rules(self) -> List[str]:
        first = f"{self.output_name}__decoder"
        shape = (self.input_dim, self.num_heads, self.dim_feedforward)
        return [
            *_EncoderBlock(*shape, first, self.input_name, self.input_name, self.input_name, self.mask_name,
                           self.arity, False).rules(),
            *_EncoderBlock(*shape, self.output_name, first, self.encoder_name, self.encoder_name,
                           self.memory_mask_name, self.arity).rules(),
        ]


class Transformer(Module):
    """An encoder over `src_name` (output `<output_name>__encoder`) and a decoder over
    `tgt_name` attending to it."""

    def __init__(self, input_dim: int, num_heads: int, dim_feedforward: int, output_name: str, src_name: str,
                 tgt_name: str, src_mask_name: Optional[str] = None, tgt_mask_name: Optional[str] = None,
                 memory_mask_name: Optional[str] = None, arity: int = 1):
        self.input_dim, self.num_heads, self.dim_feedforward = input_dim, num_heads, dim_feedforward
        self.output_name, self.src_name, self.tgt_name = output_name, src_name, tgt_name
        self.src_mask_name, self.tgt_mask_name, self.memory_mask_name = src_mask_name, tgt_mask_name, memory_mask_name
        self.arity = arity

    def rules(self) -> List[str]:
        encoder = f"{self.output_name}__encoder"
        shape = (self.input_dim, self.num_heads, self.dim_feedforward)
        return [
            *TransformerEncoder(*shape, encoder, self.src_name, self.src_mask_name, self.arity).rules(),
            *TransformerDecoder(*shape, self.output_name, self.tgt_name, encoder, self.tgt_mask_name,
                                self.memory_mask_name, self.arity).rules(),
        ]
