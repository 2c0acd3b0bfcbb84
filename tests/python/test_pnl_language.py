"""PyNeuraLogic's language surface on lrnn (issue 11): functions in rule bodies, `~` as
negation as failure, hidden specials and facts, spliced term lists, relation attributes,
query answers as strings, derivable queries, outputs with their shape.

Expected values are computed here with NumPy from the inputs, never read back from lrnn."""

import numpy as np
import pytest

from lrnn import C, F, R, Settings, Template, V
from lrnn.core import Combination, Transformation, WeightedRelation
from lrnn.dataset import Dataset, Sample
from lrnn.model import Model

RNG = np.random.default_rng(11)


def run(model, sample):
    model.build(Settings())
    return model.test(Dataset([sample])).outputs[0]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize(
    "function, reference",
    [
        (F.sigmoid, sigmoid),
        (F.tanh, np.tanh),
        (F.relu, lambda x: np.maximum(x, 0.0)),
        (F.exp, np.exp),
        (F.signum, lambda x: (x > 0).astype(float)),
    ],
)
def test_a_function_on_a_body_literal_applies_to_its_matrix_value(function, reference):
    data = RNG.uniform(-1, 1, size=(2, 3))
    model = Model()
    model += R.h <= function(R.input)
    out = run(model, Sample(R.h, [R.input[data.tolist()]]))
    assert out.shape == (2, 3)  # a matrix comes back as a matrix
    np.testing.assert_allclose(out, reference(data), rtol=0, atol=1e-12)


def test_slice_in_a_body_takes_the_rows_asked_for():
    data = np.arange(1.0, 17.0).reshape(4, 4)
    model = Model()
    model += R.h <= F.slice(R.input, rows=(1, 3))
    out = run(model, Sample(R.h, [R.input[data]]))
    np.testing.assert_array_equal(out, data[1:3])


def test_sum_product_and_nesting_of_body_functions():
    a, b = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    facts = [R.a[a.tolist()], R.b[b.tolist()]]
    for body, expected in [
        (R.a + R.b, a + b),
        (R.a * R.b, a * b),
        (F.tanh(R.a + R.b), np.tanh(a + b)),
        (F.sigmoid(R.a) * F.tanh(R.b) + R.a, sigmoid(a) * np.tanh(b) + a),
    ]:
        model = Model()
        model += R.h <= body
        np.testing.assert_allclose(run(model, Sample(R.h, facts)), expected, rtol=0, atol=1e-12)


def test_matrix_product_container():
    m, x = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, 3)
    model = Model()
    model += R.h <= R.m @ R.x
    out = run(model, Sample(R.h, [R.m[m.tolist()], R.x[x.tolist()]]))
    np.testing.assert_allclose(out, m @ x, rtol=0, atol=1e-12)


def test_body_functions_keep_their_variables_and_a_weight_outside_them():
    model = Model()
    model += R.h(V.X) <= F.relu(R.f(V.X))[2.0].fixed()
    model += R.h / 1 | [Transformation.IDENTITY]
    facts = [R.f(C.a)[-0.5], R.f(C.b)[0.75]]
    model.build(Settings())
    out = model.test(Dataset([Sample(R.h(C.a), facts), Sample(R.h(C.b), facts)])).outputs
    np.testing.assert_allclose(out, [0.0, 1.5], rtol=0, atol=1e-12)


def test_body_functions_print_as_pyneuralogic_and_lower_to_rules_of_their_own():
    rule = R.h(V.X) <= (F.tanh(R.a(V.X, V.Y)), R.b(V.X) + R.c)
    assert str(rule) == "h(X) :- tanh(a(X, Y)), b(X) + c."
    template = Template()
    template += rule
    assert str(template) == (
        "lrnn_fn1(X, Y) :- a(X, Y). [activation=tanh]\n"
        "lrnn_fn2(X) :- b(X), c. [combination=sum]\n"
        "h(X) :- lrnn_fn1(X, Y), lrnn_fn2(X).\n"
    )


def test_helper_names_skip_names_the_template_uses():
    template = Template()
    template += R.lrnn_fn1 <= R.z
    template += R.h <= F.tanh(R.a)
    assert "lrnn_fn2 :- a. [activation=tanh]" in str(template)


def test_functions_refuse_what_has_no_value():
    with pytest.raises(ValueError, match="needs a literal with a value"):
        F.tanh(R.special.leq(V.X, V.Y))
    with pytest.raises(TypeError, match="before weighting"):
        F.tanh(R.a[1.0])
    with pytest.raises(ValueError, match="cannot be negated as failure"):
        ~F.tanh(R.a)


def test_tilde_is_negation_as_failure():
    template = Template()
    template += R.lonely(V.X) <= (R.person(V.X), ~R.friend(V.X))
    assert str(template).strip() == "lonely(X) :- person(X), !friend(X)."
    facts = [R.person(C.ann), R.person(C.bob), R.friend(C.bob)]
    assert template.query(R.lonely(V.X), facts) == [{"X": "ann"}]
    assert (-R.a).atom_str() == "~a" and (-R.a).function is Transformation.REVERSE


def test_hidden_specials_hidden_facts_and_spliced_term_lists():
    hidden_special = R.special._alldiff
    assert (hidden_special.special, hidden_special.hidden, hidden_special.name) == (True, True, "alldiff")
    assert str(R.head(V.get("abc", "type")[1:6:2], V.X)) == "head(type:Abc1, type:Abc3, type:Abc5, X)."
    template = Template()
    template += R._edge(1, 2)  # a hidden template fact: logic only
    template += R.p(V.X) <= R.hidden.edge(V.X, V.Y)
    assert template.query(R.p(V.X)) == [{"X": "1"}]


def test_relation_attributes():
    weighted = R.my_atom["abc":1, 2]
    assert isinstance(weighted, WeightedRelation) and not isinstance(R.my_atom, WeightedRelation)
    assert weighted.weight == (1, 2) and weighted.weight_name == "abc" and not weighted.is_fixed
    assert weighted.fixed().is_fixed
    assert R.p[[1.0, 2.0]].weight == [1.0, 2.0]
    assert len(R.my_atom.terms) == 0 and len(R.my_atom("a", "b").terms) == 2
    assert R.k.T.function is Transformation.TRANSP
    assert F.sigmoid(R.k).function is Transformation.SIGMOID
    assert str(Combination.MAX) == "max"


def test_query_answers_are_strings_and_numbers_compare_as_numbers():
    template = Template()
    template += R.head(V.X, V.Y) <= (R.special.lt(V.X, V.Y), R.val(V.X), R.val(V.Y))
    answers = template.query(R.head(V.X, V.Y), [R.val(1), R.val(-1), R.val(10)])
    assert sorted((a["X"], a["Y"]) for a in answers) == [("-1", "1"), ("-1", "10"), ("1", "10")]


def test_derivable_queries():
    template = Template()
    template += R.h(V.X) <= R.edge(V.Y, V.X)
    template += R.q <= R.h(V.X)
    template += R.edge(1, 2)
    template += R.h / 1 | [F.tanh]
    got = sorted(str(a) for a in template.derivable_queries())
    assert got == ["edge(1, 2).", "h(2).", "q."]
    got = sorted(str(a) for a in template.derivable_queries([R.edge(2, 3)]))
    assert got == ["edge(1, 2).", "edge(2, 3).", "h(2).", "h(3).", "q."]


def test_a_declaration_of_p_1_does_not_forbid_p_2():
    model = Model()
    model += R.shape / 1 | [F.sigmoid]
    model += R.shape(V.X) <= R.a(V.X)
    model += R.shape(V.X, V.Y) <= (R.a(V.X), R.a(V.Y))
    model.build(Settings())
    facts = [R.a(C.x)[2.0]]
    out = model.test(Dataset([Sample(R.shape(C.x), facts), Sample(R.shape(C.x, C.x), facts)])).outputs
    np.testing.assert_allclose(out, [sigmoid(2.0), 4.0], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "predicate, expected",
    [
        (R.special.add_eval, 5.0),
        (R.special.sub_eval, 1.0),
        (R.special.mul_eval, 6.0),
        (R.special.div_eval, 1.5),
        (R.special.mod_eval, 1.0),
        (R.special.max_eval, 3.0),
        (R.special.min_eval, 2.0),
    ],
)
def test_eval_builtins_are_inputs_with_their_value(predicate, expected):
    # X is bound only by the builtin: it ranges over the example's constants
    model = Model()
    model += R.head(V.X) <= predicate(V.X, 2)
    assert run(model, Sample(R.head(3), [R.val(3)])) == expected


def test_an_eval_builtin_adds_its_value_to_the_other_inputs():
    # values recorded from PyNeuraLogic 0.9.2 on the same rules
    model = Model()
    model += R.head(V.X) <= (R.val(V.X), R.special.add_eval(V.X, 2))
    assert run(model, Sample(R.head(3), [R.val(3)[0.5]])) == 5.5
    model = Model()
    model += R.head <= (R.val(V.X), R.special.mul_eval(V.X, V.X))
    assert run(model, Sample(R.head, [R.val(3)[0.5], R.val(2)])) == 7.25  # avg of 0.5 + 9 and 1 + 4


def test_leaky_relu_with_its_own_slope():
    assert str(F.leaky_relu(alpha=0.2)) == "leaky_relu(0.2)" and str(F.leaky_relu) == "leaky_relu"
    x = np.array([-2.0, 0.5, -0.25])
    for rule in [(R.h <= R.a) | [F.leaky_relu(alpha=0.2)], R.h <= F.leaky_relu(R.a, alpha=0.2)]:
        model = Model()
        model += rule
        np.testing.assert_allclose(run(model, Sample(R.h, [R.a[x.tolist()]])), np.where(x > 0, x, 0.2 * x), atol=1e-15)
    with pytest.raises(ValueError, match="alpha"):
        F.leaky_relu(alpha="steep")
