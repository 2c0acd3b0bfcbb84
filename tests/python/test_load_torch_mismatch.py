"""load_torch refuses a torch module that computes something else (issue 14: no silent
wrong answers): another kind, other sizes, other heads, other norm placement, another
activation or eps, extra weights. Before, a 16-wide attention loaded into an 8-wide one
by reading a corner of its matrices."""
import pytest

torch = pytest.importorskip("torch", reason="torch is the reference of load_torch")

import lrnn.nn as nn  # noqa: E402


def refused(module, torch_module, match):
    with pytest.raises(ValueError, match=match):
        module.load_torch(torch_module)


def test_multihead_attention_refuses_other_sizes_heads_kinds_and_biases():
    m = nn.MultiheadAttention(8, 2)
    refused(m, torch.nn.MultiheadAttention(16, 2), "embed_dim is 16")
    refused(m, torch.nn.MultiheadAttention(8, 4), "num_heads is 4")
    refused(m, torch.nn.MultiheadAttention(8, 2, bias=False), "bias is False")
    refused(m, torch.nn.MultiheadAttention(8, 2, add_bias_kv=True), "add_bias_kv")
    refused(m, torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4), "kdim/vdim")
    refused(m, torch.nn.Linear(8, 8), "loads a torch.nn.MultiheadAttention, got Linear")
    m.load_torch(torch.nn.MultiheadAttention(8, 2))  # the matching module loads


def test_encoder_layer_refuses_other_feed_forward_norm_placement_activation_and_eps():
    e = nn.TransformerEncoderLayer(8, 2, 16)
    refused(e, torch.nn.TransformerEncoderLayer(8, 2, 32), "dim_feedforward is 32")
    refused(e, torch.nn.TransformerEncoderLayer(8, 2, 16, norm_first=True), "norm_first is True")
    refused(e, torch.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu"), "activation")
    refused(e, torch.nn.TransformerEncoderLayer(8, 2, 16, layer_norm_eps=1e-6), "eps is 1e-06")
    refused(e, torch.nn.TransformerEncoderLayer(8, 4, 16), "num_heads is 4")
    e.load_torch(torch.nn.TransformerEncoderLayer(8, 2, 16))


def test_encoder_stack_refuses_other_depth_and_a_final_norm():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    stack = nn.TransformerEncoder(layer, 2)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16)
    refused(stack, torch.nn.TransformerEncoder(t_layer, 3, enable_nested_tensor=False), "num_layers is 3")
    refused(stack, torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False), "norm")
    stack.load_torch(torch.nn.TransformerEncoder(t_layer, 2, enable_nested_tensor=False))
