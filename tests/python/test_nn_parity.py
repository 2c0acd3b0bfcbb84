"""lrnn.nn against PyTorch 2.13 (CPU, float64): MultiheadAttention with 1, 2 and 4 heads,
with and without a causal mask, and TransformerEncoderLayer (post-norm, ReLU, dropout 0):
outputs and gradients of the inputs and of every weight within 1e-5. Also the printed
rules, the plan cache and masks from arrays."""

import numpy as np
import pytest

import lrnn.nn as nn

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

TOL = 1e-5


def causal_torch_mask(n):
    # torch's boolean attn_mask: True = NOT allowed to attend
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def compare_grads(module, torch_module):
    grads = module.torch_grads()
    compared = 0
    for name, p in torch_module.named_parameters():
        if name not in grads:
            continue
        np.testing.assert_allclose(grads[name], p.grad.detach().numpy(), atol=TOL, rtol=0, err_msg=name)
        compared += 1
    return compared


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_multihead_attention_matches_torch(heads, causal):
    torch.manual_seed(heads + 10 * causal)
    E, n = 8, 7
    tm = torch.nn.MultiheadAttention(E, heads, dropout=0.0, batch_first=True, dtype=torch.float64)
    x = torch.randn(1, n, E, dtype=torch.float64, requires_grad=True)
    y, _ = tm(x, x, x, attn_mask=causal_torch_mask(n) if causal else None, need_weights=False)
    g = torch.randn_like(y)
    y.backward(g)

    m = nn.MultiheadAttention(E, heads, mask=nn.Mask.causal() if causal else None).load_torch(tm)
    out = m(x.detach().numpy()[0])
    np.testing.assert_allclose(out, y.detach().numpy()[0], atol=TOL, rtol=0)
    (gx,) = m.backward(g.numpy()[0])
    np.testing.assert_allclose(gx, x.grad.numpy()[0], atol=TOL, rtol=0)
    assert compare_grads(m, tm) == 4  # in_proj_weight/bias, out_proj.weight/bias


def test_mask_given_at_call_time_equals_mask_built_in():
    torch.manual_seed(3)
    E, n = 8, 6
    tm = torch.nn.MultiheadAttention(E, 2, batch_first=True, dtype=torch.float64)
    x = torch.randn(1, n, E, dtype=torch.float64)
    y, _ = tm(x, x, x, attn_mask=causal_torch_mask(n), need_weights=False)
    m = nn.MultiheadAttention(E, 2).load_torch(tm)
    np.testing.assert_allclose(m(x.numpy()[0], mask="causal"), y.detach().numpy()[0], atol=TOL, rtol=0)
    allowed = ~causal_torch_mask(n).numpy()  # lrnn arrays say where attention is allowed
    np.testing.assert_allclose(m(x.numpy()[0], mask=allowed), y.detach().numpy()[0], atol=TOL, rtol=0)
    full, _ = tm(x, x, x, need_weights=False)
    np.testing.assert_allclose(m(x.numpy()[0]), full.detach().numpy()[0], atol=TOL, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first):
    torch.manual_seed(5)
    E, H, F, n = 8, 2, 16, 6
    tl = torch.nn.TransformerEncoderLayer(E, H, F, dropout=0.0, activation="relu", batch_first=True,
                                          norm_first=norm_first, dtype=torch.float64)
    x = torch.randn(1, n, E, dtype=torch.float64, requires_grad=True)
    y = tl(x)
    g = torch.randn_like(y)
    y.backward(g)

    m = nn.TransformerEncoderLayer(E, H, F, norm_first=norm_first).load_torch(tl)
    out = m(x.detach().numpy()[0])
    np.testing.assert_allclose(out, y.detach().numpy()[0], atol=TOL, rtol=0)
    (gx,) = m.backward(g.numpy()[0])
    np.testing.assert_allclose(gx, x.grad.numpy()[0], atol=TOL, rtol=0)
    assert compare_grads(m, tl) == 8  # attention (4) and the two linear layers (4)


def test_encoder_layer_with_trained_layer_norms_needs_affine():
    torch.manual_seed(6)
    E, H, F, n = 8, 4, 12, 5
    tl = torch.nn.TransformerEncoderLayer(E, H, F, dropout=0.0, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for norm in (tl.norm1, tl.norm2):
            norm.weight.add_(0.3 * torch.randn(E, dtype=torch.float64))
            norm.bias.add_(0.3 * torch.randn(E, dtype=torch.float64))
    with pytest.raises(ValueError, match="norm_affine=True"):
        nn.TransformerEncoderLayer(E, H, F).load_torch(tl)
    x = torch.randn(1, n, E, dtype=torch.float64, requires_grad=True)
    y = tl(x, src_mask=torch.nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64), is_causal=True)
    g = torch.randn_like(y)
    y.backward(g)
    m = nn.TransformerEncoderLayer(E, H, F, norm_affine=True, mask=nn.Mask.causal()).load_torch(tl)
    np.testing.assert_allclose(m(x.detach().numpy()[0]), y.detach().numpy()[0], atol=TOL, rtol=0)
    (gx,) = m.backward(g.numpy()[0])
    np.testing.assert_allclose(gx, x.grad.numpy()[0], atol=TOL, rtol=0)
    assert compare_grads(m, tl) == 12  # the layer norms too


def test_encoder_stack_matches_torch():
    torch.manual_seed(8)
    E, H, F, n = 8, 2, 12, 5
    layer = torch.nn.TransformerEncoderLayer(E, H, F, dropout=0.0, batch_first=True, dtype=torch.float64)
    te = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    with torch.no_grad():  # make the two layers differ
        for p in te.layers[1].parameters():
            if p.dim() == 2:
                p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(1, n, E, dtype=torch.float64)
    y = te(x)
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, F), num_layers=2).load_torch(te)
    np.testing.assert_allclose(m(x.numpy()[0]), y.detach().numpy()[0], atol=TOL, rtol=0)


def test_decoder_layer_matches_torch():
    torch.manual_seed(9)
    E, H, F, n, mlen = 8, 2, 12, 5, 7
    td = torch.nn.TransformerDecoderLayer(E, H, F, dropout=0.0, batch_first=True, dtype=torch.float64)
    tgt = torch.randn(1, n, E, dtype=torch.float64)
    mem = torch.randn(1, mlen, E, dtype=torch.float64)
    y = td(tgt, mem, tgt_mask=causal_torch_mask(n))
    m = nn.TransformerDecoderLayer(E, H, F, tgt_mask=nn.Mask.causal()).load_torch(td)
    np.testing.assert_allclose(m(tgt.numpy()[0], mem.numpy()[0]), y.detach().numpy()[0], atol=TOL, rtol=0)


def test_rules_print_the_template():
    text = nn.MultiheadAttention(16, 4).rules()
    assert "attn_q3(I) :- $attn_wq3={4,16} input(I), $attn_bq3={4}." in text
    assert "attn_w0(I, J) :- attn_d_k, attn_k0(J)^T, attn_q0(I). [combination=product, aggregation=softmax(J)]" in text
    assert text.count("aggregation=softmax") == 4
    causal = nn.MultiheadAttention(16, 4, mask=nn.Mask.causal()).rules()
    assert "attn_q0(I), @leq(J, I). [combination=product, aggregation=softmax(J)]" in causal
    window = nn.Attention(8, mask=nn.Mask.window(3)).rules()
    assert "@sub(I, J, D), @geq(D, 0), @leq(D, 3). [combination=product, aggregation=softmax(J, D)]" in window


def test_plan_cache_grounds_each_length_once():
    m = nn.MultiheadAttention(8, 2, mask=nn.Mask.causal())
    rng = np.random.default_rng(0)
    for _ in range(3):
        m(rng.standard_normal((6, 8)))
    assert m.stats()["groundings"] == 1 and m.stats()["cache_hits"] == 2
    first_build = m.stats()["build_cpu_seconds"]
    assert isinstance(first_build, float) and 0 <= first_build < 5
    m(rng.standard_normal((9, 8)))
    assert m.stats()["groundings"] == 2
    # a cached length builds nothing: the last build's time stays that of n = 9
    build_9 = m.stats()["build_cpu_seconds"]
    m(rng.standard_normal((9, 8)))
    assert m.stats()["build_cpu_seconds"] == build_9 and m.stats()["cache_hits"] == 3
    # masked attention grounds only the allowed pairs: per head q, k, v (n each) and a
    # score and a weighted value per pair, plus n output projections
    n = 9
    assert m.stats()["ground_rules"] == 2 * (3 * n + 2 * n * (n + 1) // 2) + n


def test_positional_encoding():
    pe = nn.positional_encoding(4, 6)
    p = np.arange(4)[:, None]
    np.testing.assert_allclose(pe[:, 0::2], np.sin(p / 10000 ** (np.arange(0, 6, 2) / 6)))
    np.testing.assert_allclose(pe[:, 1::2], np.cos(p / 10000 ** (np.arange(0, 6, 2) / 6)))


def test_transformer_matches_torch_outputs_and_gradients():
    """Issue 35: lrnn.nn.Transformer(32, 4, 2, 2, 64) loaded from torch.nn.Transformer gives
    torch's outputs and its input and weight gradients (float64, causal target mask)."""
    torch.manual_seed(3)
    E, H, F, n_src, n_tgt = 32, 4, 64, 7, 5
    tt = torch.nn.Transformer(E, H, 2, 2, F, dropout=0.0, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # untrained norms are 1 and 0: move them so the test sees them
        for name, p in tt.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    src = torch.randn(1, n_src, E, dtype=torch.float64, requires_grad=True)
    tgt = torch.randn(1, n_tgt, E, dtype=torch.float64, requires_grad=True)
    y = tt(src, tgt, tgt_mask=causal_torch_mask(n_tgt))
    grad_out = torch.randn_like(y)
    y.backward(grad_out)

    m = nn.Transformer(E, H, 2, 2, F, norm_affine=True, tgt_mask=nn.Mask.causal()).load_torch(tt)
    out = m(src.detach().numpy()[0], tgt.detach().numpy()[0])
    np.testing.assert_allclose(out, y.detach().numpy()[0], atol=1e-5, rtol=0)
    grad_src, grad_tgt = m.backward(grad_out.numpy()[0])
    np.testing.assert_allclose(grad_src, src.grad.numpy()[0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(grad_tgt, tgt.grad.numpy()[0], atol=1e-5, rtol=0)
    grads = m.torch_grads()
    for name, p in tt.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), atol=1e-5, rtol=0, err_msg=name)
    assert set(grads) == {name for name, _ in tt.named_parameters()}


# torch warns that norm_first=True disables its nested tensors: the module is only refused here
@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_refuses_a_different_torch_module():
    tt = torch.nn.Transformer(16, 2, 1, 2, 32, dropout=0.0, batch_first=True, dtype=torch.float64)
    with pytest.raises(ValueError, match="num_encoder_layers is 1"):
        nn.Transformer(16, 2, 2, 2, 32).load_torch(tt)
    with pytest.raises(ValueError, match="nhead is 2"):
        nn.Transformer(16, 4, 1, 2, 32).load_torch(tt)
    pre = torch.nn.Transformer(16, 2, 1, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
    with pytest.raises(ValueError, match="norm_first is True"):
        nn.Transformer(16, 2, 1, 2, 32).load_torch(pre)
    with pytest.raises(ValueError, match="loads a torch.nn.Transformer"):
        nn.Transformer(16, 2, 1, 2, 32).load_torch(torch.nn.TransformerEncoderLayer(16, 2, 32))
