"""lrnn.nn.module, PyNeuraLogic's module zoo: every module's rules equal the rules
PyNeuraLogic 0.9.2 generates for the same arguments (recorded once by
scripts/record_pyneuralogic_rules.py into tests/python/data/pyneuralogic_rules; neuralogic is
not imported here), a template prints them in order, and the modules lrnn runs compute what
their rules say on a small graph (NumPy references with the model's own weights, torch /
torch_geometric where an exact equivalent exists)."""

import glob
import json
import os
import re

import numpy as np
import pytest

import lrnn.nn.module as M
from lrnn import Dataset, R, Sample, Settings, Template

DATA = os.path.join(os.path.dirname(__file__), "data", "pyneuralogic_rules")


def load_case(path):
    with open(path) as f:
        header, *rules = f.read().splitlines()
    _, module, kwargs = header.split(" ", 2)
    return module, json.loads(kwargs), rules


CASES = [load_case(p) for p in sorted(glob.glob(os.path.join(DATA, "*.txt")))]
CASE_IDS = [os.path.basename(p)[:-4] for p in sorted(glob.glob(os.path.join(DATA, "*.txt")))]


def structural_predicates(name, kwargs):
    """The atoms that only select groundings, which PyNeuraLogic writes as plain (valued) atoms
    and lrnn as hidden ones (RvNN, MetaConv, MAGNN: docs/peers.md, Modules)."""
    if name == "RvNN":
        return [kwargs["parent_map_name"]]
    if name == "MetaConv":
        return [kwargs["role_name"]] if kwargs["role_name"] is not None else kwargs["roles"]
    if name in ("MAGNNMean", "MAGNNLinear"):
        types = [kwargs["type_name"]] if kwargs["type_name"] is not None else kwargs["meta_paths"]
        return [kwargs["relation_name"]] + types
    return []


def differs_on_purpose(name, kwargs):
    """GENConv's softmax aggregation (its default) is DeeperGCN's, not PyNeuraLogic's plain
    softmax over vectors; structural atoms are hidden (docs/peers.md, Modules)."""
    genconv_softmax = name == "GENConv" and kwargs.get("aggregation", "softmax") == "softmax"
    return genconv_softmax or bool(structural_predicates(name, kwargs))


def hide(line, predicates):
    for p in predicates:
        line = line.replace(f" {p}(", f" *{p}(")
    return line


def expected_rules(name, kwargs, rules):
    if not differs_on_purpose(name, kwargs):
        return rules
    if structural_predicates(name, kwargs):
        rules = [hide(line, structural_predicates(name, kwargs)) if ":-" in line else line for line in rules]
        if name.startswith("MAGNN"):  # the aggregation PyNeuraLogic keeps but does not write
            meta = f"[aggregation={kwargs.get('aggregation', 'sum')}, duplicate_grounding=True]"
            rules = [line.replace("[duplicate_grounding=True]", meta) for line in rules]
        return rules
    h = kwargs["output_name"]
    plain = f"{h}__gen_feat_agg(I) :- {h}__gen_feat_sum(I, J), {h}__eps. [combination=sum, aggregation=softmax]"
    at = rules.index(plain)
    deeper_gcn = [
        f"{h}__gen_message(I, J) :- {h}__gen_feat_sum(I, J), {h}__eps. [combination=sum]",
        f"{h}__gen_softmax_max(I) :- {h}__gen_message(I, J). [aggregation=max]",
        f"{h}__gen_softmax_weight(I, J) :- {h}__gen_message(I, J), <-1.0> {h}__gen_softmax_max(I). "
        "[combination=sum, transformation=exp]",
        f"{h}__gen_softmax_sum(I) :- {h}__gen_softmax_weight(I, J), {h}__gen_message(I, J). "
        "[combination=elproduct, aggregation=sum]",
        f"{h}__gen_softmax_norm(I) :- {h}__gen_softmax_weight(I, J). [aggregation=sum]",
        f"{h}__gen_softmax_norm/1 [transformation=inverse]",
        f"{h}__gen_feat_agg(I) :- {h}__gen_softmax_sum(I), {h}__gen_softmax_norm(I). [combination=elproduct]",
    ]
    return rules[:at] + deeper_gcn + rules[at + 1:]


def refused_on_purpose(name, kwargs):
    """PyNeuraLogic's MultiheadAttention with arity 0 has no position term: its attention runs
    across the heads (docs/peers.md, Modules)."""
    return name == "MultiheadAttention" and kwargs.get("arity", 1) == 0


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_rules_equal_pyneuralogic(case):
    name, kwargs, rules = case
    module = getattr(M, name)(**kwargs)
    if refused_on_purpose(name, kwargs):
        with pytest.raises(ValueError, match="needs arity >= 1"):
            module()
        return
    assert [str(r) for r in module()] == expected_rules(name, kwargs, rules)
    assert str(module) == "\n".join(expected_rules(name, kwargs, rules))


def test_only_the_default_genconv_differs_from_pyneuralogic_on_purpose():
    assert sorted(i for i, (n, k, _) in zip(CASE_IDS, CASES) if differs_on_purpose(n, k)) == [
        "GENConv-1", "MAGNNLinear-1", "MAGNNMean-1", "MAGNNMean-2", "MetaConv-1", "MetaConv-2", "RvNN-1", "RvNN-2"]
    assert str(M.RvNN(3, "h", "x", "parent")).splitlines()[1] == (
        "h(X0, P) :- $h__rvnn_1={3, 3} h(X0, C1), *parent(P, C1). [transformation=tanh, aggregation=sum]")


PYNEURALOGIC_SPELLINGS = (" transpose(", " reverse(", " tanh(", "slice(rows=[", "agg_terms=[")
SPELLED_MODULES = {"Attention", "MultiheadAttention", "GRU", "LSTM", "Transformer", "TransformerEncoder",
                   "TransformerDecoder"}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_template_prints_module_rules_in_order(case):
    """The template prints the module's lines where they were added, as PyNeuraLogic prints
    them; the modules written with PyNeuraLogic's function spellings (transpose(k(Y)),
    tanh(c(T)), slice(rows=[0, 2]), softmax(agg_terms=[Y])) are read by lrnn as written."""
    name, kwargs, rules = case
    if refused_on_purpose(name, kwargs):
        return
    template = Template()
    template += getattr(M, name)(**kwargs)
    assert str(template).splitlines() == expected_rules(name, kwargs, rules)
    if name in SPELLED_MODULES:
        assert any(s in str(template) for s in PYNEURALOGIC_SPELLINGS)
        template.build(Settings())  # and lrnn reads it


def test_pyneuralogic_spellings_are_kept_in_the_template():
    """lrnn's parser reads PyNeuraLogic's function spellings (issue 11), so a module's lines go
    into the template unchanged (spelling.py respells only what the parser would refuse)."""
    lines = [str(r) for r in M.Attention(4, "att", "q", "k", "v")()]
    template = Template()
    template += M.Attention(4, "att", "q", "k", "v")
    assert lines[1] == ("att__dot(X, Y) :- att__dk, transpose(k(Y)), q(X). "
                        "[combination=product, aggregation=softmax(agg_terms=[Y])]")
    assert str(template).splitlines() == ["<0.5> att__dk.", lines[1], lines[2]]
    template.build(Settings())
    for module in (M.LSTM(3, 2, "h", "f", "h0", "c0", arity=0), M.GRU(3, 2, "h", "f", "h0", arity=0),
                   M.MultiheadAttention(4, 2, "o", "q", "k", "v")):
        template = Template()
        template += module
        assert str(template).splitlines() == [str(r) for r in module()]
        template.build(Settings())


def test_every_module_of_the_zoo_is_recorded():
    recorded = {name for name, _, _ in CASES}
    assert recorded == set(M.PYNEURALOGIC_MODULES) - {"Module"}


def test_hidden_names_follow_pyneuralogic():
    """`_edge` is the hidden predicate `*edge`, as `R.get("_edge")` prints it."""
    rules = [str(r) for r in M.SAGEConv(1, 2, "h1", "h0", "_edge")()]
    assert rules[0] == "{2, 1} h1(I) :- h0(J), *edge(J, I). [aggregation=avg]"
    assert str(M.GCNConv(1, 2, "h1", "h0", "_edge")).splitlines()[1] == "h1__edge(I, J) :- *edge(I, J)."


def test_bad_arguments_are_refused_with_the_argument_named():
    with pytest.raises(ValueError, match="embed_dim .* divisible by num_heads"):
        M.MultiheadAttention(5, 2, "o", "q", "k", "v")()
    with pytest.raises(ValueError, match="needs 4 activations"):
        M.MLP([3, 4, 5, 2], "h", "x", ["relu", "tanh"])()
    with pytest.raises(ValueError, match="weight dimension must be a positive int"):
        M.Linear(0, 2, "h", "x")()
    with pytest.raises(ValueError, match="arity must be a non-negative int"):
        M.Linear(1, 2, "h", "x", arity=-1)()
    with pytest.raises(ValueError, match="roles must be a non-empty list"):
        M.MetaConv(1, 2, "h", "x", None, [])()
    with pytest.raises(ValueError, match="even embed_dim"):
        M.PositionalEncoding(3, 4, "pe", "x")()


# ---- the rules run: outputs on small inputs against NumPy / torch -------------------------------

N = 4
EDGES = [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (0, 2)]  # j -> i


def vec(row):
    return [float(v) for v in np.atleast_1d(row)]


def evaluate(module, queries, facts):
    """The module's outputs for the queries (atoms) and the model's parameters by name."""
    template = Template()
    template += module
    model = template.build(Settings())
    y = model(Dataset([Sample(queries, facts)]))
    return np.asarray(y, dtype=float), model.parameters()


@pytest.fixture
def x():
    return np.random.default_rng(11).normal(size=(N, 3))


def node_facts(x, name="x"):
    return [R.get(name)(i)[vec(row)] for i, row in enumerate(x)]


def test_linear_is_torch_linear(x):
    torch = pytest.importorskip("torch", reason="torch is the reference for Linear")
    y, p = evaluate(M.Linear(3, 2, "h", "x", activation="tanh"), [R.h(i) for i in range(N)], node_facts(x))
    layer = torch.nn.Linear(3, 2, bias=False).double()
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(p["rule0.head"]))
        expect = torch.tanh(layer(torch.from_numpy(x))).numpy()
    np.testing.assert_allclose(y, expect, atol=1e-6)


def test_mlp_runs_its_rules(x):
    """MLP([3, 4, 2]) is one rule: relu(W2 relu(W1 x)) (rule activation, then the declaration's)."""
    y, p = evaluate(M.MLP([3, 4, 2], "h", "x"), [R.h(i) for i in range(N)], node_facts(x))
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    np.testing.assert_allclose(y, relu(relu(x @ p["rule0.body0"].T) @ p["rule0.head"].T), atol=1e-12)


def test_rnn_is_torch_rnn():
    torch = pytest.importorskip("torch", reason="torch is the reference for RNN")
    rng = np.random.default_rng(3)
    steps, xs, h0 = 5, rng.normal(size=(5, 3)), rng.normal(size=2)
    facts = [R.h0[vec(h0)]] + [R.f(t + 1)[vec(xs[t])] for t in range(steps)]
    y, p = evaluate(M.RNN(3, 2, "h", "f", "h0", arity=0), [R.h(t) for t in range(1, steps + 1)], facts)
    rnn = torch.nn.RNN(3, 2, 1, bias=False).double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.from_numpy(p["rule1.body0"]))
        rnn.weight_hh_l0.copy_(torch.from_numpy(p["rule1.body1"]))
        expect, _ = rnn(torch.from_numpy(xs), torch.from_numpy(h0)[None])
    np.testing.assert_allclose(y, expect.numpy(), atol=1e-6)


def test_rvnn_runs_its_rules():
    """A tree 3 -> (1, 2), 1 -> (0): leaves take x, parents tanh(sum_k W_k h(child k)) - the
    documented formula, with no +1 from the parent facts (hidden here, docs/peers.md)."""
    rng = np.random.default_rng(5)
    leaves = {0: rng.normal(size=2), 2: rng.normal(size=2)}
    facts = [R.x(i)[vec(v)] for i, v in leaves.items()] + [R.parent(0), R.parent(2), R.parent(1, 0),
                                                             R.parent(3, 1, 2)]
    y, p = evaluate(M.RvNN(2, "h", "x", "parent", arity=0), [R.h(i) for i in range(4)], facts)
    w1 = p["$h__rvnn_1"] if "$h__rvnn_1" in p else p["h__rvnn_1"]
    w2 = p["$h__rvnn_2"] if "$h__rvnn_2" in p else p["h__rvnn_2"]
    h0, h2 = np.tanh(leaves[0]), np.tanh(leaves[2])
    h1 = np.tanh(w1 @ h0)
    np.testing.assert_allclose(y, [h0, h1, h2, np.tanh(w1 @ h1 + w2 @ h2)], atol=1e-12)


def test_max_pooling_is_element_wise_as_pyg_global_max_pool():
    """[1, 5] and [2, 0] pool to [2, 5] (PyNeuraLogic keeps the input with the largest sum, [1, 5]:
    docs/peers.md)."""
    y, _ = evaluate(M.MaxPooling("out", "x"), [R.out], [R.x(0)[[1.0, 5.0]], R.x(1)[[2.0, 0.0]]])
    np.testing.assert_array_equal(y.reshape(-1), [2.0, 5.0])


@pytest.mark.parametrize("module, reduce", [(M.SumPooling, np.sum), (M.AvgPooling, np.mean), (M.MaxPooling, np.max)])
def test_pooling_reads_out_all_nodes(x, module, reduce):
    y, _ = evaluate(module("out", "x"), [R.out], node_facts(x))
    np.testing.assert_allclose(y.reshape(-1), reduce(x, axis=0), atol=1e-12)


def test_edge_pooling_with_input_arity_two():
    facts = [R.e(j, i)[float(j + 10 * i)] for j, i in EDGES]
    y, _ = evaluate(M.Pooling("out", "e", "sum", input_arity=2), [R.out], facts)
    assert float(np.ravel(y)[0]) == pytest.approx(sum(j + 10 * i for j, i in EDGES))


def test_meta_conv_runs_its_rules(x):
    roles = ["a", "b"]
    facts = node_facts(x, "f") + [R.role(j, roles[k % 2], i) for k, (j, i) in enumerate(EDGES)]
    y, p = evaluate(M.MetaConv(3, 2, "h", "f", "role", roles, aggregation="sum"), [R.h(i) for i in range(N)], facts)
    root, weights = p["rule1.body0"], {"a": p["rule2.body0"], "b": p["rule3.body0"]}
    pre = x @ root.T
    for r in roles:  # h__roles(I, r): the average (default) of W_r x_J over r's edges
        into = {i: [j for k, (j, i2) in enumerate(EDGES) if i2 == i and roles[k % 2] == r] for i in range(N)}
        for i, sources in into.items():
            if sources:
                pre[i] += np.mean([weights[r] @ x[j] for j in sources], axis=0)
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-pre)), atol=1e-12)


def test_positional_encoding_is_the_sinusoid_added_to_the_input():
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(3, 4))
    module = M.PositionalEncoding(4, 3, "pe", "x", base=10000.0)
    position, i = np.arange(3)[:, None], np.arange(0, 4, 2)[None]
    angle = position / 10000.0 ** (i / 4)
    table = np.stack([np.sin(angle[:, 0]), np.cos(angle[:, 0]), np.sin(angle[:, 1]), np.cos(angle[:, 1])], 1)
    np.testing.assert_allclose(module.table(), table, atol=1e-15)
    y, _ = evaluate(module, [R.pe(t) for t in range(3)], node_facts(xs))
    np.testing.assert_allclose(y, xs + table, atol=1e-12)


def test_gine_with_a_hidden_edge_name_is_pyg_gine(x):
    torch = pytest.importorskip("torch", reason="torch_geometric is the reference for GINEConv")
    pyg = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is the reference for GINEConv")
    e = np.random.default_rng(8).normal(size=(len(EDGES), 3))
    facts = node_facts(x) + [R.edge(j, i)[vec(e[k])] for k, (j, i) in enumerate(EDGES)]
    y, _ = evaluate(M.GINEConv(3, "x", "edge", "out", eps=0.5), [R.out(i) for i in range(N)], facts)
    layer = pyg.GINEConv(torch.nn.Identity(), eps=0.5).double()
    index = torch.tensor([[j for j, _ in EDGES], [i for _, i in EDGES]])
    expect = layer(torch.from_numpy(x), index, torch.from_numpy(e)).detach().numpy()
    np.testing.assert_allclose(y, expect, atol=1e-6)


@pytest.mark.parametrize("aggregation, pyg_aggr", [("softmax", "softmax"), ("avg", "mean"), ("sum", "add")])
@pytest.mark.parametrize("in_channels, edge_dim, scale", [(3, None, 1.0), (5, 5, 1.0), (3, None, 1000.0)])
def test_genconv_is_pyg_genconv(x, aggregation, pyg_aggr, in_channels, edge_dim, scale):
    """GENConv(aggregation=...) against PyG's GENConv(aggr=...) (t = 1 for softmax), with the
    model's weights copied into PyG's lin_src/lin_dst/lin_edge/MLP (no biases); messages in
    the thousands (scale) do not overflow the softmax."""
    torch = pytest.importorskip("torch", reason="torch_geometric is the reference for GENConv")
    pyg = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is the reference for GENConv")
    rng = np.random.default_rng(21)
    feats = scale * rng.normal(size=(N, in_channels))
    e = scale * rng.normal(size=(len(EDGES), edge_dim or 3))
    facts = node_facts(feats) + [R.e(j, i)[vec(e[k])] for k, (j, i) in enumerate(EDGES)]
    module = M.GENConv(in_channels, 3, "h", "x", "e", aggregation=aggregation, num_layers=1, eps=1e-7,
                       edge_dim=edge_dim)
    y, p = evaluate(module, [R.h(i) for i in range(N)], facts)
    extra = {} if pyg_aggr != "softmax" else dict(t=1.0, learn_t=False)
    layer = pyg.GENConv(in_channels, 3, aggr=pyg_aggr, num_layers=1, eps=1e-7, edge_dim=edge_dim, **extra).double()
    rules = [str(r) for r in module()]
    with torch.no_grad():  # each PyG weight is the one on the rule that plays its part
        by_rule = {int(k[4:].split(".")[0]): v for k, v in p.items() if k.startswith("rule")}
        lines = [r for r in rules if ":-" in r]  # the rules, numbered as the parameters' names number them
        for index, line in enumerate(lines):
            if index not in by_rule:
                continue
            if "__gen_edge_proj(I, J) :-" in line:
                layer.lin_edge.weight.copy_(torch.from_numpy(by_rule[index]))
            elif "__gen_feat_sum(I, J) :-" in line:
                layer.lin_src.weight.copy_(torch.from_numpy(by_rule[index]))
            elif "__gen_out(I) :-" in line:
                layer.lin_dst.weight.copy_(torch.from_numpy(by_rule[index]))
            elif line.startswith("h(X0)"):
                layer.mlp[0].weight.copy_(torch.from_numpy(by_rule[index]))
        index = torch.tensor([[j for j, _ in EDGES], [i for _, i in EDGES]])
        expect = layer(torch.from_numpy(feats), index, torch.from_numpy(e)).numpy()
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, expect, atol=1e-6 * scale)


def test_magnn_computes_its_documented_formula_once_true_is_spelled_true(x):
    """MAGNN's rules (with PyNeuraLogic's `duplicate_grounding=True`) compute MAGNN's
    intra-metapath mean:
    h(v) = act(sum over instances v-u of a-b typed paths of (x_v + x_u) / 2), and W times that
    with the linear encoder."""
    types = {0: "a", 1: "b", 2: "a", 3: "b"}
    facts = node_facts(x, "f") + [R.e(j, i) for j, i in EDGES] + [R.type(n, t) for n, t in types.items()]
    instances = [(v, u) for v, u in EDGES if types[v] == "a" and types[u] == "b"]  # e(V0, V1), V0: a, V1: b
    for module in (M.MAGNNMean("h", "f", "e", "type", ["a", "b"], activation="identity"),
                   M.MAGNNLinear(3, 2, "h", "f", "e", "type", ["a", "b"], activation="identity")):
        template = Template()
        template += module  # PyNeuraLogic's text, `duplicate_grounding=True` as it prints it
        model = template.build(Settings())
        heads = sorted({v for v, _ in instances})
        y = np.asarray(model(Dataset([Sample([R.h(v) for v in heads], facts)])))
        means = np.array([sum((x[v] + x[u]) / 2 for v2, u in instances if v2 == v) for v in heads])
        learned = [v for v in model.parameters().values() if v.shape == (2, 3)]  # the head weight W
        if isinstance(module, M.MAGNNLinear):
            (w,) = learned
            means = means @ w.T
        else:
            assert learned == []
        np.testing.assert_allclose(y, means, atol=1e-12)


def pyg_layer(name, *args, **kwargs):
    pytest.importorskip("torch", reason="torch_geometric is the reference for the GNN layers")
    pyg = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is the reference for the GNN layers")
    return getattr(pyg, name)(*args, **kwargs).double()


def run_pyg(layer, x, *extra):
    import torch

    index = torch.tensor([[j for j, _ in EDGES], [i for _, i in EDGES]])
    with torch.no_grad():
        return layer(torch.from_numpy(x), index, *extra).numpy()


def copy(parameter, value):
    import torch

    with torch.no_grad():
        parameter.copy_(torch.from_numpy(np.asarray(value)))


def test_sage_is_pyg_sage_without_bias(x):
    y, p = evaluate(M.SAGEConv(3, 4, "h", "x", "_edge"), [R.h(i) for i in range(N)],
                    node_facts(x) + [R.edge(j, i) for j, i in EDGES])
    layer = pyg_layer("SAGEConv", 3, 4)
    copy(layer.lin_l.weight, p["rule0.head"]), copy(layer.lin_l.bias, np.zeros(4)), copy(layer.lin_r.weight,
                                                                                           p["rule1.head"])
    np.testing.assert_allclose(y, run_pyg(layer, x), atol=1e-6)


def test_rgcn_is_pyg_rgcn_with_mean(x):
    import torch

    rels = ["r0", "r1"]
    facts = node_facts(x) + [R.edge(j, rels[k % 2], i) for k, (j, i) in enumerate(EDGES)]
    y, p = evaluate(M.RGCNConv(3, 4, "h", "x", "edge", rels), [R.h(i) for i in range(N)], facts)
    layer = pyg_layer("RGCNConv", 3, 4, 2, aggr="mean", bias=False)
    copy(layer.root, p["rule0.body0"].T)
    copy(layer.weight, np.stack([p["rule1.body0"].T, p["rule2.body0"].T]))
    np.testing.assert_allclose(y, run_pyg(layer, x, torch.tensor([k % 2 for k in range(len(EDGES))])), atol=1e-6)


def test_tag_and_appnp_without_normalisation_are_pyg(x):
    edges = [R.edge(j, i) for j, i in EDGES]
    y, p = evaluate(M.TAGConv(3, 4, "h", "x", "edge", k=2, normalize=False), [R.h(i) for i in range(N)],
                    node_facts(x) + edges)
    layer = pyg_layer("TAGConv", 3, 4, K=2, normalize=False, bias=False)
    for k in range(3):
        copy(layer.lins[k].weight, p[f"rule{k}.head"])
    np.testing.assert_allclose(y, run_pyg(layer, x), atol=1e-6)
    y, _ = evaluate(M.APPNPConv("h", "x", "edge", k=3, alpha=0.2, normalize=False), [R.h(i) for i in range(N)],
                    node_facts(x) + edges)
    np.testing.assert_allclose(y, run_pyg(pyg_layer("APPNP", K=3, alpha=0.2, normalize=False), x), atol=1e-6)


def test_res_gated_is_pyg_res_gated_without_biases(x):
    y, p = evaluate(M.ResGatedGraphConv(3, 4, "h", "x", "edge"), [R.h(i) for i in range(N)],
                    node_facts(x) + [R.edge(j, i) for j, i in EDGES])
    layer = pyg_layer("ResGatedGraphConv", 3, 4, bias=False)
    for lin, weight in ((layer.lin_key, p["rule0.body0"]), (layer.lin_query, p["rule0.body1"]),
                        (layer.lin_value, p["rule2.body1"])):
        copy(lin.weight, weight), copy(lin.bias, np.zeros(4))
    copy(layer.lin_skip.weight, p["rule1.body0"])
    np.testing.assert_allclose(y, run_pyg(layer, x), atol=1e-6)


# ---- modules that run in lrnn's spelling (spelling.py) against torch -----------------------------


def sequence_facts(steps, rng):
    xs, h0, c0 = rng.normal(size=(steps, 3)), rng.normal(size=2), rng.normal(size=2)
    return xs, h0, c0, [R.h0[vec(h0)], R.c0[vec(c0)]] + [R.f(t + 1)[vec(xs[t])] for t in range(steps)]


@pytest.mark.parametrize("name", ["GRU", "LSTM"])
def test_gru_and_lstm_are_torch(name):
    """PyNeuraLogic's GRU/LSTM rules (gates by rule index) with the model's weights in torch's
    stacked layout: GRU (r, z, n), LSTM (i, f, g = n, o)."""
    torch = pytest.importorskip("torch", reason="torch is the reference for GRU/LSTM")
    steps = 5
    xs, h0, c0, facts = sequence_facts(steps, np.random.default_rng(9))
    module = getattr(M, name)(3, 2, "h", "f", "h0", *(["c0"] if name == "LSTM" else []), arity=0)
    y, p = evaluate(module, [R.h(t) for t in range(1, steps + 1)], facts)
    layer = getattr(torch.nn, name)(3, 2, 1, bias=False).double()
    if name == "GRU":  # rules 1 (r), 2 (z), 3 (r * W_hn h), 4 (W_in x + that)
        ih, hh = [p["rule1.body0"], p["rule2.body0"], p["rule4.body0"]], [p["rule1.body1"], p["rule2.body1"],
                                                                         p["rule3.body1"]]
        state = torch.from_numpy(h0)[None]
    else:  # rules 1 (i), 2 (f), 3 (o), 4 (n)
        ih, hh = ([p[f"rule{k}.body{b}"] for k in (1, 2, 4, 3)] for b in (0, 1))
        state = (torch.from_numpy(h0)[None], torch.from_numpy(c0)[None])
    copy(layer.weight_ih_l0, np.concatenate(ih)), copy(layer.weight_hh_l0, np.concatenate(hh))
    with torch.no_grad():
        expect, _ = layer(torch.from_numpy(xs), state)
    np.testing.assert_allclose(y, expect.numpy(), atol=1e-6)


def test_attention_is_scaled_dot_product_attention():
    rng = np.random.default_rng(12)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    facts = [R.q(i)[vec(r)] for i, r in enumerate(q)] + [R.k(i)[vec(r)] for i, r in enumerate(k)] + \
        [R.v(i)[vec(r)] for i, r in enumerate(v)]
    y, _ = evaluate(M.Attention(4, "att", "q", "k", "v"), [R.att(i) for i in range(3)], facts)
    scores = q @ k.T / 2.0
    weights = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
    np.testing.assert_allclose(y, weights @ v, atol=1e-12)


def mha_weights(p, prefix, dim):
    """The q/k/v projections (named `$<prefix>_qw` ...) and the output projection (unnamed)."""
    get = lambda n: p[f"${prefix}_{n}"] if f"${prefix}_{n}" in p else p[f"{prefix}_{n}"]  # noqa: E731
    (out,) = [v for k, v in p.items() if k.startswith("rule") and v.shape == (dim, dim)]
    return get("qw"), get("kw"), get("vw"), out


@pytest.mark.parametrize("heads, kdim, vdim", [(1, 5, 6), (2, 5, 6), (2, 4, 4)])
def test_multihead_attention_is_torch(heads, kdim, vdim):
    torch = pytest.importorskip("torch", reason="torch is the reference for MultiheadAttention")
    rng, n = np.random.default_rng(heads + kdim), 3
    q, k, v = rng.normal(size=(n, 4)), rng.normal(size=(n, kdim)), rng.normal(size=(n, vdim))
    facts = [R.q(i)[vec(q[i])] for i in range(n)] + [R.k(i)[vec(k[i])] for i in range(n)] + \
        [R.v(i)[vec(v[i])] for i in range(n)]
    y, p = evaluate(M.MultiheadAttention(4, heads, "out", "q", "k", "v", vdim=vdim, kdim=kdim),
                    [R.out(i) for i in range(n)], facts)
    wq, wk, wv, wo = mha_weights(p, "out", 4)
    mha = torch.nn.MultiheadAttention(4, heads, bias=False, kdim=kdim, vdim=vdim).double()
    if kdim == vdim == 4:
        copy(mha.in_proj_weight, np.concatenate([wq, wk, wv]))
    else:
        copy(mha.q_proj_weight, wq), copy(mha.k_proj_weight, wk), copy(mha.v_proj_weight, wv)
    copy(mha.out_proj.weight, wo)
    with torch.no_grad():
        expect, _ = mha(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v))
    np.testing.assert_allclose(y, expect.numpy(), atol=1e-6)


def test_transformer_encoder_is_torch_post_norm_layer():
    """PyNeuraLogic's encoder: norm(x + MHA(x)), then norm(that + W2 relu(W1 that)) - torch's
    TransformerEncoderLayer without biases or dropout (LayerNorm weights 1)."""
    torch = pytest.importorskip("torch", reason="torch is the reference for TransformerEncoder")
    xs = np.random.default_rng(13).normal(size=(4, 4))
    y, p = evaluate(M.TransformerEncoder(4, 2, 8, "enc", "x"), [R.enc(i) for i in range(4)], node_facts(xs))
    wq, wk, wv, wo = mha_weights({k: v for k, v in p.items() if v.shape != (8, 4) and v.shape != (4, 8)},
                                 "enc__mhattn", 4)
    (w1,) = [v for v in p.values() if v.shape == (8, 4)]
    (w2,) = [v for v in p.values() if v.shape == (4, 8)]
    layer = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, bias=False).double()
    copy(layer.self_attn.in_proj_weight, np.concatenate([wq, wk, wv])), copy(layer.self_attn.out_proj.weight, wo)
    copy(layer.linear1.weight, w1), copy(layer.linear2.weight, w2)
    layer.eval()
    with torch.no_grad():
        expect = layer(torch.from_numpy(xs)).numpy()
    np.testing.assert_allclose(y, expect, atol=1e-6)


# ---- one training step equals torch's: the gradients through the respelled rules ----------------


def gru_or_lstm_case(name):
    import torch

    steps = 4
    xs, h0, c0, facts = sequence_facts(steps, np.random.default_rng(23))
    module = getattr(M, name)(3, 2, "h", "f", "h0", *(["c0"] if name == "LSTM" else []), arity=0)
    layer = getattr(torch.nn, name)(3, 2, 1, bias=False).double()
    order = ((1, 2, 4), (1, 2, 3)) if name == "GRU" else ((1, 2, 4, 3), (1, 2, 4, 3))

    def load(p):
        ih = [p[f"rule{k}.body0"] for k in order[0]]
        hh = [p[f"rule{k}.body1"] for k in order[1]]
        copy(layer.weight_ih_l0, np.concatenate(ih)), copy(layer.weight_hh_l0, np.concatenate(hh))

    state = torch.from_numpy(h0)[None] if name == "GRU" else (torch.from_numpy(h0)[None], torch.from_numpy(c0)[None])
    forward = lambda: layer(torch.from_numpy(xs), state)[0][-1]  # noqa: E731
    return module, [R.h(steps)], facts, layer, load, forward


def mha_case():
    import torch

    rng, n = np.random.default_rng(29), 3
    q, k, v = rng.normal(size=(n, 4)), rng.normal(size=(n, 5)), rng.normal(size=(n, 6))
    facts = [R.q(i)[vec(q[i])] for i in range(n)] + [R.k(i)[vec(k[i])] for i in range(n)] + \
        [R.v(i)[vec(v[i])] for i in range(n)]
    layer = torch.nn.MultiheadAttention(4, 2, bias=False, kdim=5, vdim=6).double()

    def load(p):
        wq, wk, wv, wo = mha_weights(p, "out", 4)
        copy(layer.q_proj_weight, wq), copy(layer.k_proj_weight, wk), copy(layer.v_proj_weight, wv)
        copy(layer.out_proj.weight, wo)

    forward = lambda: layer(*(torch.from_numpy(a) for a in (q, k, v)))[0]  # noqa: E731
    return M.MultiheadAttention(4, 2, "out", "q", "k", "v", vdim=6, kdim=5), [R.out(i) for i in range(n)], facts, \
        layer, load, forward


@pytest.mark.parametrize("case", ["GRU", "LSTM", "MultiheadAttention"])
def test_one_sgd_step_equals_torch(case):
    """MSE toward random targets, one SGD step (lr 0.1): every weight moves as torch moves it,
    so the gradients through reverse/transpose/slice/softmax/helper atoms are torch's."""
    torch = pytest.importorskip("torch", reason="torch is the reference for the training step")
    from lrnn.optim import SGD

    module, queries, facts, layer, load, forward = mha_case() if case == "MultiheadAttention" else \
        gru_or_lstm_case(case)
    template = Template()
    template += module
    model = template.build(Settings(optimizer=SGD(lr=0.1), epochs=1))
    before = {k: v.copy() for k, v in model.parameters().items()}
    targets = np.random.default_rng(31).normal(size=(len(queries), 2 if case != "MultiheadAttention" else 4))
    model.train(Dataset([Sample([q[vec(t)] for q, t in zip(queries, targets)], facts)]), progress=False)
    load(before)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    # lrnn's MSE: the squared error averaged over a query's components, then over the batch's queries
    loss = ((forward().reshape(len(queries), -1) - torch.from_numpy(targets)) ** 2).mean()
    loss.backward()
    optimizer.step()
    stepped = {k: v.detach().clone() for k, v in layer.state_dict().items()}
    load(model.parameters())
    assert any(not np.allclose(before[k], v) for k, v in model.parameters().items())  # the step moved something
    for key, value in layer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), stepped[key].numpy(), atol=1e-9, err_msg=key)


# ---- layers whose rules use PyNeuraLogic's function literals (sqrt, product of rules, leakyrelu) ----


def test_normalised_gcn_and_appnp_are_pyg(x):
    """PyNeuraLogic's normalised GCNConv and APPNPConv (self-loop facts, degree counts combined
    by product, sqrt and inverse) equal PyG's GCNConv and APPNP with their self-loops and
    symmetric normalisation."""
    edges = [R.edge(j, i) for j, i in EDGES]
    y, p = evaluate(M.GCNConv(3, 4, "h", "x", "edge"), [R.h(i) for i in range(N)], node_facts(x) + edges)
    layer = pyg_layer("GCNConv", 3, 4, bias=False)
    copy(layer.lin.weight, p["rule3.head"])
    np.testing.assert_allclose(y, run_pyg(layer, x), atol=1e-6)
    y, _ = evaluate(M.APPNPConv("h", "x", "edge", k=2, alpha=0.1), [R.h(i) for i in range(N)], node_facts(x) + edges)
    np.testing.assert_allclose(y, run_pyg(pyg_layer("APPNP", K=2, alpha=0.1), x), atol=1e-6)


def test_unnormalised_sgconv_is_k_plain_propagations(x):
    """SGConv(normalize=False) (PyNeuraLogic's `duplicate_grounding=True` rules): W (A^T)^K x,
    the sum over incoming edges taken K times, then the linear map."""
    edges = [R.edge(j, i) for j, i in EDGES]
    y, p = evaluate(M.SGConv(3, 2, "h", "x", "edge", k=2, normalize=False), [R.h(i) for i in range(N)],
                    node_facts(x) + edges)
    a = np.zeros((N, N))
    for j, i in EDGES:
        a[i, j] += 1.0
    (w,) = [v for v in p.values() if v.shape == (2, 3)]
    np.testing.assert_allclose(y, (a @ a @ x) @ w.T, atol=1e-12)


def gatv2_output(template, x):
    model = template.build(Settings())
    y = np.asarray(model(Dataset([Sample([R.h(i) for i in range(N)], node_facts(x) +
                                         [R.edge(j, i) for j, i in EDGES])])))
    return y, model.parameters()


@pytest.mark.parametrize("share_weights", [False, True])
def test_gatv2_is_pyg_gatv2(x, share_weights):
    """PyNeuraLogic's GATv2 rules with leakyrelu(slope) (the
    softmax over each target's neighbours J, self-loops added) against PyG's GATv2Conv
    without biases."""
    template = Template()
    template += M.GATv2Conv(3, 4, "h", "x", "edge", share_weights=share_weights)
    y, p = gatv2_output(template, x)
    check_gatv2(y, p, x, share_weights)


def check_gatv2(y, p, x, share_weights):
    layer = pyg_layer("GATv2Conv", 3, 4, bias=False, share_weights=share_weights)
    get = lambda n: p[f"$h__{n}"] if f"$h__{n}" in p else p[f"h__{n}"]  # noqa: E731
    copy(layer.lin_l.weight, get("right"))  # the source J's projection, also the message
    if not share_weights:
        copy(layer.lin_r.weight, get("left"))  # the target I's projection
    copy(layer.att, get("att").reshape(1, 1, 4))
    np.testing.assert_allclose(y, run_pyg(layer, x), atol=1e-6)


# ---- knowledge-base completion (no PyNeuraLogic recording: PyG's kge scores are the reference) ---

ENTITIES, RELATIONS = ["ann", "bob", "cid"], ["likes", "knows"]
TRIPLES = [("ann", "likes", "bob"), ("bob", "knows", "cid"), ("cid", "likes", "ann"), ("ann", "knows", "ann")]


def kbc_outputs(module, embeddings):
    """Scores of TRIPLES with the embeddings given as example facts {predicate: [rows]}."""
    facts = []
    for name, (constants, rows) in embeddings.items():
        facts += [R.get(name)(c)[vec(row)] for c, row in zip(constants, rows)]
    y, _ = evaluate(module, [R.score(s, r, o) for s, r, o in TRIPLES], facts)
    return y.reshape(-1)


def pyg_scores(model_class, entity_rows, relation_rows, **kwargs):
    torch = pytest.importorskip("torch", reason="torch_geometric is the reference for TransE/DistMult")
    kge = pytest.importorskip("torch_geometric.nn.kge", reason="torch_geometric is the reference for TransE/DistMult")
    model = getattr(kge, model_class)(len(ENTITIES), len(RELATIONS), entity_rows.shape[1], **kwargs).double()
    with torch.no_grad():
        model.node_emb.weight.copy_(torch.from_numpy(entity_rows))
        model.rel_emb.weight.copy_(torch.from_numpy(relation_rows))
        index = lambda names, k: torch.tensor([names.index(t[k]) for t in TRIPLES])  # noqa: E731
        return model(index(ENTITIES, 0), index(RELATIONS, 1), index(ENTITIES, 2)).numpy()


@pytest.fixture
def embeddings():
    rng = np.random.default_rng(17)
    return rng.normal(size=(len(ENTITIES), 4)), rng.normal(size=(len(RELATIONS), 4))


def test_distmult_is_pyg_distmult(embeddings):
    ent, rel = embeddings
    y = kbc_outputs(M.DistMult(4, "score", "e", "r"), {"e": (ENTITIES, ent), "r": (RELATIONS, rel)})
    np.testing.assert_allclose(y, pyg_scores("DistMult", ent, rel), atol=1e-6)
    a, b = ENTITIES.index, RELATIONS.index
    assert y[0] == pytest.approx(np.sum(ent[a("ann")] * rel[b("likes")] * ent[a("bob")]), abs=1e-12)


@pytest.mark.parametrize("p_norm", [1, 2])
def test_transe_is_pyg_transe_on_unit_embeddings(embeddings, p_norm):
    """PyG rescales entity embeddings to unit p-norm in its forward: given unit ones, the scores agree."""
    ent, rel = embeddings
    ent = ent / np.linalg.norm(ent, ord=p_norm, axis=1, keepdims=True)
    y = kbc_outputs(M.TransE(4, "score", "e", "r", p_norm=p_norm), {"e": (ENTITIES, ent), "r": (RELATIONS, rel)})
    np.testing.assert_allclose(y, pyg_scores("TransE", ent, rel, p_norm=float(p_norm)), atol=1e-6)


def test_simple_scores_both_directions(embeddings):
    ent, rel = embeddings
    rng = np.random.default_rng(4)
    tails, inverse = rng.normal(size=ent.shape), rng.normal(size=rel.shape)
    y = kbc_outputs(M.SimplE(4, "score", "hd", "tl", "r", "ri"),
                    {"hd": (ENTITIES, ent), "tl": (ENTITIES, tails), "r": (RELATIONS, rel), "ri": (RELATIONS, inverse)})
    a, b = ENTITIES.index, RELATIONS.index
    expect = [0.5 * (np.sum(ent[a(s)] * rel[b(r)] * tails[a(o)]) + np.sum(ent[a(o)] * inverse[b(r)] * tails[a(s)]))
              for s, r, o in TRIPLES]
    np.testing.assert_allclose(y, expect, atol=1e-12)


def test_kbc_modules_learn_their_embeddings():
    """With `entities`/`relations` the embeddings are learnable template facts: training moves
    a true triple's DistMult score to 1 and a false one's to 0 (DistMult is symmetric, so the
    false triple is not the true one reversed: that one always scores the same)."""
    template = Template()
    template += M.DistMult(3, "score", "e", "r", entities=ENTITIES, relations=RELATIONS)
    model = template.build(Settings(epochs=200, seed=3))
    assert sorted(k for k in model.parameters()) == ["fact0.e", "fact1.e", "fact2.e", "fact3.r", "fact4.r"]
    data = Dataset([Sample([R.score("ann", "likes", "bob")[1.0], R.score("ann", "likes", "cid")[0.0]],
                           [R.fact])])
    before = np.asarray(model(data)).reshape(-1)
    model.train(data, progress=False)
    after = np.asarray(model(data)).reshape(-1)
    assert abs(after[0] - 1.0) < 0.1 and abs(after[1]) < 0.1, (before, after)


def test_kbc_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="p_norm must be 1 or 2"):
        M.TransE(3, "s", "e", "r", p_norm=3)()
    with pytest.raises(ValueError, match="dim must be a positive int"):
        M.DistMult(0, "s", "e", "r")()
    with pytest.raises(ValueError, match="entities must be a non-empty list"):
        M.SimplE(2, "s", "h", "t", "r", "ri", entities=[])()


def test_transe_trains_its_embeddings_and_keeps_its_fixed_weights():
    template = Template()
    template += M.TransE(3, "score", "e", "r", entities=ENTITIES, relations=["likes"])
    model = template.build(Settings(epochs=50, seed=1))
    data = Dataset([Sample([R.score("ann", "likes", "bob")[0.0], R.score("ann", "likes", "cid")[-3.0]], [R.fact])])
    error = lambda: np.abs(np.asarray(model(data)).reshape(-1) - [0.0, -3.0]).sum()  # noqa: E731
    before = error()
    model.train(data, progress=False)
    assert error() < before / 2
    fixed = {k: v for k, v in model.parameters().items() if k.startswith("rule")}
    np.testing.assert_array_equal(fixed["rule0.body2"], -1.0)  # e_s + r - e_o
    np.testing.assert_array_equal(fixed["rule2.body0"], [[-1.0, -1.0, -1.0]])  # minus the sum of |d_k|


def test_a_users_module_returns_dsl_rules_from_call():
    """As in PyNeuraLogic: subclass Module, return rules from __call__, add it to a template."""
    from lrnn import V

    class Double(M.Module):
        def __call__(self):
            return [R.y(V.X) <= R.x(V.X)[2.0].fixed()]

    template = Template()
    template += Double()
    template.add_module(M.Linear(1, 1, "z", "y"))
    assert str(Double()) == "y(X) :- <2.0> x(X)."  # 2.0 prints as written
    model = template.build(Settings())
    y = np.asarray(model(Dataset([Sample([R.z(0)], [R.x(0)[3.0]])]))).reshape(-1)
    (w,) = model.parameters()["rule1.head"].reshape(-1)
    assert y[0] == pytest.approx(6.0 * w)
    with pytest.raises(NotImplementedError, match="must define rules"):
        str(M.Module())
