"""The torch model lrnn.nn.Seq2Seq computes: the peer of its parity tests and of
bench/seq2seq.py. nn.Embedding(V, d) (one table for source and decoder input) scaled by
sqrt(d) plus sinusoidal positions, nn.Transformer(dropout=0, batch_first=True) with a causal
target mask, and the output projection: the embedding table itself (tied) or nn.Linear(d, V).
Batches of pairs of different lengths are padded; padded keys are masked out and padded
targets ignored by the loss (ignore_index=-100), so a batch computes what its pairs would
one by one."""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple

import numpy as np
import torch

from lrnn import _core


class TorchSeq2Seq(torch.nn.Module):
    def __init__(self, vocab_size: int, d_model: int = 32, nhead: int = 4, num_encoder_layers: int = 2,
                 num_decoder_layers: int = 2, dim_feedforward: int = 64, max_len: int = 64, tie_output: bool = True,
                 norm_first: bool = False, dtype: torch.dtype = torch.float64):
        super().__init__()
        self.vocab_size, self.d_model, self.max_len, self.tie_output = vocab_size, d_model, max_len, tie_output
        self.embedding = torch.nn.Embedding(vocab_size, d_model, dtype=dtype)
        self.transformer = torch.nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
                                                dim_feedforward, dropout=0.0, batch_first=True,
                                                norm_first=norm_first, dtype=dtype)
        self.out = None if tie_output else torch.nn.Linear(d_model, vocab_size, dtype=dtype)
        pe = torch.tensor(_core.zoo_positional_encoding(max_len, d_model), dtype=dtype)
        self.register_buffer("pe", pe, persistent=False)

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[1]]

    def encode(self, src: torch.Tensor, src_pad: torch.Tensor = None) -> torch.Tensor:
        return self.transformer.encoder(self._embed(src), src_key_padding_mask=src_pad)

    def decode(self, memory: torch.Tensor, tgt_in: torch.Tensor, src_pad: torch.Tensor = None,
               tgt_pad: torch.Tensor = None) -> torch.Tensor:
        m = tgt_in.shape[1]
        # Additive (-inf: not attended), as batch_tensors' padding masks: torch deprecates
        # mixing boolean and float masks.
        causal = torch.triu(torch.full((m, m), float("-inf"), dtype=memory.dtype), diagonal=1)
        h = self.transformer.decoder(self._embed(tgt_in), memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                                     memory_key_padding_mask=src_pad)
        return h @ self.embedding.weight.T if self.out is None else self.out(h)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, src_pad: torch.Tensor = None,
                tgt_pad: torch.Tensor = None) -> torch.Tensor:
        """[B, m, V] logits; src [B, n] and tgt_in [B, m] token ids, *_pad -inf at padding."""
        return self.decode(self.encode(src, src_pad), tgt_in, src_pad, tgt_pad)

    @torch.no_grad()
    def generate(self, src: Sequence[int], max_len: int, bos: int, eos: int, beam: int = 1) -> List[int]:
        """Greedy decoding of one source: the encoder once, the decoder on the growing prefix;
        beam > 1: lrnn.nn.zoo.seq2seq.beam_search over this model's logits."""
        memory = self.encode(torch.tensor([list(src)]))
        if beam > 1:
            from lrnn.nn.zoo.seq2seq import beam_search

            return beam_search(lambda p: self.decode(memory, torch.tensor([p]))[0, -1].double().numpy(), bos, eos,
                               max_len, beam)
        prefix = [bos]
        out: List[int] = []
        for _ in range(max_len):
            token = int(self.decode(memory, torch.tensor([prefix]))[0, -1].argmax())
            if token == eos:
                break
            out.append(token)
            prefix.append(token)
        return out


def batch_tensors(pairs: Sequence[Tuple[Sequence[int], Sequence[int]]], bos: int, eos: int, pad: int = 0,
                  dtype: torch.dtype = torch.float64):
    """src, tgt_in, tgt_out, src_pad, tgt_pad of a batch of pairs (tgt_in = [bos] + target,
    tgt_out = target + [eos], padded positions of tgt_out = -100; the padding masks additive,
    -inf at padding, in `dtype`)."""
    n = max(len(s) for s, _ in pairs)
    m = max(len(t) for _, t in pairs) + 1
    src = np.full((len(pairs), n), pad)
    tgt_in = np.full((len(pairs), m), pad)
    tgt_out = np.full((len(pairs), m), -100)
    for k, (s, t) in enumerate(pairs):
        src[k, :len(s)] = s
        tgt_in[k, :len(t) + 1] = [bos] + list(t)
        tgt_out[k, :len(t) + 1] = list(t) + [eos]
    src_t, tgt_in_t, tgt_out_t = (torch.tensor(a) for a in (src, tgt_in, tgt_out))
    src_pad = np.arange(n)[None, :] >= np.array([len(s) for s, _ in pairs])[:, None]
    tgt_pad = np.arange(m)[None, :] >= np.array([len(t) + 1 for _, t in pairs])[:, None]
    return (src_t, tgt_in_t, tgt_out_t, torch.tensor(np.where(src_pad, -np.inf, 0.0), dtype=dtype),
            torch.tensor(np.where(tgt_pad, -np.inf, 0.0), dtype=dtype))


__all__ = ["TorchSeq2Seq", "batch_tensors"]
