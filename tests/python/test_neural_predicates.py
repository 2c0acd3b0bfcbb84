"""Batched neural predicates (lrnn.nn.torch_function.NeuraLogic(batched=True), docs/neurosymbolic.md
"Batched neural predicates"): one engine call per structure of rows, the same outputs and
gradients as one call per row, and no nanobind leak report at exit."""
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import lrnn  # noqa: E402
from lrnn import R, Settings  # noqa: E402
from lrnn.nn.torch_function import NeuraLogic  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def small_model():
    model = lrnn.Model()
    model += (R.h(lrnn.V.X) <= (R.a(lrnn.V.X)[2, 1], R.b[2, 2])) | [lrnn.Transformation.TANH]
    model += (R.y <= R.h(lrnn.V.X)[1, 2]) | [lrnn.Transformation.SIGMOID]
    return model


def row_facts(x, n):
    """n scalar facts a(k) from the row's first entries, and the vector b from its last two:
    rows with another n have another structure."""
    return [R.a(k)[x[k]] for k in range(int(n))] + [R.b[x[2:4]]]


def layers():
    unbatched = NeuraLogic(small_model(), [], R.y, row_facts, Settings(seed=5), dtype=torch.float64)
    batched = NeuraLogic(small_model(), [], R.y, row_facts, Settings(seed=5), dtype=torch.float64, batched=True)
    batched.load_state_dict(unbatched.state_dict())
    return unbatched, batched


def gradients(output, inputs, coefficients):
    return torch.autograd.grad((output * coefficients).sum(), inputs)


def test_batched_equals_one_call_per_row_in_value_and_gradient():
    unbatched, batched = layers()
    x = torch.tensor(np.random.default_rng(0).normal(size=(6, 4)), requires_grad=True)
    n = [1, 2, 2, 1, 2, 1]  # two structures, interleaved
    coefficients = torch.tensor([0.3, -1.0, 2.0, 0.7, -0.2, 1.1], dtype=torch.float64)
    reference = torch.stack([unbatched(x[i], n[i]) for i in range(6)])
    output = batched(x, n)
    assert output.shape == (6,)
    assert torch.allclose(output, reference, rtol=0, atol=1e-12)
    assert float((output - reference).detach().abs().max()) < 1e-12
    params = list(batched.parameters())
    ref_grads = gradients(reference, [x, *unbatched.parameters()], coefficients)
    grads = gradients(output, [x, *params], coefficients)
    for got, want in zip(grads, ref_grads):
        assert got.shape == want.shape
        assert float((got - want).abs().max()) < 1e-12
    assert float(grads[0].abs().sum()) > 0.1  # the facts' gradients are really there
    assert len(batched._structures) == 2  # one grounding and plan per structure


def test_rows_of_one_structure_share_one_plan_and_values_computed_in_to_logic_flow_back():
    _, batched = layers()
    x = torch.tensor(np.random.default_rng(1).normal(size=(5, 4)), requires_grad=True)
    scaled = NeuraLogic(small_model(), [], R.y, lambda x: [R.a(0)[x[0] * 3.0], R.b[x[2:4].exp()]],
                        Settings(seed=5), dtype=torch.float64, batched=True)
    unbatched = NeuraLogic(small_model(), [], R.y, lambda x: [R.a(0)[x[0] * 3.0], R.b[x[2:4].exp()]],
                           Settings(seed=5), dtype=torch.float64)
    scaled.load_state_dict(unbatched.state_dict())
    output = scaled(x)
    reference = torch.stack([unbatched(x[i]) for i in range(5)])
    assert len(scaled._structures) == 1
    assert float((output - reference).detach().abs().max()) < 1e-12
    got = torch.autograd.grad(output.sum(), x)[0]
    want = torch.autograd.grad(reference.sum(), x)[0]
    assert float((got - want).abs().max()) < 1e-12
    assert float(got[:, 1].abs().max()) == 0.0  # x[1] is read by no fact


def test_float32_rows_and_an_integer_tensor_input_batch_as_the_unbatched_layer():
    unbatched, batched = layers()
    x = torch.tensor(np.random.default_rng(3).normal(size=(5, 4)), dtype=torch.float32, requires_grad=True)
    n = torch.tensor([2, 1, 2, 2, 1])  # int64: a structure input, gathered with the values but given no gradient
    reference = torch.stack([unbatched(x[i], n[i]) for i in range(5)])
    output = batched(x, n)
    assert float((output - reference).detach().abs().max()) < 1e-12
    got, want = torch.autograd.grad(output.sum(), x)[0], torch.autograd.grad(reference.sum(), x)[0]
    assert got.dtype == torch.float32 and float((got - want).abs().max()) < 1e-12
    assert float(got.abs().sum()) > 0.1


def test_a_value_that_is_not_finite_is_refused_naming_the_row_and_fact():
    _, batched = layers()
    x = torch.tensor(np.random.default_rng(2).normal(size=(4, 4)))
    x[2, 3] = float("nan")  # row 2's vector b
    with pytest.raises(ValueError, match=r"finite numbers: row 2 of the batch gives b a value"):
        batched(x, [1, 1, 1, 1])
    computed = NeuraLogic(small_model(), [], R.y, lambda x: [R.a(0)[x[0] / 0.0], R.b[x[2:4]]],
                          Settings(seed=5), dtype=torch.float64, batched=True)
    with pytest.raises(ValueError, match=r"finite numbers: row 0 of the batch gives a\(0\) a value"):
        computed(torch.ones(3, 4))


def test_batched_gradients_match_finite_differences():
    _, batched = layers()
    x = torch.tensor(np.random.default_rng(2).normal(size=(4, 4)), requires_grad=True)
    n = [2, 1, 2, 2]
    assert torch.autograd.gradcheck(lambda x, *w: batched(x, n), (x, *batched.parameters()), eps=1e-6, atol=1e-8)


def test_vector_outputs_keep_their_shape():
    model = lrnn.Model()
    model += R.h <= R.a[3, 2]
    layer = NeuraLogic(model, [], R.h, lambda x: [R.a[x]], Settings(seed=1), dtype=torch.float64, batched=True)
    x = torch.ones(4, 2, dtype=torch.float64)
    out = layer(x)
    w = list(layer.parameters())[0].detach()
    assert out.shape == (4, 3)
    assert torch.allclose(out, (w @ x.T).T, atol=1e-12)


def test_a_batch_needs_one_leading_size():
    _, batched = layers()
    with pytest.raises(ValueError, match="leading"):
        batched(torch.zeros(3, 4, dtype=torch.float64), [1, 2])


def example(name):
    """The module examples/neurosymbolic/NAME.py (which imports its neighbours)."""
    sys.path.insert(0, str(REPO / "examples" / "neurosymbolic"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def one_hot(indices):
    """Rows of 10-vectors (float64), row r with a 1 at indices[r]."""
    return torch.eye(10, dtype=torch.float64)[torch.as_tensor(indices)]


def assert_same_probability(got, want, wrt, tolerance):
    """lrnn's probabilities `got` equal the torch recursion's `want` in value and in the
    gradient of their sum with respect to `wrt`, and neither is trivially zero."""
    assert float((got - want).detach().abs().max()) < tolerance
    assert float(want.detach().min()) > 1e-6  # every row's label is possible
    g1 = torch.autograd.grad(got.sum(), wrt)[0]
    g2 = torch.autograd.grad(want.sum(), wrt)[0]
    assert float((g1 - g2).abs().max()) < tolerance and float(g2.abs().max()) > 1e-3
    return g1


def test_digit_addition_template_is_the_exact_probability():
    pytest.importorskip("sklearn")
    da = example("digit_addition")
    rng = np.random.default_rng(3)
    for digits in (1, 2):
        pa = torch.tensor(rng.dirichlet(np.ones(10), size=(5, digits)), requires_grad=True)
        pb = torch.tensor(rng.dirichlet(np.ones(10), size=(5, digits)))
        sums = rng.integers(0, 2 * 10 ** digits - 1, size=5)
        target = torch.stack([one_hot((sums // 10 ** i) % 10) for i in range(digits + 1)], dim=1)
        layer = NeuraLogic(da.addition_template(), [], R.correct, da.to_logic(digits), dtype=torch.float64,
                           batched=True)
        assert_same_probability(layer(pa, pb, target), da.torch_exact_probability(pa, pb, target), pa, 1e-12)


def test_digit_count_template_is_the_exact_probability():
    pytest.importorskip("sklearn")
    dc = example("digit_count")
    rng = np.random.default_rng(4)
    for images in (1, 4):
        p = torch.tensor(rng.dirichlet(np.ones(10), size=(6, images)), requires_grad=True)
        digit, count = one_hot(rng.integers(0, 10, size=6)), one_hot(rng.integers(0, images + 1, size=6))
        got = dc.lrnn_probability(images, torch.float64)(p, digit, count)
        assert_same_probability(got, dc.torch_exact_probability(p, digit, count), p, 1e-6)
    # the count's probabilities over n = 0..K sum to one
    p = torch.tensor(rng.dirichlet(np.ones(10), size=(1, 3)))
    rows = torch.eye(10, dtype=torch.float64)[:4]
    total = dc.lrnn_probability(3, torch.float64)(p.expand(4, 3, 10), rows[[2] * 4], rows).sum()
    assert abs(float(total) - 1.0) < 1e-12
    with pytest.raises(ValueError, match="1 to 9 images"):
        dc.to_logic(10)


def test_kinship_chains_compose_exactly_in_rows_of_two_structures():
    kc = example("kinship_chains")
    name = kc.RELATIONS.index
    assert kc.compose(name("father"), kc.BASE.index("mother")) == name("grandmother")
    assert kc.compose(name("granddaughter"), kc.BASE.index("son")) == name("great-grandson")
    assert kc.compose(name("father"), kc.BASE.index("son")) == -1  # a brother or oneself: not composed
    words, lengths, target, targets = kc.make_chains(9, seed=5)
    assert set(lengths.tolist()) == {2, 3}
    torch.manual_seed(1)
    links = torch.softmax(torch.randn(9, 3, 4, dtype=torch.float64), -1).requires_grad_()
    layer = kc.lrnn_probability(torch.float64)
    got = layer(links, lengths.tolist(), target)
    assert len(layer._structures) == 2  # one grounding per chain length
    g1 = assert_same_probability(got, kc.torch_exact_probability(links, lengths, target), links, 1e-6)
    assert float(g1[lengths == 2, 2].abs().max()) == 0.0  # a 2-link row does not read the third link
    # links that are the true relations give each chain probability 1 of its target
    truth = torch.eye(4, dtype=torch.float64)[torch.div(words, 3, rounding_mode="floor")]
    assert torch.allclose(layer(truth, lengths.tolist(), target), torch.ones(9, dtype=torch.float64), atol=1e-12)


LEAK_SCRIPT = textwrap.dedent("""
    import torch
    import lrnn
    from lrnn import R, Settings
    from lrnn.nn.torch_function import NeuraLogic

    model = lrnn.Model()
    model += (R.y <= R.a[1, 2]) | [lrnn.Transformation.SIGMOID]
    for batched in (False, True):
        layer = NeuraLogic(model, [], R.y, lambda x: [R.a[x]], Settings(seed=1), dtype=torch.float64,
                           batched=batched)
        optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
        x = torch.ones(3, 2, dtype=torch.float64)
        for _ in range(2):
            out = layer(x) if batched else torch.stack([layer(r) for r in x])
            loss = out.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    trained = lrnn.Model()
    trained += R.y <= R.a[1, 2]
    trained.build(Settings(epochs=2))
    built = trained.build_dataset(lrnn.Dataset([lrnn.Sample(R.y[1.0], [R.a[[1.0, 2.0]]])]))
    trained.train(built, epochs=2)
    print("done")
""")


def test_no_nanobind_leak_at_exit():
    run = subprocess.run([sys.executable, "-c", LEAK_SCRIPT], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert "leaked" not in run.stderr, run.stderr
