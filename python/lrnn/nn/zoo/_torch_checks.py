"""What a torch.nn attention or transformer layer computes beyond its weight shapes (heads,
norm placement, the activation, eps), listed as (name, torch's, ours) for
`ZooModule._check_torch_module`: a module that differs is refused, never loaded into a
different function."""

from __future__ import annotations

from typing import Any, List, Tuple


def _attention_settings(attn, embed_dim: int, num_heads: int, bias: bool) -> List[Tuple[str, Any, Any]]:
    return [
        ("embed_dim", attn.embed_dim, embed_dim),
        ("num_heads", attn.num_heads, num_heads),
        ("bias", attn.in_proj_bias is not None, bias),
        ("kdim/vdim", (attn.kdim, attn.vdim), (embed_dim, embed_dim)),
        ("add_bias_kv", attn.bias_k is not None, False),
        ("add_zero_attn", attn.add_zero_attn, False),
    ]


def _layer_settings(layer, d_model: int, nhead: int, dim_feedforward: int, norm_first: bool, cross: bool):
    import torch.nn.functional as F

    activation = getattr(layer, "activation", None)
    relu = activation is F.relu or type(activation).__name__ == "ReLU" or getattr(layer, "activation_relu_or_gelu", 0) == 1
    out = [("norm_first", layer.norm_first, norm_first), ("activation", "relu" if relu else repr(activation), "relu"),
           ("dim_feedforward", layer.linear1.out_features, dim_feedforward)]
    out += [(f"{n}.eps", getattr(layer, n).eps, 1e-5) for n in ("norm1", "norm2", "norm3") if hasattr(layer, n)]
    out += [("self_attn." + n, a, b) for n, a, b in _attention_settings(layer.self_attn, d_model, nhead, True)]
    if cross:
        out += [("multihead_attn." + n, a, b) for n, a, b in _attention_settings(layer.multihead_attn, d_model, nhead, True)]
    return out
