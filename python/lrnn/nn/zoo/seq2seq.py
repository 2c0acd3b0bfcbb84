"""A sequence-to-sequence transformer ("Attention Is All You Need") as one lrnn template.

`Seq2Seq(vocab_size, d_model, nhead, ...)` generates the template with the C++ zoo
(`zoo::seq2seq`, docs/seq2seq.md): one embedding table for source, decoder input and (tied)
output projection, sinusoidal positions, torch's nn.Transformer under a causal target mask,
V logits per target position. `fit` trains it with the engine (cross-entropy, optionally label
smoothing, any optimizer and the noam warm-up schedule) on sequence pairs, one example per
pair; `generate` decodes greedily with the same weights. `load_torch` takes the weights of
`lrnn.nn.seq2seq_torch.TorchSeq2Seq`, the torch model of the same function.

    >>> from lrnn.nn import Seq2Seq
    >>> model = Seq2Seq(vocab_size=8, d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
    ...                 dim_feedforward=32, max_len=12)
    >>> model.fit([([3, 4, 5], [5, 4, 3])], epochs=1, batch_size=1)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from lrnn import _core

Pair = Tuple[Sequence[int], Sequence[int]]


class Seq2Seq:
    """The encoder-decoder over a vocabulary of `vocab_size` tokens. Token ids are integers in
    [0, vocab_size); `bos` starts every decoder input and `eos` ends every target (both are
    tokens of the vocabulary, chosen by the caller). Sequences (source, and target plus one)
    are at most `max_len` long. `tie_output=False` gives the output projection its own weight
    and bias (torch's nn.Linear(d_model, vocab_size))."""

    #: the zoo module it generates (src/zoo/seq2seq.cpp)
    zoo_name = "seq2seq"

    def __init__(self, vocab_size: int, d_model: int = 32, nhead: int = 4, num_encoder_layers: int = 2,
                 num_decoder_layers: int = 2, dim_feedforward: int = 64, max_len: int = 64, bos: int = 1,
                 eos: int = 2, tie_output: bool = True, norm_first: bool = False, prefix: str = "s2s",
                 source: str = "src", target: str = "tgt", seed: int = 1, initializer: str = "glorot"):
        for name, value in (("bos", bos), ("eos", eos)):
            if not 0 <= int(value) < vocab_size:
                raise ValueError(f"{name}={value} is not a token of a vocabulary of {vocab_size}")
        self.vocab_size, self.d_model, self.nhead = int(vocab_size), int(d_model), int(nhead)
        self.num_encoder_layers, self.num_decoder_layers = int(num_encoder_layers), int(num_decoder_layers)
        self.dim_feedforward, self.max_len, self.tie_output = int(dim_feedforward), int(max_len), bool(tie_output)
        self.norm_first, self.bos, self.eos, self.seed = bool(norm_first), int(bos), int(eos), int(seed)
        self.module = _core.zoo_module(self.zoo_name, dict(
            vocab=self.vocab_size, d_model=self.d_model, nhead=self.nhead, num_encoder_layers=self.num_encoder_layers,
            num_decoder_layers=self.num_decoder_layers, dim_feedforward=self.dim_feedforward, prefix=prefix,
            source=source, target=target, max_len=self.max_len, tie_output=self.tie_output,
            norm_first=self.norm_first, norm_affine=True))
        self.source, self.target, self.output = source, target, self.module.output
        # The same model cut at the memory (zoo::seq2seq_parts): generation encodes a source
        # once and runs only the decoder per step, as torch's greedy decoding does.
        self._encoder, self._decoder = _core.zoo_seq2seq_parts(
            self.vocab_size, self.d_model, self.nhead, self.num_encoder_layers, self.num_decoder_layers,
            self.dim_feedforward, prefix, source, target, self.max_len, self.tie_output, self.norm_first, True)
        # The engine model trains; the sequence models (weights copied when they changed)
        # run the whole model (logits) and the two parts (generate), each reusing one
        # grounded plan per length (source, prefix).
        self._model = _core.Model(self.module.text(), initializer, self.seed)
        self._runners: Dict[str, Any] = {}
        self._stale_runners = set()
        self._prepared: Dict[int, Tuple[Any, Any]] = {}

    def rules(self) -> str:
        """The template, in the text format (docs/language.md)."""
        return self.module.text()

    # ---- weights ---------------------------------------------------------------------------
    def parameters(self) -> Dict[str, np.ndarray]:
        """Every weight by name (without '$')."""
        return {name[1:]: np.array(value) for name, value, _ in self._model.parameters() if name.startswith("$")}

    def set_parameter(self, name: str, value) -> None:
        self._model.set_parameter("$" + name.lstrip("$"), np.ascontiguousarray(np.asarray(value, dtype=np.float64)))
        self._stale_runners = set(self._runners)

    def _slices(self):
        return list(self.module.torch)

    def load_torch(self, torch_module) -> "Seq2Seq":
        """The weights of a `TorchSeq2Seq` of the same sizes (its state_dict); a missing key, a
        key this model has no place for or a tensor of another shape is refused by name."""
        state = {k: v.detach().cpu().double().numpy() for k, v in torch_module.state_dict().items() if k != "pe"}
        wanted: Dict[str, Tuple[int, int]] = {}
        for s in self._slices():
            r, c = wanted.get(s.torch_name, (0, 0))
            wanted[s.torch_name] = (max(r, s.row_end), max(c, s.col_end))
        unused = sorted(set(state) - set(wanted))
        if unused:
            raise ValueError(f"load_torch: the torch module has weights this Seq2Seq has no place for: {', '.join(unused)}")
        for key, (r, c) in wanted.items():
            if key not in state:
                raise ValueError(f"load_torch: the torch module has no {key}")
            a = state[key].reshape(state[key].shape[0], -1)
            if a.shape != (r, c):
                raise ValueError(f"load_torch: {key} is {tuple(a.shape)} in the torch module, this Seq2Seq needs {(r, c)}")
            state[key] = a
        for s in self._slices():
            self.set_parameter(s.weight, state[s.torch_name][s.row_begin:s.row_end, s.col_begin:s.col_end])
        return self

    def torch_state(self) -> Dict[str, np.ndarray]:
        """The weights laid out as a TorchSeq2Seq's state_dict (1-D tensors flat)."""
        params = self.parameters()
        shapes: Dict[str, Tuple[int, int]] = {}
        for s in self._slices():
            r, c = shapes.get(s.torch_name, (0, 0))
            shapes[s.torch_name] = (max(r, s.row_end), max(c, s.col_end))
        out = {k: np.zeros(shape) for k, shape in shapes.items()}
        vector = {s.torch_name for s in self._slices() if s.vector}
        for s in self._slices():
            out[s.torch_name][s.row_begin:s.row_end, s.col_begin:s.col_end] = params[s.weight].reshape(
                s.row_end - s.row_begin, s.col_end - s.col_begin)
        return {k: (v[:, 0] if k in vector else v) for k, v in out.items()}

    # ---- data ------------------------------------------------------------------------------
    def _check_tokens(self, tokens: Sequence[int], what: str) -> List[int]:
        out = [int(t) for t in tokens]
        bad = [t for t in out if not 0 <= t < self.vocab_size]
        if bad:
            raise ValueError(f"{what} holds token {bad[0]}, outside the vocabulary [0, {self.vocab_size})")
        return out

    def _one_hot(self, tokens: Sequence[int]) -> np.ndarray:
        a = np.zeros((len(tokens), self.vocab_size))
        a[np.arange(len(tokens)), tokens] = 1.0
        return a

    def examples_text(self, pairs: Sequence[Pair]) -> Tuple[str, str]:
        """The examples and queries (docs/language.md) of sequence pairs: one example per pair
        holding its one-hot source and decoder input ([bos] + target), one query per target
        position whose target is the class index of the next token (target + [eos])."""
        examples, queries = [], []
        for k, (src, tgt) in enumerate(pairs):
            src = self._check_tokens(src, f"the source of pair {k}")
            tgt = self._check_tokens(tgt, f"the target of pair {k}")
            if not src:
                raise ValueError(f"the source of pair {k} is empty")
            longest = max(len(src), len(tgt) + 1)
            if longest > self.max_len:
                raise ValueError(f"pair {k} needs {longest} positions; this Seq2Seq encodes max_len={self.max_len}")
            dec_in, dec_out = [self.bos] + tgt, tgt + [self.eos]
            facts = [f"<[{self.vocab_size}|{t}:1]> {self.source}({i})" for i, t in enumerate(src)]
            facts += [f"<[{self.vocab_size}|{t}:1]> {self.target}({i})" for i, t in enumerate(dec_in)]
            examples.append(f"p{k} :- " + ", ".join(facts) + ".")
            queries.append(f"p{k} :- " + ", ".join(f"{t} {self.output}({i})" for i, t in enumerate(dec_out)) + ".")
        return "\n".join(examples) + "\n", "\n".join(queries) + "\n"

    def _prepare(self, pairs: Sequence[Pair]):
        key = id(pairs)
        if key not in self._prepared or self._prepared[key][0] is not pairs:
            examples, queries = self.examples_text(pairs)
            self._prepared[key] = (pairs, self._model.prepare_text(examples, queries))
        return self._prepared[key][1]

    # ---- training --------------------------------------------------------------------------
    def fit(self, pairs: Sequence[Pair], *, epochs: int = 1, batch_size: int = 32, optimizer: str = "adam",
            lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.98), eps: float = 1e-9,
            label_smoothing: float = 0.0, schedule: str = "constant", warmup: int = 4000,
            d_model_factor: bool = True, shuffle: bool = True, dtype: str = "float64",
            test_pairs: Optional[Sequence[Pair]] = None,
            callback: Optional[Callable[[Dict[str, Any]], Any]] = None) -> Dict[str, Any]:
        """Trains on the pairs with the engine: cross-entropy of every target position (mean over
        a batch's tokens) with `label_smoothing`, `optimizer` (adam, adamw, sgd), `schedule`
        ("noam": lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), per optimizer step;
        d_model_factor=False leaves out d_model^-0.5). Returns the engine's report (history of
        per-epoch dicts with "loss", "seconds", ...)."""
        config: Dict[str, Any] = {
            "epochs": int(epochs), "batch_size": int(batch_size), "optimizer": optimizer, "lr": float(lr),
            "loss": "crossentropy", "label_smoothing": float(label_smoothing), "schedule": schedule,
            "warmup": int(warmup), "shuffle": bool(shuffle), "seed": self.seed, "dtype": dtype,
        }
        if optimizer in ("adam", "adamw"):
            config.update(beta1=float(betas[0]), beta2=float(betas[1]), eps=float(eps))
        if d_model_factor:
            config["d_model"] = self.d_model
        train_set = self._prepare(pairs)
        test_set = self._prepare(test_pairs) if test_pairs is not None else None
        self._stale_runners = set(self._runners)
        return self._model.train(train_set, test_set, config, callback)

    def loss(self, pairs: Sequence[Pair], label_smoothing: float = 0.0) -> float:
        """The mean cross-entropy over every target token of the pairs."""
        self._model.configure({"loss": "crossentropy", "label_smoothing": float(label_smoothing)})
        return float(self._model.evaluate(self._prepare(pairs), "crossentropy")["loss"])

    # ---- generation ------------------------------------------------------------------------
    def _sequence_model(self, dtype: str, part: str = "whole"):
        """The SequenceModel of the whole model or of one part ("encoder", "decoder"), with the
        trained weights (copied again after training or set_parameter)."""
        runner = self._runners.get(part)
        if runner is None:
            module = {"whole": self.module, "encoder": self._encoder, "decoder": self._decoder}[part]
            runner = self._runners[part] = _core.ZooSequenceModel(module, self.seed)
            self._stale_runners.add(part)
        if runner.dtype != dtype:
            runner.dtype = dtype
        if part in self._stale_runners:
            # The named weights are the learned ones (the positions are fixed facts of the text);
            # a part has the ones it uses.
            names = set(runner.parameter_names())
            for name, value, _ in self._model.parameters():
                if name.startswith("$") and name[1:] in names:
                    runner.set_parameter(name[1:], np.ascontiguousarray(value.reshape(value.shape[0], -1)))
            self._stale_runners.discard(part)
        return runner

    def logits(self, src: Sequence[int], tgt_in: Sequence[int], dtype: str = "float64") -> np.ndarray:
        """[len(tgt_in), vocab_size] logits of the decoder input `tgt_in` (starting with bos)."""
        src = self._check_tokens(src, "src")
        tgt_in = self._check_tokens(tgt_in, "tgt_in")
        if max(len(src), len(tgt_in)) > self.max_len:
            raise ValueError(f"a sequence of {max(len(src), len(tgt_in))} tokens; this Seq2Seq encodes "
                             f"max_len={self.max_len}")
        runner = self._sequence_model(dtype)
        return np.asarray(runner.forward([(self.source, self._one_hot(src)), (self.target, self._one_hot(tgt_in))],
                                         len(tgt_in), []))

    def generate(self, src: Sequence[int], max_len: int, bos: Optional[int] = None, eos: Optional[int] = None,
                 dtype: str = "float64", beam: int = 1) -> List[int]:
        """Greedy decoding (beam=1): from [bos], append the most likely next token (the first on a
        tie, as torch.argmax) until eos or max_len tokens; returns the tokens after bos, without
        eos. beam > 1: beam_search with that width. The source is encoded once (the encoder
        part), then every step runs the decoder part on the prefix and that memory; each
        length is grounded once and its plan reused."""
        bos = self.bos if bos is None else int(bos)
        eos = self.eos if eos is None else int(eos)
        if max_len > self.max_len:
            raise ValueError(f"max_len={max_len} needs {max_len} decoder positions; this Seq2Seq encodes "
                             f"max_len={self.max_len}")
        src = self._check_tokens(src, "src")
        if len(src) > self.max_len:
            raise ValueError(f"a source of {len(src)} tokens; this Seq2Seq encodes max_len={self.max_len}")
        memory = np.asarray(self._sequence_model(dtype, "encoder").forward([(self.source, self._one_hot(src))],
                                                                            len(src), []))
        decoder = self._sequence_model(dtype, "decoder")
        memory_name = self._decoder.memory

        def next_logits(prefix: List[int]) -> np.ndarray:
            inputs = [(self.target, self._one_hot(prefix)), (memory_name, memory)]
            return np.asarray(decoder.forward(inputs, len(prefix), []))[-1]

        if beam > 1:
            return beam_search(next_logits, bos, eos, max_len, beam)
        out: List[int] = []
        prefix = [bos]
        for _ in range(int(max_len)):
            step = next_logits(prefix)
            token = int(np.argmax(step))
            if token == eos:
                break
            out.append(token)
            prefix.append(token)
        return out


def beam_search(next_logits: Callable[[List[int]], np.ndarray], bos: int, eos: int, max_len: int,
                beam: int) -> List[int]:
    """Beam search over `next_logits(prefix)` (the logits of the token after the prefix): each
    step extends every live hypothesis by its `beam` most likely tokens, keeps the `beam` best
    of them by summed log-probability (ties: the earlier, as a stable sort keeps them), and
    sets aside those ending in eos. It stops when no hypothesis lives, after max_len tokens, or
    when a finished one scores at least the best live one (scores only fall as tokens are
    added); the best finished hypothesis wins (the best live one if none finished). No length
    penalty. Returns its tokens after bos, without eos. TorchSeq2Seq.generate(beam=) runs
    this same function on torch's logits."""
    if beam < 1:
        raise ValueError(f"beam must be at least 1, got {beam}")
    live: List[Tuple[float, List[int]]] = [(0.0, [bos])]
    done: List[Tuple[float, List[int]]] = []
    for _ in range(int(max_len)):
        candidates = []
        for score, seq in live:
            z = np.asarray(next_logits(seq), dtype=np.float64)
            logp = z - (z.max() + np.log(np.exp(z - z.max()).sum()))
            for t in np.argsort(-logp, kind="stable")[:beam]:
                candidates.append((score + float(logp[t]), seq + [int(t)]))
        candidates.sort(key=lambda c: -c[0])
        live = []
        for score, seq in candidates[:beam]:
            (done if seq[-1] == eos else live).append((score, seq))
        if not live or (done and max(d[0] for d in done) >= live[0][0]):
            break
    best = max(done or live, key=lambda c: c[0])[1]
    return best[1:-1] if best[-1] == eos else best[1:]


__all__ = ["Seq2Seq"]  # exported by lrnn.nn; beam_search is imported from here
