"""What PyNeuraLogic's repository examples use, on lrnn (issue 11): `R.special.alldiff(...)`
over every variable of a rule, labelled examples written as rules, `model.ground(...)
.neuralize()`, `draw(show=False)`."""

import shutil

import numpy as np

import pytest

import lrnn
from lrnn import R, Settings, Template, V
from lrnn.dataset import Dataset
from lrnn.nn.optim import SGD


def test_alldiff_of_all_variables_keeps_only_distinct_groundings():
    rule = R.pair(V.X, V.Y) <= (R.e(V.X, V.Y), R.e(V.Y, V.Z), R.special.alldiff(...))
    assert str(rule) == "pair(X, Y) :- e(X, Y), e(Y, Z), @alldiff(X, Y, Z)."
    template = Template()
    template += rule
    facts = [R.e(1, 1), R.e(1, 2), R.e(2, 3), R.e(3, 1)]
    # X, Y, Z all different: (1,2,3), (2,3,1), (3,1,2); e(1,1) never qualifies
    assert template.query(R.pair(V.X, V.Y), facts) == [{"X": "1", "Y": "2"}, {"X": "2", "Y": "3"},
                                                         {"X": "3", "Y": "1"}]


def test_all_variables_elsewhere_is_refused():
    with pytest.raises(ValueError, match="alldiff"):
        R.h(V.X) <= (R.e(V.X, ...),)


def test_labelled_examples_given_as_rules():
    dataset = Dataset()
    dataset.add_examples([
        R.xor[0] <= R.xy[[0, 0]],
        R.xor[1] <= R.xy[[0, 1]],
        R.xor[1] <= R.xy[[1, 0]],
        R.xor[0] <= R.xy[[1, 1]],
    ])
    assert len(dataset) == 4
    model = lrnn.Model()
    model += R.xor <= R.xy["w":[[1.0, 2.0]]]
    model.build(Settings(optimizer=SGD(lr=0.0)))
    results = model.validate(dataset)
    assert [r[0] for r in results] == [0.0, 1.0, 1.0, 0.0]
    assert [r[1] for r in results] == [0.0, 2.0, 1.0, 3.0]  # w . xy
    with pytest.raises(ValueError, match="labelled example"):
        dataset.add_example((R.xor[0] <= R.xy[[0, 0]]) | [lrnn.Transformation.TANH])


def test_ground_then_neuralize_is_the_built_dataset():
    model = lrnn.Model()
    model += R.xor <= R.xy["w":[[1.0, 2.0]]]
    model.build(Settings())
    grounded = model.ground(Dataset().add_example([R.xy[[1.0, 1.0]]]).add_query(R.xor[1.0]))
    assert grounded.neuralize() is grounded
    assert len(grounded.neuralize()) == 1


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_model_draw_show_false_gives_png():
    model = lrnn.Model()
    model += R.xor <= R.xy[1, 2]
    model.build(Settings())
    assert model.draw(show=False)[:8] == b"\x89PNG\r\n\x1a\n"


def test_sample_query_is_kept_as_given():
    from lrnn.dataset import Sample

    atom = R.predict(2)[[1, 0]]
    single = Sample(atom, [R.f(2)])
    assert single.query is atom and single.query.weight == [1, 0]
    assert np.argmax(Sample(R.predict(2)[[0, 1]], []).query.weight) == 1  # NumPy reads the value
    several = Sample([R.a[1], R.b[0]], [R.f(2)])
    assert [str(q) for q in several.query] == ["1 a.", "0 b."]
    assert [q.to_str() for q in several.queries] == ["1 a", "0 b"]
