"""The float32 mode from Python: Settings(dtype=...) (a misspelling is refused naming the
closest value), a float32 model trains to the CLI's float32 numbers and close to the float64
run, and lrnn.nn's attention, encoder layer and a PyG GCN layer in float32 against PyTorch /
PyG in float32 (tolerances of float rounding), and against their own float64 run."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lrnn import Adam, Settings
from lrnn.examples import xor_vectorized_template
import lrnn.nn as nn

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "datasets" / "neuralogic" / "simple"
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))


def test_settings_dtype_takes_float32_and_float64_and_names_the_closest_on_a_typo():
    assert Settings(dtype="float32")["dtype"] == "float32"
    assert Settings(dtype="float64")["dtype"] == "float64"
    assert Settings(dtype=np.float32)["dtype"] == "float32"
    assert Settings(dtype=np.dtype("float64"))["dtype"] == "float64"
    with pytest.raises(ValueError, match="did you mean 'float32'"):
        Settings(dtype="flaot32")
    with pytest.raises(ValueError, match="did you mean 'float64'"):
        Settings(dtype="float46")
    s = Settings()
    with pytest.raises(ValueError, match="did you mean 'float32'"):
        s["dtype"] = "float3"
    with pytest.raises(ValueError, match="did you mean 'float32'"):
        nn.MultiheadAttention(4, 1, dtype="floa32")


def xor_vectorized_dataset():
    return xor_vectorized_template(), DATA / "xor" / "vectorized" / "trainExamples.txt"


def test_float32_training_matches_the_cli_and_stays_close_to_float64():
    from lrnn import FileDataset

    template, examples = xor_vectorized_dataset()
    outputs = {}
    for dtype in ("float64", "float32"):
        model = template.build(Settings(optimizer=Adam(lr=0.05), epochs=100, seed=5, dtype=dtype))
        model.train(FileDataset(examples_file=examples), progress=False)
        outputs[dtype] = np.asarray(model(FileDataset(examples_file=examples)))
    assert not np.array_equal(outputs["float32"], outputs["float64"])  # two dtypes really ran
    np.testing.assert_allclose(outputs["float32"], outputs["float64"], rtol=0, atol=1e-4)
    if CLI.exists():
        path = ROOT / "build" / "xor_vectorized_float32_test.lrnn"
        path.write_text(str(template))
        try:
            out = subprocess.run([str(CLI), "train", str(path), "--examples", str(examples), "--epochs", "100",
                                  "--seed", "5", "--lr", "0.05", "--dtype", "float32", "--json"],
                                 capture_output=True, text=True)
        finally:
            path.unlink()
        assert out.returncode == 0, out.stderr
        import json

        cli = np.array([o["output"] for o in json.loads(out.stdout)["outputs"]], dtype=float).ravel()
        assert np.array_equal(outputs["float32"].ravel(), cli)  # the same float32 run


torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

# float32 against PyTorch float32: both round differently, so about 1e-5 relative to the
# largest entry (outputs are O(1)).
TOL32 = 2e-5


def test_multihead_attention_float32_matches_torch_float32():
    torch.manual_seed(7)
    E, H, n = 16, 4, 12
    tm = torch.nn.MultiheadAttention(E, H, dropout=0.0, batch_first=True, dtype=torch.float32)
    x = torch.randn(1, n, E, dtype=torch.float32, requires_grad=True)
    y, _ = tm(x, x, x, need_weights=False)
    g = torch.randn_like(y)
    y.backward(g)
    m = nn.MultiheadAttention(E, H, dtype="float32").load_torch(tm)
    assert m.dtype == "float32"
    out = m(x.detach().numpy()[0])
    np.testing.assert_allclose(out, y.detach().numpy()[0], atol=TOL32, rtol=0)
    (gx,) = m.backward(g.numpy()[0])
    np.testing.assert_allclose(gx, x.grad.numpy()[0], atol=TOL32, rtol=0)
    grads = m.torch_grads()
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), atol=TOL32 * max(1, np.abs(p.grad.numpy()).max()),
                                   rtol=0, err_msg=name)
    # ... and it is a float32 run: not the float64 bits.
    m.double()
    assert not np.array_equal(m(x.detach().numpy()[0]), out)


def test_encoder_layer_float32_matches_torch_float32():
    torch.manual_seed(8)
    E, H, F, n = 16, 2, 32, 10
    tl = torch.nn.TransformerEncoderLayer(E, H, F, dropout=0.0, activation="relu", batch_first=True,
                                          dtype=torch.float32)
    x = torch.randn(1, n, E, dtype=torch.float32, requires_grad=True)
    y = tl(x)
    g = torch.randn_like(y)
    y.backward(g)
    m = nn.TransformerEncoderLayer(E, H, F).load_torch(tl).float()
    out = m(x.detach().numpy()[0])
    np.testing.assert_allclose(out, y.detach().numpy()[0], atol=TOL32, rtol=0)
    (gx,) = m.backward(g.numpy()[0])
    np.testing.assert_allclose(gx, x.grad.numpy()[0], atol=5e-5, rtol=0)


def test_pyg_gcn_float32_matches_pyg_float32():
    pyg = pytest.importorskip("torch_geometric.nn", reason="torch_geometric is not installed")
    from lrnn.nn.module import GCNConv

    torch.manual_seed(11)
    layer = pyg.GCNConv(8, 16).to(torch.float32)
    with torch.no_grad():
        layer.bias.add_(0.1 * torch.randn_like(layer.bias))
    g = torch.Generator().manual_seed(4)
    n = 30
    edge_index = torch.randint(0, n, (2, 90), generator=g)
    x = torch.randn(n, 8, generator=g, dtype=torch.float32, requires_grad=True)
    y = layer(x, edge_index)
    grad = torch.randn_like(y)
    y.backward(grad)
    m = GCNConv.from_torch(layer).float()
    out = m(x.detach().numpy(), edge_index.numpy())
    np.testing.assert_allclose(out, y.detach().numpy(), atol=TOL32, rtol=0)
    gx = m.backward(grad.numpy())
    np.testing.assert_allclose(gx, x.grad.numpy(), atol=TOL32, rtol=0)
    for key, gw in m.torch_grads().items():
        ref = dict(layer.named_parameters())[key].grad.numpy()
        np.testing.assert_allclose(gw, ref, atol=TOL32 * max(1, np.abs(ref).max()), rtol=0, err_msg=key)
