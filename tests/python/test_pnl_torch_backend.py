"""PyNeuraLogic's torch backend on lrnn (`model.build(settings, torch=True)`): weights as
torch Parameters, `model(built)` a differentiable tensor, trained by a torch optimizer;
checked against the same model written in torch (float64)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import lrnn  # noqa: E402
from lrnn import R, Settings, V  # noqa: E402
from lrnn.dataset import Dataset, Sample  # noqa: E402

W1 = [[0.5, -0.25], [0.75, 0.1]]
W2 = [[1.5, -0.5]]
FEATURES = [[1.0, 2.0], [-0.5, 0.25], [0.3, -1.2]]
TARGETS = [0.5, -0.2, 0.1]


def lrnn_model():
    model = lrnn.Model()
    model += (R.h(V.X) <= R.f(V.X)["w1":W1]) | [lrnn.Transformation.TANH]
    model += (R.out(V.X) <= R.h(V.X)["w2":W2]) | [lrnn.Transformation.IDENTITY]
    model += R.out / 1 | [lrnn.Transformation.IDENTITY]
    model.build(Settings(), torch=True)
    return model


def dataset():
    return Dataset([Sample(R.out(i)[t], [R.f(i)[x]]) for i, (x, t) in enumerate(zip(FEATURES, TARGETS))])


def torch_forward(w1, w2):
    x = torch.tensor(FEATURES, dtype=torch.float64)
    return (torch.tanh(x @ w1.T) @ w2.T).reshape(-1)


def test_outputs_and_gradients_equal_torch():
    torch.set_default_dtype(torch.float64)
    try:
        model = lrnn_model()
        w1, w2 = model.tensor_parameters()
        assert w1.shape == (2, 2) and w2.shape == (1, 2)
        built = model.build_dataset(dataset())
        out = model(built)
        ref_w1 = torch.tensor(W1, requires_grad=True)
        ref_w2 = torch.tensor(W2, requires_grad=True)
        ref = torch_forward(ref_w1, ref_w2)
        np.testing.assert_allclose(out.detach().numpy().reshape(-1), ref.detach().numpy(), rtol=0, atol=1e-12)
        target = torch.tensor(TARGETS)
        torch.nn.functional.mse_loss(out.reshape(-1), target).backward()
        torch.nn.functional.mse_loss(ref, target).backward()
        np.testing.assert_allclose(w1.grad.numpy(), ref_w1.grad.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(w2.grad.numpy(), ref_w2.grad.numpy(), rtol=0, atol=1e-12)
        # as PyNeuraLogic's backend: a new forward pass starts the gradients anew
        torch.nn.functional.mse_loss(model(built).reshape(-1), target).backward()
        np.testing.assert_allclose(w1.grad.numpy(), ref_w1.grad.numpy(), rtol=0, atol=1e-12)
        assert model(built).shape == (3,)  # scalar outputs: one entry per query, as torch.tensor(floats)
    finally:
        torch.set_default_dtype(torch.float32)


def test_a_torch_optimizer_trains_the_model():
    torch.set_default_dtype(torch.float64)
    try:
        model = lrnn_model()
        built = model.build_dataset(dataset())
        optimizer = torch.optim.SGD(model.tensor_parameters(), lr=0.1)
        ref_w1 = torch.tensor(W1, requires_grad=True)
        ref_w2 = torch.tensor(W2, requires_grad=True)
        ref_optimizer = torch.optim.SGD([ref_w1, ref_w2], lr=0.1)
        target = torch.tensor(TARGETS)
        for _ in range(3):
            for opt, out in ((optimizer, model(built).reshape(-1)), (ref_optimizer, torch_forward(ref_w1, ref_w2))):
                opt.zero_grad()
                torch.nn.functional.mse_loss(out, target).backward()
                opt.step()
        np.testing.assert_allclose(model(built).detach().numpy().reshape(-1),
                                   torch_forward(ref_w1, ref_w2).detach().numpy(), rtol=0, atol=1e-12)
        # the engine itself holds the stepped weights (a plain evaluation sees them)
        np.testing.assert_allclose(np.ravel(model.test(built).outputs),
                                   torch_forward(ref_w1, ref_w2).detach().numpy(), rtol=0, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)


def test_load_state_dict_reaches_the_tensors_and_plain_build_has_none():
    model = lrnn_model()
    params = model.parameters()
    params["weights"][1] = [[2.0, 3.0]]
    model.load_state_dict(params)
    assert model.tensor_parameters()[1].detach().numpy().tolist() == [[2.0, 3.0]]
    plain = lrnn.Model()
    plain += R.out <= R.f[1, 1]
    plain.build(Settings())
    with pytest.raises(NotImplementedError, match="torch=True"):
        plain.tensor_parameters()
