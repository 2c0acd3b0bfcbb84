"""PyG-exact GNN layers (lrnn.nn.module.<Name>.from_torch) against torch_geometric in float64:
outputs, input gradients and weight gradients within 1e-6 on random graphs with isolated
nodes, self-loops and parallel edges; refusals of layers of another kind or configuration."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (test-only dependency)")
pyg = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is not installed (test-only dependency)")

from lrnn.nn.module import (  # noqa: E402
    APPNPConv, GATv2Conv, GCNConv, GENConv, GINConv, GINEConv, GraphConv, ResGatedGraphConv, RGCNConv, SAGEConv, SGConv,
    TAGConv,
)

TOL = 1e-6


@pytest.fixture(autouse=True)
def float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def random_graph(seed, n=9, e=18, d=3):
    """Nodes n-2 and n-1 are isolated; edges may repeat and include self-loops."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n - 2, (e,), generator=g)
    dst = torch.randint(0, n - 2, (e,), generator=g)
    edge_index = torch.stack([src, dst])
    edge_index = torch.cat([edge_index, edge_index[:, :3], torch.tensor([[0], [0]])], dim=1)  # parallel + loop
    x = torch.randn(n, d, generator=g)
    return x, edge_index


def check(torch_layer, lrnn_layer, x, edge_index, extra=()):
    xt = x.clone().requires_grad_(True)
    y = torch_layer(xt, edge_index, *extra)
    grad = torch.randn_like(y)
    y.backward(grad)
    out = lrnn_layer(x.numpy(), edge_index.numpy(), *[a.numpy() for a in extra])
    np.testing.assert_allclose(out, y.detach().numpy(), atol=TOL, rtol=0)
    lrnn_layer.zero_grad()
    gx = lrnn_layer.backward(grad.numpy())
    np.testing.assert_allclose(gx, xt.grad.numpy(), atol=TOL, rtol=0)
    grads = lrnn_layer.torch_grads()
    named = dict(torch_layer.named_parameters())
    for key, g in grads.items():
        assert named[key].grad is not None, key
        np.testing.assert_allclose(g, named[key].grad.numpy(), atol=TOL, rtol=0, err_msg=key)
    return len(grads)


LAYERS = {
    "gcn": lambda: pyg.GCNConv(3, 4),
    "gcn_no_loops": lambda: pyg.GCNConv(3, 4, add_self_loops=False),
    "gcn_improved": lambda: pyg.GCNConv(3, 4, improved=True),
    "gcn_no_norm_no_bias": lambda: pyg.GCNConv(3, 2, normalize=False, bias=False),
    "sage_mean": lambda: pyg.SAGEConv(3, 4),
    "sage_sum": lambda: pyg.SAGEConv(3, 4, aggr="sum"),
    "sage_max_no_root": lambda: pyg.SAGEConv(3, 4, aggr="max", root_weight=False),
    "graphconv": lambda: pyg.GraphConv(3, 4),
    "graphconv_mean": lambda: pyg.GraphConv(3, 5, aggr="mean", bias=False),
    "gin_mlp": lambda: pyg.GINConv(torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 4)),
                                   eps=0.3, train_eps=True),
    "gin_linear": lambda: pyg.GINConv(torch.nn.Linear(3, 2)),
    "gatv2": lambda: pyg.GATv2Conv(3, 4),
    "gatv2_shared_no_loops": lambda: pyg.GATv2Conv(3, 4, share_weights=True, add_self_loops=False,
                                                   negative_slope=0.1),
    "gatv2_3heads": lambda: pyg.GATv2Conv(3, 2, heads=3),
    "gatv2_2heads_mean": lambda: pyg.GATv2Conv(3, 4, heads=2, concat=False, share_weights=True),
    "sg": lambda: pyg.SGConv(3, 4, K=2),
    "sg_no_loops": lambda: pyg.SGConv(3, 2, K=3, add_self_loops=False, bias=False),
    "tag": lambda: pyg.TAGConv(3, 4, K=2),
    "tag_plain": lambda: pyg.TAGConv(3, 4, K=3, normalize=False, bias=False),
    "appnp": lambda: pyg.APPNP(K=3, alpha=0.15),
    "appnp_plain": lambda: pyg.APPNP(K=2, alpha=0.4, normalize=False),
    "res_gated": lambda: pyg.ResGatedGraphConv(3, 4),
    "res_gated_no_root": lambda: pyg.ResGatedGraphConv(3, 2, root_weight=False, bias=False),
    "rgcn_mean": lambda: pyg.RGCNConv(3, 4, num_relations=3),
    "rgcn_add": lambda: pyg.RGCNConv(3, 2, num_relations=2, aggr="add", root_weight=False),
    "gine": lambda: pyg.GINEConv(torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 4))),
    "gen_softmax": lambda: pyg.GENConv(3, 4, norm=None),
    "gen_learn_t_bias": lambda: pyg.GENConv(3, 3, norm=None, learn_t=True, t=0.7, bias=True, num_layers=3),
    "gen_add": lambda: pyg.GENConv(3, 4, aggr="add", norm=None, bias=True),
    "gine_edge_dim": lambda: pyg.GINEConv(torch.nn.Linear(3, 4), train_eps=True, eps=0.2, edge_dim=2),
}


def extra_inputs(layer, edge_index, seed):
    """edge_type / edge_attr where PyG's layer takes them."""
    g = torch.Generator().manual_seed(50 + seed)
    e = edge_index.shape[1]
    if isinstance(layer, pyg.RGCNConv):
        return (torch.randint(0, layer.num_relations, (e,), generator=g),)
    if isinstance(layer, pyg.GINEConv):
        return (torch.randn(e, 3 if layer.lin is None else layer.lin.in_channels, generator=g),)
    if isinstance(layer, pyg.GCNConv) and layer.improved:  # improved only acts with edge weights
        return (torch.rand(e, generator=g) + 0.5,)
    if isinstance(layer, pyg.GraphConv) and layer.aggr == "add":
        return (torch.randn(e, generator=g),)
    return ()

LRNN = {"GCNConv": GCNConv, "SAGEConv": SAGEConv, "GraphConv": GraphConv, "GINConv": GINConv, "GATv2Conv": GATv2Conv,
        "SGConv": SGConv, "TAGConv": TAGConv, "APPNP": APPNPConv, "ResGatedGraphConv": ResGatedGraphConv,
        "RGCNConv": RGCNConv, "GINEConv": GINEConv, "GENConv": GENConv}


@pytest.mark.parametrize("name", sorted(LAYERS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layer_matches_pyg(name, seed):
    torch.manual_seed(100 + seed)
    layer = LAYERS[name]()
    with torch.no_grad():  # non-zero biases and eps, so their gradients and values are checked
        for p in layer.parameters():
            p.add_(0.1 * torch.randn_like(p))
    lrnn_layer = LRNN[type(layer).__name__].from_torch(layer)
    x, edge_index = random_graph(seed)
    compared = check(layer, lrnn_layer, x, edge_index, extra_inputs(layer, edge_index, seed))
    assert compared == sum(1 for p in layer.parameters() if p.requires_grad)


def test_plan_is_reused_for_the_same_graph():
    torch.manual_seed(3)
    layer = pyg.GCNConv(3, 4)
    m = GCNConv.from_torch(layer)
    x, ei = random_graph(3)
    m(x.numpy(), ei.numpy())
    out = m((2 * x).numpy(), ei.numpy())
    np.testing.assert_allclose(out, layer(2 * x, ei).detach().numpy(), atol=TOL, rtol=0)
    assert m.stats()["groundings"] == 1 and m.stats()["cache_hits"] == 1


def test_load_torch_refuses_another_kind_shape_or_configuration():
    gcn = GCNConv.pyg(3, 4)
    with pytest.raises(TypeError, match="loads a torch_geometric GCNConv, got a SAGEConv"):
        gcn.load_torch(pyg.SAGEConv(3, 4))
    with pytest.raises(ValueError, match="out_channels=5"):
        gcn.load_torch(pyg.GCNConv(3, 5))
    with pytest.raises(ValueError, match="normalize=False"):
        gcn.load_torch(pyg.GCNConv(3, 4, normalize=False))
    with pytest.raises(ValueError, match="bias=False"):
        gcn.load_torch(pyg.GCNConv(3, 4, bias=False))
    with pytest.raises(ValueError, match="add_self_loops=False"):
        gcn.load_torch(pyg.GCNConv(3, 4, add_self_loops=False))
    with pytest.raises(ValueError, match="improved=True"):
        gcn.load_torch(pyg.GCNConv(3, 4, improved=True))  # loads into GCNConv.pyg(3, 4, improved=True)
    with pytest.raises(ValueError, match="aggr='max'"):
        SAGEConv.pyg(3, 4).load_torch(pyg.SAGEConv(3, 4, aggr="max"))
    with pytest.raises(ValueError, match="heads=2"):
        GATv2Conv.pyg(3, 4).load_torch(pyg.GATv2Conv(3, 4, heads=2))
    with pytest.raises(ValueError, match="edge_dim"):
        GATv2Conv.from_torch(pyg.GATv2Conv(3, 4, edge_dim=2))
    with pytest.raises(ValueError, match="BatchNorm1d"):
        GINConv.from_torch(pyg.GINConv(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))))
    with pytest.raises(ValueError, match="BatchNorm1d"):
        GENConv.from_torch(pyg.GENConv(3, 4))  # PyG's default norm="batch"
    with pytest.raises(ValueError, match="num_bases"):
        RGCNConv.from_torch(pyg.RGCNConv(3, 4, 3, num_bases=2))
    with pytest.raises(TypeError, match="loads a torch_geometric GINConv, got a GINEConv"):
        GINConv.pyg([("linear", 3, 4, True, 0)]).load_torch(pyg.GINEConv(torch.nn.Linear(3, 4)))
    with pytest.raises(ValueError, match="num_relations=3"):
        RGCNConv.pyg(3, 4, num_relations=2).load_torch(pyg.RGCNConv(3, 4, 3))


def test_weighted_mean_is_refused():
    with pytest.raises(ValueError, match="edge_weight with aggr='mean'"):
        GraphConv(3, 4, aggr="mean")(np.zeros((2, 3)), np.array([[0], [1]]), np.array([0.5]))


def test_relation_and_edge_inputs_are_checked():
    m = RGCNConv.pyg(3, 4, num_relations=2)
    with pytest.raises(ValueError, match="outside 0..1"):
        m(np.zeros((3, 3)), np.array([[0], [1]]), np.array([2]))
    with pytest.raises(ValueError, match="2 entries for 1 edges"):
        m(np.zeros((3, 3)), np.array([[0], [1]]), np.array([0, 1]))
    g = GINEConv.pyg([("linear", 3, 4, True, 0)], edge_dim=2)
    with pytest.raises(ValueError, match=r"edge_attr must be \[1, 2\]"):
        g(np.zeros((3, 3)), np.array([[0], [1]]), np.zeros((1, 3)))


def test_loaded_weights_are_pygs():
    torch.manual_seed(4)
    layer = pyg.SAGEConv(3, 4)
    m = SAGEConv.from_torch(layer)
    for key, value in m.weight_arrays().items():
        np.testing.assert_array_equal(value, layer.state_dict()[key].numpy())


def test_bad_inputs_are_refused():
    m = GCNConv.pyg(3, 4)
    with pytest.raises(ValueError, match=r"x must be \[n, 3\]"):
        m(np.zeros((4, 2)), np.zeros((2, 0), dtype=int))
    with pytest.raises(ValueError, match="outside 0..3"):
        m(np.zeros((4, 3)), np.array([[0], [7]]))
    with pytest.raises(ValueError, match=r"\[2, E\]"):
        m(np.zeros((4, 3)), np.array([0, 1]))
