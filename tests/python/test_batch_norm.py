"""Batch normalisation (`P/n [normalization=batch]`) against torch's BatchNorm1d in float64:
the same graph model trained with Adam on whole-set and two-graph batches gives torch's
weights, scale, shift and running statistics, and evaluation gives torch's eval-mode outputs."""

import numpy as np
import pytest

from lrnn.core import Aggregation, Model, R, Settings, Transformation, V as Var
from lrnn.core.rules import Metadata
from lrnn.dataset import Dataset, Sample
from lrnn.nn.loss import MSE
from lrnn.nn.optim import Adam

TEMPLATE = """
h(X) :- {3,2} f(X).
h/1 {3}
h/1 [normalization=batch, activation=relu]
out :- {1,3} h(X). [aggregation=sum]
"""
GRAPHS = [  # node features per graph, target
    ([[0.5, -1.0], [1.0, 2.0]], 1.0),
    ([[-1.0, 0.3]], 0.0),
    ([[2.0, 1.0], [0.0, 1.0], [1.0, 1.0]], 2.0),
    ([[-2.0, -0.5], [0.3, 0.2]], -1.0),
]
W = [[0.3, -0.2], [0.5, 0.1], [-0.4, 0.6]]
SHIFT = [0.1, -0.2, 0.05]
V = [[0.7, -0.3, 0.4]]


def _template(tmp_path, written):
    if written == "text":
        path = tmp_path / "bn.lrnn"
        path.write_text(TEMPLATE)
        return Model(template_file=str(path))
    model = Model()  # the same template in the Python DSL
    model += R.h(Var.X) <= R.f(Var.X)[3, 2]
    model += (R.h / 1)[3, 1]
    model += R.h / 1 | Metadata(normalization="batch", transformation=Transformation.RELU)
    model += (R.out <= R.h(Var.X)[1, 3]) | [Aggregation.SUM]
    return model


def _lrnn(tmp_path, batch_size, written="text"):
    model = _template(tmp_path, written).build(
        Settings(batch_size=batch_size, optimizer=Adam(lr=0.05), error_function=MSE(reduction="mean"), shuffle=False))
    model.load_state_dict({"weights": {"rule0.body0": W, "h/1.offset": SHIFT, "rule1.body0": V}})
    samples = [Sample(R.out[y], [R.f(f"n{g}_{i}")[x] for i, x in enumerate(nodes)]) for g, (nodes, y) in
               enumerate(GRAPHS)]
    return model, Dataset(samples)


def _torch_model(torch):
    lin = torch.nn.Linear(2, 3, bias=False, dtype=torch.float64)
    bn = torch.nn.BatchNorm1d(3, dtype=torch.float64)
    out = torch.nn.Linear(3, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(W, dtype=torch.float64))
        bn.bias.copy_(torch.tensor(SHIFT, dtype=torch.float64))
        out.weight.copy_(torch.tensor(V, dtype=torch.float64))
    return lin, bn, out


def _torch_outputs(torch, modules, graphs):
    lin, bn, out = modules
    x = torch.tensor([row for nodes, _ in graphs for row in nodes], dtype=torch.float64)
    h = torch.relu(bn(lin(x)))
    sizes = [len(nodes) for nodes, _ in graphs]
    return torch.stack([out(part).sum() for part in torch.split(h, sizes)])


@pytest.mark.parametrize("batch_size,written", [(0, "text"), (2, "text"), (2, "dsl")])
def test_training_and_evaluation_match_torch_batchnorm1d(tmp_path, batch_size, written):
    torch = pytest.importorskip("torch", reason="torch's BatchNorm1d is the reference for this test")
    model, data = _lrnn(tmp_path, batch_size, written)
    built = model.build_dataset(data)
    model.train(built, epochs=3, progress=False)

    modules = _torch_model(torch)
    params = [p for m in modules for p in m.parameters()]
    opt = torch.optim.Adam(params, lr=0.05)
    batches = [GRAPHS] if batch_size == 0 else [GRAPHS[i:i + batch_size] for i in range(0, len(GRAPHS), batch_size)]
    for _ in range(3):
        for batch in batches:
            opt.zero_grad()
            y = torch.tensor([t for _, t in batch], dtype=torch.float64)
            torch.nn.functional.mse_loss(_torch_outputs(torch, modules, batch), y).backward()
            opt.step()

    lin, bn, out = modules
    weights = model.parameters()
    expected = {"rule0.body0": lin.weight, "rule1.body0": out.weight, "h/1.norm_scale": bn.weight,
                "h/1.offset": bn.bias, "h/1.norm_mean": bn.running_mean, "h/1.norm_var": bn.running_var}
    for name, value in expected.items():
        np.testing.assert_allclose(np.ravel(weights[name]), value.detach().numpy().ravel(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)
    assert not np.allclose(np.ravel(weights["h/1.norm_var"]), 1.0)  # the statistics moved
    bn.eval()
    with torch.no_grad():
        reference = _torch_outputs(torch, modules, GRAPHS).numpy()
    np.testing.assert_allclose(np.ravel(model(built)), reference, rtol=1e-9, atol=1e-12)


def test_the_torch_backend_refuses_batch_norm(tmp_path):
    pytest.importorskip("torch", reason="the torch backend needs torch")
    model = _template(tmp_path, "text")
    with pytest.raises(ValueError, match=r"cannot train batch normalisation \(h/1 \[normalization=batch\]\)"):
        model.build(Settings(), torch=True)
