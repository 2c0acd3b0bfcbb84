"""Query splits inside one example (docs/big_graphs.md "Query splits"): PyG-style masks or
seeded fractions; only training queries give gradient, validation and test queries are
reported every epoch. Checked against the same masked model written in PyTorch."""

import numpy as np
import pytest

import lrnn
from lrnn import Adam, FileDataset, Settings, Template

N = 60
TEMPLATE = """
h(X) :- {4,2} x(Y), *edge(X, Y). [activation=tanh, aggregation=sum]
h(X) :- {4,2} x(X). [activation=tanh]
out(X) :- {1,4} h(X). [activation=sigmoid]
"""


def graph():
    """x [N, 2], directed edges (ring and chords, both ways), targets 0/1."""
    n = np.arange(N)
    x = np.stack([np.sin(1.3 * n + 0.2), np.sin(1.3 * n + 0.9)], axis=1).round(6)
    src, dst = [], []
    for d in (1, 7):
        src += list(n) + list((n + d) % N)
        dst += list((n + d) % N) + list(n)
    edges = np.array([src, dst])
    agg = x[:, 0].copy()
    np.add.at(agg, edges[0], x[edges[1], 0])
    y = (agg > 0).astype(int)
    return x, edges, y


def write_graph(tmp_path):
    x, edges, y = graph()
    facts = [f"<[{a}, {b}]> x(n{i})" for i, (a, b) in enumerate(x)]
    facts += [f"edge(n{s}, n{t})" for s, t in edges.T]
    (tmp_path / "e.txt").write_text("g :- " + ", ".join(facts) + ".\n")
    (tmp_path / "q.txt").write_text("".join(f"{t} out(n{i}).\n" for i, t in enumerate(y)))
    return FileDataset(examples_file=str(tmp_path / "e.txt"), queries_file=str(tmp_path / "q.txt"))


def masks(seed=0):
    rng = np.random.default_rng(seed)
    order = rng.permutation(N)
    train, val, test = (np.zeros(N, bool) for _ in range(3))
    train[order[:30]], val[order[30:45]], test[order[45:]] = True, True, True
    return train, val, test


def model(epochs=8):
    return Template.from_string(TEMPLATE).build(Settings(batch_size=0, optimizer=Adam(lr=0.05), epochs=epochs, seed=4))


def test_masks_train_only_the_training_queries_and_report_the_others(tmp_path):
    data = write_graph(tmp_path)
    train, val, test = masks()
    m = model()
    built = m.build_dataset(data, train_mask=train, val_mask=val, test_mask=test)
    history = m.train(built, progress=False)
    assert len(history.val_accuracies) == 8 and len(history.test_accuracies) == 8
    assert history.best_epoch == 1 + int(np.argmin(history.val_losses))
    evaluation = m.test(built)
    assert evaluation.splits["train"]["count"] == 30
    assert evaluation.splits["val"]["count"] == 15
    assert evaluation.splits["test"]["count"] == 15
    # The same model trained on the training queries alone ends with the same weights.
    (tmp_path / "q_train.txt").write_text(
        "".join(line for i, line in enumerate((tmp_path / "q.txt").read_text().splitlines(True)) if train[i]))
    alone = model()
    alone.train(FileDataset(examples_file=str(tmp_path / "e.txt"), queries_file=str(tmp_path / "q_train.txt")),
                progress=False)
    for (name, a), (_, b) in zip(sorted(m.state_dict()["weights"].items()), sorted(alone.state_dict()["weights"].items())):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12, err_msg=str(name))


def test_fractions_give_the_cli_split_and_masks_are_checked(tmp_path):
    data = write_graph(tmp_path)
    m = model()
    built = m.build_dataset(data, split=(0.5, 0.25, 0.25), seed=9)
    assert list(built._prepared.query_splits()) == list(lrnn._core.random_query_split(N, 0.5, 0.25, 0.25, 9))
    train, val, test = masks()
    with pytest.raises(ValueError, match="both train_mask and val_mask"):
        m.build_dataset(data, train_mask=train, val_mask=train)
    with pytest.raises(ValueError, match="one entry per query"):
        m.build_dataset(data, train_mask=np.zeros((N, 2), bool))
    with pytest.raises(Exception, match="59 parts for 60 queries"):
        m.build_dataset(data, train_mask=train[:-1])
    with pytest.raises(ValueError, match="not both"):
        m.build_dataset(data, train_mask=train, split=(0.5, 0.25, 0.25))
    # Without train_mask, every query outside val and test trains.
    built = m.build_dataset(data, val_mask=val, test_mask=test)
    parts = np.array(built._prepared.query_splits())
    assert (parts[train] == 0).all() and (parts[val] == 1).all() and (parts[test] == 2).all()


torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")


def test_masked_training_matches_pytorch(tmp_path):
    """The template is a one-layer graph network; PyTorch's version with the lrnn model's
    initial weights, the loss on train_mask only and Adam gives the same losses every epoch
    and the same validation and test accuracies (float64, 1e-6)."""
    data = write_graph(tmp_path)
    x, edges, y = graph()
    train, val, test = masks()
    m = model(epochs=10)
    built = m.build_dataset(data, train_mask=torch.tensor(train), val_mask=torch.tensor(val),
                            test_mask=torch.tensor(test))
    weights = {k: torch.tensor(np.asarray(v, dtype=np.float64)) for k, v in m.state_dict()["weights"].items()}
    names = sorted(weights)  # rule order: neighbour weight, self weight, output weight
    assert [weights[k].shape for k in names] == [(4, 2), (4, 2), (1, 4)]
    w_nb, w_self, w_out = (torch.nn.Parameter(weights[k].clone()) for k in names)
    history = m.train(built, progress=False)
    opt = torch.optim.Adam([w_nb, w_self, w_out], lr=0.05)
    xt, yt = torch.tensor(x), torch.tensor(y, dtype=torch.float64)
    tr, va, te = (torch.tensor(a) for a in (train, val, test))
    for epoch in range(10):
        # docs/language.md: a rule's activation applies per ground rule, before the aggregation
        messages = torch.tanh(xt[torch.tensor(edges[1])] @ w_nb.T)
        agg = torch.zeros(N, 4, dtype=torch.float64).index_add_(0, torch.tensor(edges[0]), messages)
        out = torch.sigmoid((agg + torch.tanh(xt @ w_self.T)) @ w_out.T).squeeze(1)
        loss = ((out[tr] - yt[tr]) ** 2).mean()
        np.testing.assert_allclose(history.train_losses[epoch], loss.item(), rtol=0, atol=1e-6)
        for mask, accuracies in ((va, history.val_accuracies), (te, history.test_accuracies)):
            accuracy = ((out[mask] > 0.5).double() == yt[mask]).double().mean().item()
            assert accuracies[epoch] == pytest.approx(accuracy, abs=1e-12)
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_query_batches_with_a_fanout_per_hop(tmp_path):
    """Settings(fanout=[F1, F2]) (docs/big_graphs.md "Mini-batches of queries"): one fan-out
    per hop, outermost first; one number means every hop; a fan-out above every degree (4
    here) trains exactly as no fan-out does; a draw is seeded."""
    data = write_graph(tmp_path)
    train, val, test = masks()

    def run(**kw):
        s = Settings(batch_size=0, query_batch_size=8, optimizer=Adam(lr=0.05), epochs=3, seed=4, **kw)
        m = Template.from_string(TEMPLATE).build(s)
        built = m.build_dataset(data, train_mask=train, val_mask=val, test_mask=test)
        history = m.train(built, progress=False)
        return history.val_losses[-1], [np.array(p, copy=True) for p in m.parameters().values()]

    plain, wide = run(), run(fanout=[50, 9])
    assert plain[0] == pytest.approx(wide[0], abs=1e-12)
    for a, b in zip(plain[1], wide[1]):
        np.testing.assert_allclose(a, b, atol=1e-12)
    sampled, again = run(fanout=[2, 1]), run(fanout=[2, 1])
    assert sampled[0] == again[0]
    assert sampled[0] != pytest.approx(plain[0], abs=1e-9)
    one = run(fanout=2)
    assert np.isfinite(one[0])
    with pytest.raises(TypeError, match="fanout"):
        run(fanout="ten")
