"""torch.nn's transformer layers as rules (the zoo modules `transformer_encoder_layer`,
`transformer_encoder`, `transformer_decoder_layer` and `transformer`, src/zoo/transformer.cpp):
encoder and decoder layers, the encoder stack and the whole encoder-decoder."""

from __future__ import annotations

from typing import Optional

import numpy as np

from lrnn.nn.zoo._base import Mask, MaskLike, ZooModule, _as_2d, _as_mask
from lrnn.nn.zoo._torch_checks import _layer_settings


class TransformerEncoderLayer(ZooModule):
    """torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0,
    activation="relu", norm_first) with layer_norm_eps 1e-5. norm_affine=False uses plain
    layer normalisation (equal to torch's default affine parameters 1 and 0)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, norm_first: bool = False,
                 norm_affine: bool = False, mask: MaskLike = None, prefix: str = "enc", seed: int = 1,
                 num_layers: int = 0, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.norm_first, self.norm_affine, self.prefix, self.num_layers = norm_first, norm_affine, prefix, num_layers
        self._default_mask = _as_mask(mask)
        self._model_for(self._default_mask)

    def _torch_kind(self) -> str:
        return "TransformerEncoder" if self.num_layers else "TransformerEncoderLayer"

    def _torch_settings(self, torch_module):
        if not self.num_layers:
            return _layer_settings(torch_module, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, False)
        out = [("num_layers", torch_module.num_layers, self.num_layers), ("norm", torch_module.norm, None)]
        for i, layer in enumerate(torch_module.layers):
            out += [(f"layers.{i}.{n}", a, b) for n, a, b in
                    _layer_settings(layer, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, False)]
        return out

    @property
    def zoo_name(self) -> str:  # type: ignore[override]
        return "transformer_encoder" if self.num_layers else "transformer_encoder_layer"

    def __call__(self, x, mask: MaskLike = None) -> np.ndarray:
        x = _as_2d(x, "x")
        return self._run([("input", x)], x.shape[0], mask)


class TransformerEncoder(TransformerEncoderLayer):
    """torch.nn.TransformerEncoder(layer, num_layers) without a final norm: `layer` is a
    TransformerEncoderLayer whose settings every layer copies."""

    def __init__(self, layer: TransformerEncoderLayer, num_layers: int, mask: MaskLike = None, seed: int = 1,
                 dtype: Optional[str] = None):
        if num_layers <= 0:
            raise ValueError("num_layers must be positive")
        super().__init__(layer.d_model, layer.nhead, layer.dim_feedforward, layer.norm_first, layer.norm_affine,
                         mask if mask is not None else layer._default_mask, layer.prefix, seed, num_layers,
                         dtype if dtype is not None else layer.dtype)


class TransformerDecoderLayer(ZooModule):
    """torch.nn.TransformerDecoderLayer (dropout 0, ReLU): self-attention over the target
    (tgt_mask, e.g. Mask.causal()), cross-attention over the memory, ReLU MLP."""

    zoo_name = "transformer_decoder_layer"

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, norm_first: bool = False,
                 norm_affine: bool = False, tgt_mask: MaskLike = None, memory_mask: MaskLike = None,
                 prefix: str = "dec", seed: int = 1, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.norm_first, self.norm_affine, self.prefix = norm_first, norm_affine, prefix
        self._memory_mask = _as_mask(memory_mask)
        self._default_mask = _as_mask(tgt_mask)
        self._model_for(self._default_mask)

    def _torch_settings(self, torch_module):
        return _layer_settings(torch_module, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, True)

    def _zoo_parameters(self, mask: Mask):
        params = super()._zoo_parameters(mask)
        params.update(self_mask=list(mask.literals), memory_mask=list(self._memory_mask.literals))
        return params

    def __call__(self, tgt, memory, tgt_mask: MaskLike = None) -> np.ndarray:
        tgt, memory = _as_2d(tgt, "tgt"), _as_2d(memory, "memory")
        return self._run([("target", tgt), ("memory", memory)], tgt.shape[0], tgt_mask)


class Transformer(ZooModule):
    """torch.nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
    dim_feedforward, dropout=0, activation="relu", batch_first=True) on one sequence pair:
    ``model(src, tgt, tgt_mask=Mask.causal())`` with src [n, d], tgt [m, d] gives [m, d]. The
    encoder stack and its final norm give the memory every decoder layer attends to; the
    decoder stack ends with its own norm, as torch's. norm_affine=False uses plain layer
    normalisation (torch's untrained LayerNorm weights, 1 and 0; load_torch refuses others)."""

    zoo_name = "transformer"

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, norm_first: bool = False, norm_affine: bool = False,
                 src_mask: MaskLike = None, tgt_mask: MaskLike = None, memory_mask: MaskLike = None,
                 prefix: str = "tf", seed: int = 1, dtype: str = "float64"):
        super().__init__(seed, dtype)
        self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, dim_feedforward
        self.num_encoder_layers, self.num_decoder_layers = num_encoder_layers, num_decoder_layers
        self.norm_first, self.norm_affine, self.prefix = norm_first, norm_affine, prefix
        self._src_mask, self._memory_mask = _as_mask(src_mask), _as_mask(memory_mask)
        self._default_mask = _as_mask(tgt_mask)
        self._model_for(self._default_mask)

    def _torch_settings(self, torch_module):
        encoder, decoder = torch_module.encoder, torch_module.decoder
        out = [("d_model", torch_module.d_model, self.d_model), ("nhead", torch_module.nhead, self.nhead),
               ("num_encoder_layers", len(encoder.layers), self.num_encoder_layers),
               ("num_decoder_layers", len(decoder.layers), self.num_decoder_layers),
               ("encoder.norm", type(encoder.norm).__name__, "LayerNorm"),
               ("decoder.norm", type(decoder.norm).__name__, "LayerNorm")]
        out += [(f"{n}.norm.eps", getattr(stack, "norm").eps, 1e-5) for n, stack in (("encoder", encoder), ("decoder", decoder))
                if stack.norm is not None]
        for part, stack, cross in (("encoder", encoder, False), ("decoder", decoder, True)):
            for i, layer in enumerate(stack.layers):
                out += [(f"{part}.layers.{i}.{n}", a, b) for n, a, b in
                        _layer_settings(layer, self.d_model, self.nhead, self.dim_feedforward, self.norm_first, cross)]
        return out

    def _zoo_parameters(self, mask: Mask):
        params = super()._zoo_parameters(mask)
        params.update(src_mask=list(self._src_mask.literals), tgt_mask=list(mask.literals),
                      memory_mask=list(self._memory_mask.literals))
        return params

    def __call__(self, src, tgt, src_mask: MaskLike = None, tgt_mask: MaskLike = None,
                 memory_mask: MaskLike = None) -> np.ndarray:
        for name, given, built in (("src_mask", src_mask, self._src_mask), ("memory_mask", memory_mask, self._memory_mask)):
            if given is not None and _as_mask(given).literals != built.literals:
                raise ValueError(f"{name} differs from the one this Transformer was built with ({built!r}): "
                                 f"give it to the constructor")
        src, tgt = _as_2d(src, "src"), _as_2d(tgt, "tgt")
        return self._run([("source", src), ("target", tgt)], tgt.shape[0], tgt_mask)


__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "Transformer"]
