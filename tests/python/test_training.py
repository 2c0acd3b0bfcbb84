"""Models written in the DSL train in C++ to exactly the CLI's numbers (same template
text, same data, same seed and options), and the model API around it works."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lrnn
from lrnn import C, SGD, Adam, Dataset, F, FileDataset, MSE, R, Settings, Template, V
from lrnn.examples import family_template, trains_template, xor_template, xor_vectorized_template

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "datasets" / "neuralogic" / "simple"
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))
needs_cli = pytest.mark.skipif(not CLI.exists(), reason="the lrnn CLI is not built")

XOR_ROWS = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]


def xor_dataset():
    """simple/xor/naive written in Python: one sample per row, the query holds the target."""
    dataset = Dataset()
    for (a, b), y in XOR_ROWS:
        dataset.add(R.xor[y], [R.a[a], R.b[b]])
    return dataset


def cli_train(tmp_path, template, examples, queries=None, **options):
    path = tmp_path / "template.lrnn"
    path.write_text(str(template))
    args = [str(CLI), "train", str(path), "--examples", str(examples), "--json"]
    if queries is not None:
        args += ["--queries", str(queries)]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def cli_outputs(result):
    return np.array([o["output"] for o in result["outputs"]], dtype=float)


@needs_cli
def test_xor_in_python_trains_to_the_cli_numbers(tmp_path):
    cli = cli_train(tmp_path, xor_template(), DATA / "xor" / "naive" / "trainExamples.txt", epochs=400, seed=3, lr=0.1)
    model = xor_template().build(Settings(optimizer=Adam(lr=0.1), epochs=400, seed=3))
    history = model.train(xor_dataset(), progress=False)
    assert len(history.epochs) == 400 and len(history) == 4  # 4 (target, output, error)
    outputs = model(xor_dataset())
    assert outputs.shape == (4,)
    assert np.array_equal(outputs, cli_outputs(cli))  # identical, not just close
    evaluation = model.test(xor_dataset())
    assert evaluation.loss == cli["loss"] and evaluation.accuracy == cli["accuracy"]
    # and it has learned XOR
    assert history.train_losses[-1] < history.train_losses[0]
    assert np.array_equal(np.round(outputs), [0, 1, 1, 0])


@needs_cli
def test_xor_vectorized_from_files(tmp_path):
    examples = DATA / "xor" / "vectorized" / "trainExamples.txt"
    cli = cli_train(tmp_path, xor_vectorized_template(), examples, epochs=200, seed=5, lr=0.05, optimizer="sgd")
    model = xor_vectorized_template().build(Settings(optimizer=SGD(lr=0.05), epochs=200, seed=5))
    model.train(FileDataset(examples_file=examples), progress=False)
    assert np.array_equal(model(FileDataset(examples_file=examples)), cli_outputs(cli))


@needs_cli
def test_family_trains_to_the_cli_numbers(tmp_path):
    files = dict(examples=DATA / "family" / "examples.txt", queries=DATA / "family" / "queries.txt")
    cli = cli_train(tmp_path, family_template(), files["examples"], files["queries"], epochs=150, seed=2, lr=0.05)
    model = family_template().build(Settings(optimizer=Adam(lr=0.05), epochs=150, seed=2))
    dataset = FileDataset(examples_file=files["examples"], queries_file=files["queries"])
    model.train(dataset, progress=False)
    evaluation = model.test(dataset)
    assert evaluation.queries == ["foal(star)", "negFoal(star)"]
    assert np.array_equal(evaluation.outputs, cli_outputs(cli))
    assert evaluation.outputs[0] > 0.5 > evaluation.outputs[1]


@needs_cli
def test_trains_trains_to_the_cli_numbers(tmp_path):
    files = dict(examples=DATA / "trains" / "examples.txt", queries=DATA / "trains" / "queries.txt")
    cli = cli_train(tmp_path, trains_template(), files["examples"], files["queries"], epochs=60, seed=7, lr=0.02)
    model = trains_template().build(Settings(optimizer=Adam(lr=0.02), epochs=60, seed=7, error_function=MSE()))
    dataset = FileDataset(examples_file=files["examples"], queries_file=files["queries"])
    history = model.train(dataset, progress=False)
    assert np.array_equal(model(dataset), cli_outputs(cli))
    assert history.train_losses[-1] < history.train_losses[0]


def test_state_dict_save_and_load(tmp_path):
    model = xor_template().build(Settings(optimizer=Adam(lr=0.1), seed=11))
    model.train(xor_dataset(), 50, progress=False)
    before = model(xor_dataset())
    state = model.state_dict()
    assert set(state["weights"]) == set(model.parameters())
    # a freshly initialised model differs until it takes the trained weights
    other = xor_template().build(Settings(seed=12))
    assert not np.array_equal(other(xor_dataset()), before)
    other.load_state_dict(state)
    assert np.array_equal(other(xor_dataset()), before)
    # files: the whole model, or only its weights into a built model
    model.save(tmp_path / "xor.json")
    loaded = lrnn.Model.load(tmp_path / "xor.json")
    assert str(loaded) == str(model)
    assert np.array_equal(loaded(xor_dataset()), before)
    third = xor_template().build(Settings(seed=13))
    third.load(tmp_path / "xor.json")
    assert np.array_equal(third(xor_dataset()), before)
    with pytest.raises(KeyError):
        other.load_state_dict({"weights": {"nope": np.zeros(1)}})
    with pytest.raises(lrnn.LrnnError):
        other.load_state_dict({"weights": {next(iter(state["weights"])): np.zeros(17)}})


def test_numpy_round_trip():
    """Facts from arrays in, outputs out as one array; the engine's linear layer is the
    matrix product NumPy computes."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=(6, 3))
    template = Template()
    template += R.h(V.X)["w":2, 3] <= R.feat(V.X)
    model = template.build(Settings(seed=4))
    dataset = Dataset()
    dataset.add([R.h(V.X)], [R.feat(i)[row] for i, row in enumerate(features)])
    evaluation = model.test(dataset)
    outputs = evaluation.outputs
    assert outputs.shape == (6, 2)
    order = [int(q[len("h("):-1]) for q in evaluation.queries]  # h(X) matched every h(i)
    assert sorted(order) == list(range(6))
    w = model.parameters()["$w"]
    assert w.shape == (2, 3)
    np.testing.assert_allclose(outputs, features[order] @ w.T, rtol=1e-12, atol=1e-12)
    # the ground network exposes every neuron's value as arrays
    net = model.ground_network(dataset)
    np.testing.assert_allclose(np.stack([net.value(R.h(i)) for i in order]), outputs)
    np.testing.assert_array_equal(np.stack([net.value(R.feat(i)) for i in range(6)]), features)


def test_ground_network_gradients():
    model = xor_template().build(Settings(seed=3))
    dataset = Dataset().add(R.xor[1], [R.a[0], R.b[1]])
    net = model.ground_network(dataset)
    assert set(net.atoms) >= {"xor", "hidden", "a", "b"}
    out = float(net.value("xor"))
    # MSE against target 1: dL/dy = 2 (y - 1)
    assert float(net.gradient("xor")) == pytest.approx(2 * (out - 1))
    assert net.loss == pytest.approx((out - 1) ** 2)
    assert net.value("hidden").shape == (3,)


def test_query_on_a_built_model_and_errors():
    model = family_template().build()
    facts = [R.parent(C.star, C.aida), R.horse(C.aida)]
    assert model.query(R.foal(V.X), facts) == [{"X": "star"}]
    with pytest.raises(ValueError):
        model += R.x <= R.y  # a built model is fixed
    bad = Template()
    bad += (R.h(V.X) <= R.a(V.X)[2, 3]) | [F.relu]
    model = bad.build()
    with pytest.raises(lrnn.LrnnError) as info:
        model(Dataset().add(R.h(1)[0], [R.a(1)[[1.0, 2.0]]]))
    assert info.value.kind == "shape"


def test_progress_bar_and_callback(capsys):
    model = xor_template().build(Settings(optimizer=Adam(lr=0.1), seed=3))
    seen = []

    def callback(report):
        seen.append(report["train"]["loss"])
        return len(seen) < 5  # stop after five epochs

    history = model.train(xor_dataset(), 100, callback=callback)
    assert len(seen) == 5 and len(history.epochs) == 5
    assert history.train_losses == seen


def test_pyneuralogic_evaluator():
    from lrnn.nn import get_evaluator

    evaluator = get_evaluator(xor_template(), Settings(optimizer=Adam(lr=0.1), epochs=20, seed=3))
    results = list(evaluator.train(xor_dataset()))
    assert len(results) == 20 and all(count == 4 for _, count in results)
    assert results[-1][0] < results[0][0]
    outputs = evaluator.test(xor_dataset(), generator=False)
    assert outputs.shape == (4,)
