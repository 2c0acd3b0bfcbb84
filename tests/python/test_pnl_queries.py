"""PyNeuraLogic's weighted queries (`R.name[0.25] <= R.out(x)[1.0]`: the importance scales
the query's loss and gradient) and one-entry vector outputs (a target written as a list
gives a one-entry array back, a scalar target a float), on lrnn (issue 11)."""

import numpy as np
import pytest

import lrnn
from lrnn import R, Settings, V
from lrnn.dataset import Dataset, FileDataset, Sample
from lrnn.nn.loss import MSE
from lrnn.nn.optim import SGD

EXAMPLE = [R.f("x")[[0.5, -1.0]], R.f("y")[[2.0, 0.25]]]


def model_for(seed=3):
    model = lrnn.Model()
    model += (R.hid(V.X) <= R.f(V.X)[2, 2]) | [lrnn.Transformation.TANH]
    model += (R.out(V.X) <= R.hid(V.X)[1, 2]) | [lrnn.Transformation.SIGMOID]
    model += R.out / 1 | [lrnn.Transformation.IDENTITY]
    return model.build(Settings(optimizer=SGD(lr=1.0), error_function=MSE(), seed=seed))


def one_step(query):
    """How far every weight moves in one SGD step (lr 1) on a one-sample dataset."""
    model = model_for()
    before = {k: np.array(v) for k, v in model.parameters().items()}
    model.train(model.build_dataset(Dataset([Sample(query, EXAMPLE)])), epochs=1)
    after = model.parameters()
    return np.concatenate([np.ravel(after[k] - before[k]) for k in sorted(before)])


def test_weighted_query_steps_by_importance_times_the_unweighted_step():
    plain = one_step(R.out("x")[1.0])
    weighted = one_step(R.query_importance[0.25] <= R.out("x")[1.0])
    assert np.abs(plain).max() > 1e-3
    np.testing.assert_allclose(weighted, 0.25 * plain, rtol=0, atol=1e-15)


def test_weighted_query_loss_is_scaled_and_errors_stay_per_query():
    model = model_for()
    plain = model.loss(Dataset([Sample(R.out("x")[1.0], EXAMPLE)]))
    weighted = model.loss(Dataset([Sample(R.q[0.4] <= R.out("x")[1.0], EXAMPLE)]))
    assert plain > 1e-3
    assert weighted == pytest.approx(0.4 * plain, rel=1e-14)


def test_importance_is_read_from_the_built_sample():
    model = model_for()
    built = model.build_dataset(Dataset([
        Sample(R.query_importance[0.25] <= R.out("x")[1.0], EXAMPLE),
        Sample(R.query_importance[0.75] <= R.out("y")[0.0], EXAMPLE),
        Sample(R.out("y")[0.0], EXAMPLE),
    ]))
    assert [s.importance for s in built] == [0.25, 0.75, 1.0]
    # PyNeuraLogic's tests read it through its Java sample; the same number here
    assert built[1]._java_sample.getImportance() == 0.75


def test_weighted_query_prints_and_reads_back(tmp_path):
    dataset = Dataset([Sample(R.query_importance[0.25] <= R.out("x")[1.0], EXAMPLE)])
    assert str(dataset[0]) == "0.25 query_importance :- 1.0 out(x)."
    examples, queries = dataset.to_text()
    assert queries == "0.25 s0 :- 1.0 out(x).\n"
    (tmp_path / "e.txt").write_text(examples)
    (tmp_path / "q.txt").write_text(queries)
    model = model_for()
    from_files = model.build_dataset(FileDataset(str(tmp_path / "e.txt"), str(tmp_path / "q.txt")))
    assert from_files[0].importance == 0.25
    assert model.loss(from_files) == pytest.approx(model.loss(dataset), rel=1e-15)


def test_weighted_queries_added_to_one_example():
    dataset = Dataset()
    dataset.add_example(EXAMPLE)
    dataset.add_queries([R.a[0.5] <= R.out("x")[1.0], R.out("y")[0.0]])
    built = model_for().build_dataset(dataset)
    assert [s.importance for s in built] == [0.5, 1.0]


@pytest.mark.parametrize("query, message", [
    (R.q[[1.0, 2.0]] <= R.out("x")[1.0], "one number"),
    (R.q[-0.5] <= R.out("x")[1.0], ">= 0"),
    (R.q(V.X)[0.5] <= R.out("x")[1.0], "importance"),
])
def test_importance_that_is_not_one_number_is_refused(query, message):
    with pytest.raises(ValueError, match=message):
        Sample(query, EXAMPLE)


def test_listed_target_gives_a_one_entry_vector_and_scalar_a_float():
    model = lrnn.Model()
    model += R.h(V.T) <= (R.f(V.T)[1, 1], R.g(V.T)[1, 1])
    model += R.h / 1 | [lrnn.Transformation.IDENTITY]
    model = model.build(Settings(optimizer=SGD(lr=0.0), seed=1))
    as_vector = Dataset([Sample(R.h(1)[[[1.0]]], [R.f(1)[[1.0]], R.g(1)[[2.0]]])])
    as_scalar = Dataset([Sample(R.h(1)[1.0], [R.f(1)[1.0], R.g(1)[2.0]])])
    vector_out = model.train(model.build_dataset(as_vector), epochs=1)[0][1]
    scalar_out = model.train(model.build_dataset(as_scalar), epochs=1)[0][1]
    assert isinstance(vector_out, np.ndarray) and vector_out.shape == (1,)
    assert isinstance(scalar_out, float)
    assert [float(x) for x in vector_out] == [scalar_out]
    target, output, _ = model.validate(as_vector)[0]
    assert output.shape == (1,) and np.asarray(target).shape == (1,)
    assert isinstance(model.validate(as_scalar)[0][1], float)
    built = model.build_dataset(as_vector)
    assert model.test(built[0]).shape == (1,)
