"""Relational attention (Diao & Loynd 2022, node update) and the single-head Attention of
lrnn.nn against NumPy implementations of their definitions."""

import numpy as np

import lrnn.nn as nn


def softmax(z):
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def test_relational_attention_matches_definition():
    rng = np.random.default_rng(4)
    n, d, de, heads = 5, 4, 3, 2
    hd = d // heads
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 3), (2, 0), (1, 1)]
    x = rng.standard_normal((n, d))
    e = rng.standard_normal((len(edges), de))
    m = nn.RelationalAttention(d, de, heads)
    out = m(x, edges, e)
    p = m.parameters()
    expected = np.tile(p["rel_bo"][:, 0], (n, 1))
    for h in range(heads):
        for i in range(n):
            into = [(k, j) for k, (a, j) in enumerate(edges) if a == i]
            if not into:
                continue
            q = [p[f"rel_wqn{h}"] @ x[i] + p[f"rel_wqe{h}"] @ e[k] + p[f"rel_bq{h}"][:, 0] for k, j in into]
            kk = [p[f"rel_wkn{h}"] @ x[j] + p[f"rel_wke{h}"] @ e[k] + p[f"rel_bk{h}"][:, 0] for k, j in into]
            v = [p[f"rel_wvn{h}"] @ x[j] + p[f"rel_wve{h}"] @ e[k] + p[f"rel_bv{h}"][:, 0] for k, j in into]
            w = softmax(np.array([qi @ ki / np.sqrt(hd) for qi, ki in zip(q, kk)]))
            expected[i] += p[f"rel_wo{h}"] @ sum(wi * vi for wi, vi in zip(w, v))
    np.testing.assert_allclose(out, expected, atol=1e-10)
    assert "rel_q0(I, J) :- $rel_wqn0={2,4} node(I), $rel_wqe0={2,3} edge(I, J), $rel_bq0={2}." in m.rules()


def test_single_head_attention_with_window_matches_definition():
    rng = np.random.default_rng(5)
    n, d, w = 7, 4, 2
    x = rng.standard_normal((n, d))
    m = nn.Attention(d, mask=nn.Mask.window(w))
    out = m(x)
    p = m.parameters()
    q = x @ p["attn_wq0"].T + p["attn_bq0"][:, 0]
    k = x @ p["attn_wk0"].T + p["attn_bk0"][:, 0]
    v = x @ p["attn_wv0"].T + p["attn_bv0"][:, 0]
    expected = np.zeros((n, d))
    for i in range(n):
        js = [j for j in range(n) if 0 <= i - j <= w]
        a = softmax(np.array([q[i] @ k[j] / np.sqrt(d) for j in js]))
        expected[i] = sum(ai * v[j] for ai, j in zip(a, js))
    np.testing.assert_allclose(out, expected, atol=1e-10)
    # only the allowed pairs are grounded: q, k, v (n each) + score and value per pair + output
    pairs = sum(1 for i in range(n) for j in range(n) if 0 <= i - j <= w)
    assert m.stats()["ground_rules"] == 3 * n + 2 * pairs + n


def test_masks_compose_and_reject_bad_input():
    both = nn.Mask.causal() & nn.Mask.strided(3)
    assert both.literals == ("@leq(J, I)", "@sub(I, J, D)", "@mod(D, 3, 0)")
    import pytest
    with pytest.raises(Exception):
        nn.Mask.window(-1)
    with pytest.raises(ValueError):
        nn.MultiheadAttention(4, 2)(np.zeros(4))
