"""torch.nn.MultiheadAttention as rules (the zoo modules `multihead_attention` and `attention`,
src/zoo/attention.cpp), and the single head of PyNeuraLogic's "Beyond Transformers"."""

from __future__ import annotations

import numpy as np

from lrnn.nn.zoo._base import Mask, MaskLike, ZooModule, _as_2d, _as_mask
from lrnn.nn.zoo._torch_checks import _attention_settings


class MultiheadAttention(ZooModule):
    """torch.nn.MultiheadAttention(embed_dim, num_heads) (batch of one sequence, dropout 0).
    Call with x [n, d] for self-attention, or (x, memory) for cross-attention."""

    zoo_name = "multihead_attention"

    def __init__(self, embed_dim: int, num_heads: int = 1, bias: bool = True, mask: MaskLike = None,
                 prefix: str = "attn", seed: int = 1, cross: bool = False, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.embed_dim, self.num_heads, self.bias, self.prefix, self.cross = embed_dim, num_heads, bias, prefix, cross
        self._default_mask = _as_mask(mask)
        self._model_for(self._default_mask)

    def _torch_settings(self, torch_module):
        return _attention_settings(torch_module, self.embed_dim, self.num_heads, self.bias)

    def _zoo_parameters(self, mask: Mask):
        # cross-attention reads its keys and values from the `memory` input
        return {**super()._zoo_parameters(mask), "key_input": "memory" if self.cross else ""}

    def __call__(self, x, memory=None, mask: MaskLike = None) -> np.ndarray:
        x = _as_2d(x, "x")
        inputs = [("input", x)]
        if self.cross:
            if memory is None:
                raise ValueError("a cross-attention module needs memory (the keys and values)")
            inputs.append(("memory", _as_2d(memory, "memory")))
        elif memory is not None:
            raise ValueError("memory is only for modules built with cross=True")
        return self._run(inputs, x.shape[0], mask)


class Attention(MultiheadAttention):
    """One head with [d, d] q/k/v projections and no output projection (the form of
    PyNeuraLogic's "Beyond Transformers"); no torch counterpart."""

    zoo_name = "attention"

    def __init__(self, embed_dim: int, bias: bool = True, mask: MaskLike = None, prefix: str = "attn", seed: int = 1,
                 dtype: str = "float64"):
        ZooModule.__init__(self, seed, dtype)
        self.embed_dim, self.num_heads, self.bias, self.prefix, self.cross = embed_dim, 1, bias, prefix, False
        self._default_mask = _as_mask(mask)
        self._model_for(self._default_mask)


__all__ = ["MultiheadAttention", "Attention"]
