"""Link prediction from Python (docs/big_graphs.md "Link prediction and knowledge-base
completion"): Settings(link_prediction=True) trains on true links with drawn negatives and
reports AUC and the filtered ranking of held-out links; the settings are checked."""

import numpy as np
import pytest

from lrnn import Adam, CrossEntropy, FileDataset, Settings, Template

N = 30
TEMPLATE = """
h(X) :- {4,2} x(X). [activation=tanh]
h(X) :- {4,2} x(Y), *edge(X, Y). [activation=tanh, aggregation=avg]
link(X, Y) :- h(X)^T, h(Y). [combination=product]
"""


def write_graph(tmp_path):
    """Two communities (features say which), links inside them; every fifth link held out
    (a test link: not an edge of the graph). Returns the dataset and its test mask."""
    rng = np.random.default_rng(3)
    side = np.arange(N) % 2
    x = np.stack([side * 2.0 - 1 + 0.3 * rng.standard_normal(N), 0.3 * rng.standard_normal(N)], axis=1).round(4)
    links = [(a, b) for a in range(N) for b in range(a + 2, N, 2) if rng.random() < 0.35]
    test = np.array([i % 5 == 0 for i in range(len(links))])
    facts = [f"<[{a}, {b}]> x(n{i})" for i, (a, b) in enumerate(x)]
    facts += [f"edge(n{a}, n{b}), edge(n{b}, n{a})" for (a, b), held in zip(links, test) if not held]
    (tmp_path / "e.txt").write_text("g :- " + ", ".join(facts) + ".\n")
    (tmp_path / "q.txt").write_text("".join(f"link(n{a}, n{b}).\n" for a, b in links))
    return FileDataset(examples_file=str(tmp_path / "e.txt"), queries_file=str(tmp_path / "q.txt")), test


def settings(**extra):
    options = dict(optimizer=Adam(lr=0.05), epochs=30, seed=2, error_function=CrossEntropy(), batch_size=0,
                   link_prediction=True, corrupt="both")
    return Settings(**{**options, **extra})


def test_trains_on_links_and_ranks_the_held_out_ones(tmp_path):
    data, test = write_graph(tmp_path)
    m = Template.from_string(TEMPLATE).build(settings(ranking=True))
    history = m.train(m.build_dataset(data, test_mask=test), progress=False)
    assert len(history.epochs) == len(history.test_aucs) == len(history.test_rankings) == 30
    # The sides are in the features: held-out links score above their corruptions (about
    # half of which join two nodes of one side as well).
    assert np.mean(history.test_aucs[-5:]) > 0.65
    ranking = history.test_rankings[-1]
    assert set(ranking) == {"mrr", "hits@1", "hits@3", "hits@10"}
    assert 0 <= ranking["hits@1"] <= ranking["hits@3"] <= ranking["hits@10"] <= 1
    # Ranked among 30 nodes, a link that only knows its side ranks in its half: MRR > 1 / 15.
    assert ranking["mrr"] > 1 / 15 and ranking["hits@10"] > 0.5


def test_link_settings_are_checked(tmp_path):
    data, test = write_graph(tmp_path)
    with pytest.raises(Exception, match="corruption 'tails'"):
        m = Template.from_string(TEMPLATE).build(settings(corrupt="tails"))
        m.train(m.build_dataset(data, test_mask=test), progress=False)
    with pytest.raises(TypeError, match="negatives"):
        Settings(negative=2)


def test_link_prediction_trains_full_batch_by_default(tmp_path):
    """Python's default (online, one sample a step) cannot be link prediction's: without a
    batch size the links train full batch, as with batch_size=0."""
    data, test = write_graph(tmp_path)
    options = dict(optimizer=Adam(lr=0.05), epochs=3, seed=2, error_function=CrossEntropy(), link_prediction=True)
    default = Template.from_string(TEMPLATE).build(Settings(**options))
    full = Template.from_string(TEMPLATE).build(Settings(**options, batch_size=0))
    a = default.train(default.build_dataset(data, test_mask=test), progress=False)
    b = full.train(full.build_dataset(data, test_mask=test), progress=False)
    assert len(a.train_losses) == 3 and a.train_losses == b.train_losses and a.test_aucs == b.test_aucs
