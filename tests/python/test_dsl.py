"""The builder DSL prints every construct in lrnn's text format (docs/language.md)."""

import numpy as np
import pytest

from lrnn import (
    C,
    Aggregation,
    Combination,
    Dataset,
    F,
    Metadata,
    R,
    Template,
    Transformation,
    V,
    W,
)


def lit(x):
    return x.to_str()


# ---- terms and atoms ------------------------------------------------------------------------
def test_terms():
    assert str(R.p(V.X, C.a)) == "p(X, a)."
    assert str(R.p) == "p."
    assert str(R.p()) == "p."
    assert str(R.p(1, 2.5, -3, "Y", "abc")) == "p(1, 2.5, -3, Y, abc)."
    assert str(R.p(C.get("New York"), C.get("it's"))) == "p('New York', 'it\\'s')."
    assert str(R.p(V.x, C.Aida)) == "p(X, aida)."
    assert str(R.p(V.Y("woman"), C.ann("person"))) == "p(woman:Y, person:ann)."
    assert str(R.p(V.X[1:4])) == "p(X1, X2, X3)."
    assert str(R.p([V.X, V.Y])) == "p(X, Y)."


def test_prefixes():
    assert lit(R.special.leq(V.J, V.I)) == "@leq(J, I)"
    assert lit(R.special._in(V.X, 1, 2)) == "@in(X, 1, 2)"
    assert lit(R.special.sub(V.I, V.J, V.D)) == "@sub(I, J, D)"
    assert lit(R.hidden.edge(V.X, V.Y)) == "*edge(X, Y)"
    assert lit(R._edge(V.X)) == "*edge(X)"
    assert lit(~R.a(V.X)) == "!a(X)"  # PyNeuraLogic's ~ is negation as failure
    assert lit(-R.a(V.X)) == "~a(X)"
    assert lit(R.a(V.X).negation()) == "!a(X)"
    assert lit(R.k(V.J).T) == "k(J)^T"
    assert lit(F.transp(R.k(V.J))) == "k(J)^T"
    assert lit(F.reverse(R.a)) == "~a"


def test_weights():
    assert lit(R.p(V.X)[3, 3]) == "{3, 3} p(X)"
    assert lit(R.p(V.X)[3,]) == "{3} p(X)"
    assert lit(R.p[0.5]) == "0.5 p"
    assert lit(R.p[2]) == "2 p"
    assert lit(R.p[[1, 2]]) == "[1, 2] p"
    assert lit(R.p[[[1, 2], [3, 4.5]]]) == "[[1, 2], [3, 4.5]] p"
    assert lit(R.p(V.X)["w":3, 3]) == "$w={3, 3} p(X)"
    assert lit(R.p["w":0.5]) == "$w=0.5 p"
    assert lit(R.p["w"]) == "$w p"
    assert lit(R.p[0.5].fixed()) == "<0.5> p"
    assert lit(R.p(V.X)["w":3, 3].fixed()) == "$w=<{3, 3}> p(X)"
    assert lit(R.p["w"].fixed()) == "<$w> p"
    assert lit(R.p[1e-7]) == "1e-07 p"
    assert lit(R.p[0.1]) == "0.1 p"


def test_numpy_values():
    # a float array prints its whole numbers as floats (PyNeuraLogic prints array.tolist())
    assert lit(R.emb(C.a)[np.array([1.5, 2.0, -0.25])]) == "[1.5, 2.0, -0.25] emb(a)"
    assert lit(R.emb(C.a)[np.eye(2)].fixed()) == "<[[1.0, 0.0], [0.0, 1.0]]> emb(a)"
    assert lit(R.emb(C.a)[np.eye(2, dtype=int)].fixed()) == "<[[1, 0], [0, 1]]> emb(a)"
    assert lit(R.emb(C.a)[np.float32(0.5)]) == "0.5 emb(a)"
    assert lit(R.emb(C.a)[np.array(3.0)]) == "3.0 emb(a)"
    # float64 values print as the shortest text that reads back exactly
    x = np.random.default_rng(0).normal(size=5)
    text = lit(R.emb(C.a)[x])
    back = np.array([float(v) for v in text[1 : text.index("]")].split(",")])
    assert np.array_equal(back, x)


def test_weight_errors():
    with pytest.raises(ValueError):
        R.p[np.zeros((2, 2, 2))]
    with pytest.raises(ValueError):
        R.p[np.array([1.0, np.nan])]
    with pytest.raises(ValueError):
        R.p[0, 3]  # dims are positive
    with pytest.raises(TypeError):
        R.p[1][2]  # weighted twice
    with pytest.raises(TypeError):
        R.p[1](V.X)  # terms after weight
    with pytest.raises(ValueError):
        R.special.leq(V.X, V.Y)[1]
    with pytest.raises(TypeError):
        R.p[1].T


# ---- rules ----------------------------------------------------------------------------------
def test_rules():
    assert str(R.h(V.X) <= (R.a(V.X), R.b(V.Y))) == "h(X) :- a(X), b(Y)."
    assert str(R.h(V.X) <= R.a(V.X) & R.b(V.X)) == "h(X) :- a(X), b(X)."
    assert str(R.h(V.X) <= [R.a(V.X)]) == "h(X) :- a(X)."
    assert str(R.h <= R.a) == "h :- a."
    assert str(R.h(V.X)[2, 3] <= R.a(V.X)[3, 4]) == "{2, 3} h(X) :- {3, 4} a(X)."
    assert str((R.h <= R.a) & R.b) == "h :- a, b."


def test_offsets():
    assert str(R.h(V.X) <= (R.a(V.X)[2, 2], W[2,])) == "h(X) :- {2, 2} a(X), {2}."
    assert str(R.h(V.X) <= (R.a(V.X), 0.5)) == "h(X) :- a(X), 0.5."
    assert str(R.h(V.X) <= (R.a(V.X), W["b":[1, 2]])) == "h(X) :- a(X), $b=[1, 2]."
    with pytest.raises(ValueError):
        R.h <= (R.a, 0.5, 0.25)


def test_metadata():
    rule = R.h(V.X)[3, 3] <= (R.a(V.X)[3, 2], R.b(V.X))
    assert str(rule | [F.relu, Aggregation.SUM]) == "{3, 3} h(X) :- {3, 2} a(X), b(X). [transformation=relu, aggregation=sum]"
    assert str((R.h <= R.a) | Metadata(transformation=F.tanh, learnable=False)) == "h :- a. [transformation=tanh, learnable=false]"
    assert str((R.h <= R.a) | Metadata(activation=F.sigmoid, combination=F.avg, aggregation=F.max_agg)) == (
        "h :- a. [transformation=sigmoid, combination=avg, aggregation=max]"
    )
    assert str(R.h <= R.a | [F.relu]) == "h :- a. [transformation=relu]"
    assert str(R.h <= (R.a & R.b) | [F.relu]) == "h :- a, b. [transformation=relu]"
    # the metadata list order does not matter
    assert str((R.h <= R.a) | [Aggregation.MAX, Transformation.SIGMOID]) == "h :- a. [transformation=sigmoid, aggregation=max]"
    with pytest.raises(ValueError):
        (R.h <= R.a) | [F.relu, F.sigmoid]
    with pytest.raises(TypeError):
        (R.h <= R.a) | ["relu"]


def test_predicate_metadata():
    assert str(R.p / 2) == "p/2"
    assert str((R.p / 2) | [Transformation.SIGMOID]) == "p/2 [transformation=sigmoid]"
    assert str((R.p / 1) | [F.tanh, F.avg]) == "p/1 [transformation=tanh, combination=avg]"
    assert str((R.p / 1)[3, 1]) == "p/1 {3, 1}"
    assert str(((R.p / 1)[3, 1]) | [F.relu]) == "p/1 {3, 1} [transformation=relu]"
    with pytest.raises(ValueError):
        (R.p / 1) | [Aggregation.SUM]


def test_every_function_of_the_language():
    activations = {
        Transformation.IDENTITY: "identity", Transformation.SIGMOID: "sigmoid", Transformation.TANH: "tanh",
        Transformation.RELU: "relu", Transformation.LEAKY_RELU: "leaky_relu", Transformation.EXP: "exp",
        Transformation.LOG: "log", Transformation.SQRT: "sqrt", Transformation.INVERSE: "inverse",
        Transformation.REVERSE: "reverse", Transformation.SIGNUM: "signum",
        Transformation.LUKASIEWICZ: "lukasiewicz", Transformation.SOFTMAX: "softmax",
        Transformation.SPARSEMAX: "sparsemax", Transformation.NORM: "norm", Transformation.TRANSP: "transpose",
        Transformation.SLICE(rows=(0, 2), cols=(1, 3)): "slice(rows=(0,2), cols=(1,3))",
        Transformation.SLICE(rows=(1, 2)): "slice(rows=(1,2))",
        Transformation.RESHAPE(shape=(2, 3)): "reshape(2, 3)",
        F.reshape(4, 1): "reshape(4, 1)",
    }
    combinations = {
        Combination.SUM: "sum", Combination.AVG: "avg", Combination.MAX: "max", Combination.MIN: "min",
        Combination.COUNT: "count", Combination.PRODUCT: "product", Combination.ELPRODUCT: "elproduct",
        Combination.CONCAT: "concat", Combination.CROSSSUM: "crosssum", Combination.COSSIM: "cossim",
        Combination.SOFTMAX: "softmax",
    }
    aggregations = {
        Aggregation.SUM: "sum", Aggregation.AVG: "avg", Aggregation.MAX: "max", Aggregation.MIN: "min",
        Aggregation.COUNT: "count", Aggregation.CONCAT: "concat", Aggregation.SOFTMAX: "softmax",
        Aggregation.SOFTMAX(agg_terms=["J"]): "softmax(J)",
        F.softmax_agg(agg_terms=[V.J]): "softmax(J)",
        F.softmax_agg(agg_terms=[V.J, "K"]): "softmax(J, K)",
    }
    for key, table in (("transformation", activations), ("combination", combinations), ("aggregation", aggregations)):
        for function, text in table.items():
            assert str((R.h <= R.a) | [function]) == f"h :- a. [{key}={text}]"
    # F's flat names are the same functions
    assert F.relu is Transformation.RELU and F.product is Combination.PRODUCT and F.sum_agg is Aggregation.SUM
    assert F.crossum is Combination.CROSSSUM and F.softmax_comb is Combination.SOFTMAX


def test_attention_rule():
    rule = (R.attention_weights(V.I, V.J) <= (R.d_k, R.k(V.J).T, R.q(V.I))) | [
        F.product,
        F.softmax_agg(agg_terms=[V.J]),
    ]
    assert str(rule) == "attention_weights(I, J) :- d_k, k(J)^T, q(I). [combination=product, aggregation=softmax(J)]"
    masked = (R.w(V.I, V.J) <= (R.k(V.J).T, R.q(V.I), R.special.leq(V.J, V.I))) | [F.product]
    assert str(masked) == "w(I, J) :- k(J)^T, q(I), @leq(J, I). [combination=product]"


def test_a_function_on_a_body_literal_is_attached_to_it():
    # PyNeuraLogic's function literal; the template lowers it (tests/python/test_pnl_language.py)
    assert lit(F.sigmoid(R.a(V.X))) == "sigmoid(a(X))"


def test_template():
    template = Template()
    template += R.h(V.X) <= R.a(V.X)
    template += [R.a(C.b)[0.3], (R.h / 1) | [F.sigmoid]]
    template.add_rule(R.emb(C.c)[2,])
    assert len(template) == 4
    # the C++ printer's layout: declarations, facts, rules, one blank line between groups
    assert str(template) == "h/1 [transformation=sigmoid]\n\n0.3 a(b).\n{2} emb(c).\n\nh(X) :- a(X).\n"
    assert [str(e) for e in template][:2] == ["h(X) :- a(X).", "0.3 a(b)."]
    with pytest.raises(TypeError):
        template += R.h & R.a
    with pytest.raises(ValueError):
        template += R.special.eq(1, 1)


def test_dataset_text():
    dataset = Dataset()
    dataset.add(R.xor[1], [R.a[0], R.b[1]])
    dataset.add([R.xor[0], R.q(C.x)[0.5]], [R.a[1], R.b[1], R.edge(1, 2)])
    examples, queries = dataset.to_text()
    assert examples == "s0 :- 0 a, 1 b.\ns1 :- 1 a, 1 b, edge(1, 2).\n"
    assert queries == "s0 :- 1 xor.\ns1 :- 0 xor, 0.5 q(x).\n"
    # PyNeuraLogic's older style: one example serving every query, as in the text files
    old_style = Dataset()
    old_style.add_example([R.edge(1, 2), R.f(1)[0.5]])
    old_style.add_queries([R.predict(1)[1], R.predict(2)[0]])
    assert len(old_style) == 2 and [len(s.queries) for s in old_style] == [1, 1]
    assert old_style.to_text() == ("edge(1, 2), 0.5 f(1).\n", "1 predict(1).\n0 predict(2).\n")
    # an example may hold rules, as PyNeuraLogic's (PDDLDataset's action rules); lrnn's
    # engine grounds the template's rules only, so writing it for the engine refuses them
    with_rule = Dataset().add(R.q[1], [R.a, R.h <= R.a])
    with pytest.raises(ValueError, match=r"example holds the rule h :- a\..*template"):
        with_rule.to_text()


def test_tensor_dataset():
    from lrnn.dataset import Data, TensorDataset

    node_level = Data(x=[[0], [1], [-1]], edge_index=[[0, 1, 2], [1, 2, 0]], y=[1, 0, 1], y_mask=[0, 2])
    graph_level = Data(x=np.eye(2), edge_index=[[0], [1]], y=1.0, edge_attr=[0.5])
    examples, queries = TensorDataset([node_level, graph_level]).to_text()
    # PyNeuraLogic's logic form: fixed fact values, every edge valued (1 without edge_attr),
    # and one sample per queried node.
    node_facts = "<1> edge(0, 1), <1> edge(1, 2), <1> edge(2, 0), <0> node_feature(0), <1> node_feature(1), <-1> node_feature(2).\n"
    assert examples == (
        "s0 :- " + node_facts + "s1 :- " + node_facts +
        "s2 :- <0.5> edge(0, 1), <[1.0, 0.0]> node_feature(0), <[0.0, 1.0]> node_feature(1).\n"
    )
    # values print as given (np.eye is floats), a one-entry label as a float: PyNeuraLogic's float(y)
    assert queries == "s0 :- 1.0 predict(0).\ns1 :- 1.0 predict(2).\ns2 :- 1.0 predict.\n"
    one_hot = TensorDataset([Data(x=[[1]], edge_index=[[], []], y=2)], number_of_classes=3, one_hot_encode_labels=True)
    assert one_hot.to_text()[1] == "s0 :- [0.0, 0.0, 1.0] predict.\n"
