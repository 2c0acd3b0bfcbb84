"""lrnn's PyG-form GNN layers as torch modules (docs/torch_layers.md): called with torch
tensors they return tensors whose gradients with respect to x and every weight are PyG's
(1e-5 in float32, 1e-6 in float64); their weights are Parameters a torch optimizer steps; a
layer used twice, a PyG Batch, edge inputs asking for gradients, and the PyNeuraLogic-style
constructor called PyG-style; and a torch model mixing an lrnn GCNConv with torch layers
trains on MUTAG to the accuracy of the same model with PyG's GCNConv."""

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (test-only dependency)")
pyg = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is not installed (test-only dependency)")

from lrnn.nn.module import APPNPConv, GATv2Conv, GCNConv, GINConv, GraphConv, SAGEConv  # noqa: E402

TU = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "tu"
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-6}

LAYERS = {
    "gcn": (lambda: pyg.GCNConv(3, 4), GCNConv),
    "sage": (lambda: pyg.SAGEConv(3, 4), SAGEConv),
    "sage_max": (lambda: pyg.SAGEConv(3, 4, aggr="max"), SAGEConv),
    "gin": (lambda: pyg.GINConv(torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 4)),
                                eps=0.2, train_eps=True), GINConv),
    "graphconv": (lambda: pyg.GraphConv(3, 4), GraphConv),
    "gatv2": (lambda: pyg.GATv2Conv(3, 2, heads=2), GATv2Conv),
    "appnp": (lambda: pyg.APPNP(K=2, alpha=0.1), APPNPConv),  # no weights: dL/dx only
}


def random_graph(seed, dtype, n=9, e=20):
    """Nodes n-2, n-1 isolated; a parallel edge and a self-loop."""
    g = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n - 2, (e,), generator=g), torch.randint(0, n - 2, (e,), generator=g)
    edge_index = torch.cat([torch.stack([src, dst]), torch.tensor([[src[0]], [dst[0]]]), torch.tensor([[1], [1]])], 1)
    return torch.randn(n, 3, generator=g).to(dtype), edge_index


def twin(make, lrnn_class, dtype, seed):
    """A PyG layer with non-zero biases and lrnn's copy of it, both in `dtype`."""
    torch.manual_seed(seed)
    theirs = make().to(dtype)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return theirs, lrnn_class.from_torch(theirs).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_gradients_of_x_and_every_weight_are_pygs(name, dtype):
    theirs, mine = twin(*LAYERS[name], dtype, seed=5)
    x, edge_index = random_graph(1, dtype)
    x_theirs, x_mine = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    y_theirs, y_mine = theirs(x_theirs, edge_index), mine(x_mine, edge_index)
    assert isinstance(y_mine, torch.Tensor) and y_mine.dtype == dtype and y_mine.requires_grad
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(y_mine, y_theirs, atol=tol, rtol=0)
    seed = torch.randn_like(y_theirs)
    (y_theirs * seed).sum().backward()
    (y_mine * seed).sum().backward()
    torch.testing.assert_close(x_mine.grad, x_theirs.grad, atol=tol, rtol=0)
    their_parameters = dict(theirs.named_parameters())
    mine_by_key = mine.torch_parameters()
    assert sorted(k for k, p in mine_by_key.items() if p.requires_grad) == sorted(their_parameters)
    for key, p in their_parameters.items():
        scale = max(1.0, float(p.grad.abs().max()))  # float32 rounding grows with the sums
        torch.testing.assert_close(mine_by_key[key].grad, p.grad, atol=tol * scale, rtol=0, msg=key)


def test_gradcheck_float64():
    theirs, mine = twin(*LAYERS["gcn"], torch.float64, seed=2)
    x, edge_index = random_graph(3, torch.float64, n=5, e=6)
    weight, bias = mine.weights.lin.weight, mine.weights.bias
    assert torch.autograd.gradcheck(lambda x, w, b: mine(x, edge_index), (x.requires_grad_(True), weight, bias))


def test_the_weights_are_parameters_an_optimizer_steps():
    theirs, mine = twin(*LAYERS["sage"], torch.float32, seed=7)
    model = torch.nn.Sequential()
    model.conv = mine
    names = {name for name, _ in model.named_parameters()}
    assert names == {"conv.weights.lin_l.weight", "conv.weights.lin_l.bias", "conv.weights.lin_r.weight"}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    x, edge_index = random_graph(4, torch.float32)
    before = mine(x, edge_index).detach()
    mine(x, edge_index).square().sum().backward()
    optimizer.step()
    after_torch = mine(x, edge_index).detach()
    after_numpy = mine(x.numpy(), edge_index.numpy())  # NumPy calls read the stepped Parameters too
    assert float((after_torch - before).abs().max()) > 1e-2
    np.testing.assert_allclose(after_numpy, after_torch.numpy(), atol=1e-5, rtol=0)
    # PyG's layer stepped by hand with its own gradients lands on lrnn's stepped weights
    theirs(x, edge_index).square().sum().backward()
    for key, p in theirs.named_parameters():
        torch.testing.assert_close(mine.torch_parameters()[key].detach(), p.detach() - 0.5 * p.grad, atol=1e-5, rtol=0)


def test_a_layer_used_twice_differentiates_each_call():
    theirs, mine = twin(*LAYERS["gcn"], torch.float64, seed=3)
    theirs_square, mine_square = twin(lambda: pyg.GCNConv(4, 4), GCNConv, torch.float64, seed=3)
    x, edge_index = random_graph(6, torch.float64)
    xs = [x.clone().requires_grad_(True) for _ in range(2)]
    y_theirs = theirs_square(torch.tanh(theirs(xs[0], edge_index)), edge_index)
    y_theirs = theirs_square(y_theirs, edge_index)
    y_mine = mine_square(torch.tanh(mine(xs[1], edge_index)), edge_index)
    y_mine = mine_square(y_mine, edge_index)
    (y_theirs.sum() + y_theirs.square().sum()).backward()
    (y_mine.sum() + y_mine.square().sum()).backward()
    torch.testing.assert_close(xs[1].grad, xs[0].grad, atol=1e-6, rtol=0)
    for key, p in theirs_square.named_parameters():
        torch.testing.assert_close(mine_square.torch_parameters()[key].grad, p.grad, atol=1e-6, rtol=0)
    # a NumPy call on another graph between a torch call and its backward
    x_mine = x.clone().requires_grad_(True)
    y = mine(x_mine, edge_index)
    mine(np.ones((3, 3)), np.array([[0, 1], [1, 2]]))
    y.square().sum().backward()
    x_theirs = x.clone().requires_grad_(True)
    theirs(x_theirs, edge_index).square().sum().backward()
    torch.testing.assert_close(x_mine.grad, x_theirs.grad, atol=1e-6, rtol=0)


def test_a_pyg_batch_is_one_big_graph():
    from torch_geometric.data import Batch, Data

    _, mine = twin(*LAYERS["gin"], torch.float32, seed=8)
    graphs = [Data(x=x, edge_index=e) for x, e in (random_graph(s, torch.float32, n=6 + s, e=8) for s in range(3))]
    batch = Batch.from_data_list(graphs)
    together = mine(batch.x, batch.edge_index)
    apart = torch.cat([mine(g.x, g.edge_index) for g in graphs])
    torch.testing.assert_close(together, apart, atol=1e-6, rtol=0)


def test_numpy_in_numpy_out_still():
    _, mine = twin(*LAYERS["gcn"], torch.float64, seed=1)
    x, edge_index = random_graph(2, torch.float64)
    out = mine(x.numpy(), edge_index.numpy())
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, mine(x, edge_index).detach().numpy(), atol=1e-12, rtol=0)
    assert set(mine.weight_arrays()) == {"lin.weight", "bias"}


def test_edge_inputs_that_ask_for_gradients_are_refused():
    _, mine = twin(*LAYERS["gcn"], torch.float32, seed=1)
    x, edge_index = random_graph(2, torch.float32)
    weight = torch.rand(edge_index.shape[1], requires_grad=True)
    with pytest.raises(ValueError, match=r"edge_weight requires grad.*edge_weight.detach\(\)"):
        mine(x, edge_index, weight)
    with pytest.raises(TypeError, match="float32 or float64"):
        mine(x.half(), edge_index)


def test_the_pyneuralogic_constructor_called_pyg_style_names_the_pyg_call():
    x, edge_index = random_graph(2, torch.float32)
    with pytest.raises(TypeError, match=r"GCNConv\.pyg\(4, 3\)\(x, edge_index\)"):
        GCNConv(4, 3, "h", "x", "edge")(x, edge_index)
    assert len(GCNConv(4, 3, "h", "x", "edge")()) > 0  # its rules, as before


# --- MUTAG: a torch model with an lrnn layer trains as the same model with PyG's ---------


class MixedNet(torch.nn.Module):
    """Linear -> ReLU -> GCNConv (PyG's or lrnn's) -> ReLU -> mean pool -> Linear."""

    def __init__(self, conv):
        super().__init__()
        self.embed, self.conv, self.classify = torch.nn.Linear(7, 32), conv, torch.nn.Linear(32, 2)

    def forward(self, x, edge_index, batch, graphs):
        h = torch.relu(self.conv(torch.relu(self.embed(x)), edge_index))
        return self.classify(pyg.global_mean_pool(h, batch, size=graphs))


def mutag_batches():
    from lrnn.datasets import TUDataset

    data = TUDataset(TU, "MUTAG")
    graphs = [data[i] for i in range(len(data))]
    xs = [torch.tensor(g.x, dtype=torch.float32) for g in graphs]
    edges = [torch.tensor(g.edge_index, dtype=torch.long) for g in graphs]

    def batch(indices):
        offsets = np.cumsum([0] + [graphs[i].num_nodes for i in indices])
        return (torch.cat([xs[i] for i in indices]),
                torch.cat([edges[i] + int(o) for i, o in zip(indices, offsets)], 1),
                torch.cat([torch.full((graphs[i].num_nodes,), k) for k, i in enumerate(indices)]),
                torch.tensor([graphs[i].y for i in indices]))

    return len(graphs), batch


def train_mutag(use_lrnn, seed, batch, n, epochs=25, batch_size=32):
    torch.manual_seed(seed)
    conv = pyg.GCNConv(32, 32)
    net = MixedNet(GCNConv.from_torch(conv) if use_lrnn else conv)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    order = np.random.default_rng(seed).permutation(n)
    train, test = order[:150], order[150:]
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(epochs):
        shuffled, total = rng.permutation(train), 0.0
        for s in range(0, len(shuffled), batch_size):
            x, edge_index, b, y = batch(shuffled[s:s + batch_size])
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x, edge_index, b, len(y)), y)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(y)
        losses.append(total / len(train))
    with torch.no_grad():
        x, edge_index, b, y = batch(test)
        accuracy = float((net(x, edge_index, b, len(y)).argmax(1) == y).float().mean())
    return accuracy, losses


@pytest.mark.skipif(not (TU / "MUTAG").is_dir(), reason="shared/datasets/tu/MUTAG is not there")
def test_a_model_mixing_lrnn_and_torch_layers_trains_on_mutag_as_pyg():
    n, batch = mutag_batches()
    for seed in (0, 1):
        theirs, their_losses = train_mutag(False, seed, batch, n)
        mine, my_losses = train_mutag(True, seed, batch, n)
        print(f"seed {seed}: test accuracy lrnn {mine:.4f}, PyG {theirs:.4f}; loss {my_losses[0]:.4f} -> {my_losses[-1]:.4f}")
        assert abs(mine - theirs) <= 0.02, (seed, mine, theirs)
        assert my_losses[-1] < 0.8 * my_losses[0]  # it learned
        # the same start, data order and float32 steps: the two runs follow one trajectory
        np.testing.assert_allclose(my_losses, their_losses, atol=2e-3, rtol=0)


def test_a_copy_is_a_layer_of_its_own():
    import copy
    import pickle

    theirs, mine = twin(*LAYERS["gin"], torch.float64, seed=9)
    x, edge_index = random_graph(5, torch.float64)
    copied, unpickled = copy.deepcopy(mine), pickle.loads(pickle.dumps(mine))
    torch.testing.assert_close(copied(x, edge_index), theirs(x, edge_index), atol=1e-6, rtol=0)
    torch.testing.assert_close(unpickled(x, edge_index), theirs(x, edge_index), atol=1e-6, rtol=0)
    with torch.no_grad():
        copied.torch_parameters()["nn.0.weight"].add_(1.0)  # the copy's weights are its own
    torch.testing.assert_close(mine(x, edge_index), theirs(x, edge_index), atol=1e-6, rtol=0)
    assert float((copied(x, edge_index) - mine(x, edge_index)).detach().abs().max()) > 0.1
