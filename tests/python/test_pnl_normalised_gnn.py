"""PyNeuraLogic's normalised graph layers (their lines use `sqrt(a)`, rules combined by
`combination=product`, `leakyrelu(slope)`, `duplicate_grounding=True`) run as PyNeuraLogic
writes them and train (docs/peers.md "Modules"): normalised SGConv equals PyG's SGConv without
bias, and Adam steps lower the loss of every such layer (APPNP, which has no weight, runs)."""
import numpy as np
import pytest

import lrnn.nn.module as M
from lrnn import Adam, Dataset, R, Sample, Settings, Template

N = 4
EDGES = [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (0, 2)]  # j -> i
X = np.random.default_rng(5).normal(size=(N, 3))


def sample(targets=None):
    facts = [R.x(i)[[float(v) for v in row]] for i, row in enumerate(X)] + [R.edge(j, i) for j, i in EDGES]
    if targets is None:
        return Sample([R.h(i) for i in range(N)], facts)
    return Sample([R.h(i)[list(map(float, t))] for i, t in enumerate(targets)], facts)


def outputs(module):
    template = Template()
    template += module
    model = template.build(Settings())
    return np.asarray(model(Dataset([sample()])), dtype=float), model.parameters()


def pyg_output(layer):
    torch = pytest.importorskip("torch")
    index = torch.tensor([[j for j, _ in EDGES], [i for _, i in EDGES]])
    with torch.no_grad():
        return layer(torch.from_numpy(X), index).numpy()


def pyg(name, *args, **kwargs):
    pytest.importorskip("torch", reason="torch_geometric is the reference")
    nn = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is the reference")
    return getattr(nn, name)(*args, **kwargs).double()


def load(parameter, value):
    import torch

    with torch.no_grad():
        parameter.copy_(torch.from_numpy(np.asarray(value)))


def test_normalised_sgconv_is_pyg_sgconv():
    y, p = outputs(M.SGConv(3, 4, "h", "x", "edge"))
    (weight,) = [v for v in p.values() if np.shape(v) == (4, 3)]
    layer = pyg("SGConv", 3, 4, K=1, bias=False)
    load(layer.lin.weight, weight)
    np.testing.assert_allclose(y, pyg_output(layer), atol=1e-6)


@pytest.mark.parametrize("module, width, learns", [
    (lambda: M.GCNConv(3, 4, "h", "x", "edge"), 4, True),
    (lambda: M.SGConv(3, 4, "h", "x", "edge", k=2), 4, True),
    (lambda: M.TAGConv(3, 4, "h", "x", "edge", k=2), 4, True),
    (lambda: M.APPNPConv("h", "x", "edge", k=2, alpha=0.1), 3, False),  # no weight: it propagates x
    (lambda: M.GATv2Conv(3, 4, "h", "x", "edge"), 4, True),
], ids=["GCNConv", "SGConv", "TAGConv", "APPNPConv", "GATv2Conv"])
def test_normalised_layers_train(module, width, learns):
    template = Template()
    template += module()
    targets = np.random.default_rng(7).normal(size=(N, width)) * 0.5
    model = template.build(Settings(optimizer=Adam(lr=0.05), epochs=30, seed=1))
    losses = model.train(Dataset([sample(targets)])).train_losses
    assert len(losses) == 30 and all(np.isfinite(losses))
    if learns:
        assert losses[-1] < 0.8 * losses[0], losses
    else:
        assert losses[-1] == pytest.approx(losses[0])
