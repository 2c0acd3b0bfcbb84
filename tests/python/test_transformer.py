"""The transformer encoder of "Beyond Transformers with PyNeuraLogic" in the DSL: builds,
runs forward on six tokens with random embeddings, trains with a decreasing loss, and
its masked variants ground only the token pairs they allow."""

import numpy as np
import pytest

from lrnn import Adam, Dataset, R, Settings, V
from lrnn.examples import transformer_encoder

DIM, TOKENS = 4, 6


def tokens_dataset(seed=0, targets=False):
    rng = np.random.default_rng(seed)
    embeddings = rng.normal(size=(TOKENS, DIM))
    facts = [R.input(i)[embeddings[i]] for i in range(TOKENS)]
    if targets:
        goal = rng.normal(size=(TOKENS, DIM))
        queries = [R.norm2(i)[goal[i]] for i in range(TOKENS)]
    else:
        queries = [R.norm2(V.I)]
    return Dataset().add(queries, facts)


def test_encoder_runs_forward():
    model = transformer_encoder(DIM).build(Settings(seed=1))
    outputs = model(tokens_dataset())
    assert outputs.shape == (TOKENS, DIM)
    # layer normalisation: every output row has mean 0 and variance 1
    np.testing.assert_allclose(outputs.mean(axis=1), 0, atol=1e-9)
    np.testing.assert_allclose(outputs.var(axis=1), 1, atol=1e-3)


def test_encoder_trains_with_decreasing_loss():
    model = transformer_encoder(DIM).build(Settings(optimizer=Adam(lr=0.05), seed=1))
    history = model.train(tokens_dataset(targets=True), 8, progress=False)
    losses = history.train_losses
    assert len(losses) == 8
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def attention_pairs(mask):
    model = transformer_encoder(DIM, mask, window=2, stride=5).build(Settings(seed=1))
    net = model.ground_network(tokens_dataset())
    pairs = set()
    for atom in net.atoms:
        if atom.startswith("attention_weights("):
            i, j = atom[len("attention_weights(") : -1].split(", ")
            pairs.add((int(i), int(j)))
    return pairs


@pytest.mark.parametrize(
    "mask, allowed",
    [
        (None, lambda i, j: True),
        ("causal", lambda i, j: j <= i),
        ("window", lambda i, j: i - j <= 2),
        ("strided", lambda i, j: (i - j) % 5 == 0),
    ],
)
def test_masked_attention_grounds_only_allowed_pairs(mask, allowed):
    expected = {(i, j) for i in range(TOKENS) for j in range(TOKENS) if allowed(i, j)}
    assert attention_pairs(mask) == expected


def test_softmax_weights_sum_to_one_per_query_token():
    model = transformer_encoder(DIM, "causal").build(Settings(seed=1))
    net = model.ground_network(tokens_dataset())
    for i in range(TOKENS):
        weights = [float(net.value(f"attention_weights({i}, {j})")) for j in range(i + 1)]
        assert sum(weights) == pytest.approx(1.0)
