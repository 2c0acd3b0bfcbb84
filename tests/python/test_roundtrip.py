"""What the DSL prints is what the C++ printer prints for the same program: every rule,
fact, declaration and template parses with the C++ parser and prints back identically -
except that a whole number the user wrote as a float keeps its `.0` in the DSL (PyNeuraLogic
prints 1.0 as `1.0` and 1 as `1`), where the C++ printer writes `1`."""

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lrnn
from lrnn import C, Aggregation, Combination, Dataset, F, Metadata, R, Template, Transformation, V, W, _core

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets" / "neuralogic"
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))


def cpp_form(text):
    """`text` as the C++ printer writes it: whole floats without their `.0`."""
    return re.sub(r"(?<![\w.])(-?\d+)\.0(?![\d.])", r"\1", text)


def dsl_rules():
    return [
        R.h(V.X) <= (R.a(V.X), R.b(V.Y)),
        R.h(V.X) <= R.a(V.X) & R.b(V.X),
        R.h(V.X)[2, 3] <= R.a(V.X)[3, 4],
        (R.h(V.X)[3, 3] <= (R.a(V.X)[3, 2], R.b(V.X))) | [F.relu, Aggregation.SUM],
        (R.h <= R.a) | Metadata(transformation=F.tanh, learnable=False),
        (R.h <= R.a) | Metadata(activation=F.sigmoid, combination=F.avg, aggregation=F.max_agg),
        (R.aw(V.I, V.J) <= (R.d_k, R.k(V.J).T, R.q(V.I))) | [F.product, F.softmax_agg(agg_terms=[V.J])],
        (R.aw(V.I, V.J) <= (R.d_k, R.k(V.J).T, R.q(V.I))) | [F.product, Aggregation.SOFTMAX(agg_terms=["J", "K"])],
        (R.w(V.I, V.J) <= (R.k(V.J).T, R.q(V.I), R.special.sub(V.I, V.J, V.D), R.special.leq(V.D, 5))) | [F.product],
        R.w(V.I, V.J) <= (R.q(V.I), R.special.mod(V.D, 5, 0), R.hidden.edge(V.I, V.J), -R.m(V.J)),
        R.h(V.X) <= (R.a(V.X), R.b(V.X).negation(), R.special._in(V.X, 1, 2, C.get("New York"))),
        R.h(V.X) <= (R.a(V.X)[2, 2], W[2,]),
        R.h(V.X) <= (R.a(V.X)["w":2, 2].fixed(), W["b":[1, -2.5]]),
        R.h(V.X) <= (R.a(V.X)["w"], 0.125),
        (R.s(V.I) <= R.x(V.I)) | [F.slice(rows=(0, 2), cols=(1, 3))],
        (R.s(V.I) <= R.x(V.I)) | [F.reshape(shape=(2, 3))],
        (R.h(V.Y("woman")) <= R.a(V.Y, C.ann("person"))) | [Combination.CONCAT, Aggregation.CONCAT],
        R.h(V.X) <= (R.e[np.array([[0.5, 1e-7], [3.0, -4.25]])].fixed(), R.a(V.X)[[1, 2]]),
    ]


@pytest.mark.parametrize("rule", dsl_rules(), ids=lambda r: str(r)[:40])
def test_rule_round_trips_through_the_cpp_parser(rule):
    text = str(rule)
    parsed = _core.parse_rule(text)
    assert str(parsed) == cpp_form(text)


def test_facts_round_trip():
    for fact in [R.emb(C.a)[np.arange(4.0)], R.p(1, 2.5, C.get("x y"))[0.5].fixed(), R.q, R.t(C.a)[3, 1]]:
        text = str(fact)
        assert _core.print_literal(_core.parse_literal(text)) + "." == cpp_form(text)


def test_numbers_print_like_cpp_to_chars():
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            rng.normal(size=200),
            rng.normal(size=100) * 10.0 ** rng.integers(-30, 30, size=100),
            [1e-4, 1e-5, 1e16, 1e15, 123456789012345680000.0, 0.1, 1 / 3, 2.0**-20, 5e-324, 1e21],
            [1e6, 1234000.0, 0.00012, 0.0012, 0.001, 0.000123, 100.0, 12.5, -0.0015, 7.0, 2.0**60],
            rng.integers(-10**9, 10**9, size=50).astype(float),
            np.round(rng.normal(size=100), 3) * 10.0 ** rng.integers(-6, 8, size=100),
        ]
    )
    fact = R.v[values]
    text = str(fact)
    assert _core.print_literal(_core.parse_literal(text)) + "." == cpp_form(text)
    parsed = _core.parse_literal(text).weight.data
    assert np.array_equal(np.array(parsed), values)


def test_template_round_trips():
    template = Template()
    template += dsl_rules()
    template += [R.emb(C.a)[3,], R.emb(C.b)[[1, 2, 3]], (R.aw / 2) | [F.sigmoid], (R.s / 1)[3, 1]]
    text = str(template)
    assert _core.print_template(_core.parse_template(text)) == cpp_form(text)
    # the layout is the C++ printer's: declarations, facts, rules
    assert text.startswith("aw/2 [transformation=sigmoid]\ns/1 {3, 1}\n\n{3} emb(a).\n[1, 2, 3] emb(b).\n\nh(X) :- a(X), b(Y).\n")


def test_whole_floats_print_as_written_and_read_back_equal():
    # PyNeuraLogic prints what was written: 1.0 as `1.0`, 1 as `1`, an array's .tolist()
    assert str(R.p[1.0]) == "1.0 p."
    assert str(R.p[1]) == "1 p."
    assert str(R.p[[1, 2.0, 0.5]].fixed()) == "<[1, 2.0, 0.5]> p."
    assert str(R.p[np.array([[1.0, 0.0]])]) == "[[1.0, 0.0]] p."
    assert str(R.p[np.array([1, 0])]) == "[1, 0] p."
    assert str(R.p[-3.0]) == "-3.0 p."
    assert str(R.p[1e20]) == "1e+20 p."  # not a plain integer text: as the C++ printer writes it
    for fact in (R.p[[1, 2.0, -3.0]], R.p[np.eye(2)]):
        text = str(fact)
        assert np.array_equal(np.array(_core.parse_literal(text).weight.data), fact.weight.to_numpy().reshape(-1))


def test_template_from_string_and_file(tmp_path):
    source = "% a comment\nh(X) <= a(X).\n0.5 a(b).\nh/1 [transformation=sigmoid]\n"
    template = Template.from_string(source)
    assert str(template) == "h/1 [transformation=sigmoid]\n\n0.5 a(b).\n\nh(X) :- a(X).\n"
    template += R.g(V.X) <= R.h(V.X)
    assert str(template) == "h/1 [transformation=sigmoid]\n\n0.5 a(b).\n\nh(X) :- a(X).\ng(X) :- h(X).\n"
    (tmp_path / "lib.lrnn").write_text("{2} emb(a).\n")
    (tmp_path / "main.lrnn").write_text("import ./lib.lrnn\nh(X) :- {1, 2} emb(X).\n")
    loaded = Template.from_file(tmp_path / "main.lrnn")
    assert str(loaded) == "{2} emb(a).\n\nh(X) :- {1, 2} emb(X).\n"


def test_dataset_text_parses():
    dataset = Dataset()
    dataset.add(R.xor[1], [R.a[0], R.b[1]])
    dataset.add([R.xor[0], R.q(C.x)[0.5]], [R.a[1], R.b[1], R.edge(1, 2), R.f(2)[np.array([0.5, 1.5])]])
    examples, queries = dataset.to_text()
    assert "\n".join(str(e) for e in _core.parse_examples(examples)) + "\n" == examples
    assert "\n".join(str(q) for q in _core.parse_queries(queries)) + "\n" == queries


@pytest.mark.parametrize(
    "path",
    sorted(str(p) for p in DATASETS.rglob("*.txt")) if DATASETS.exists() else [],
)
def test_dataset_files_parse(path):
    if "queries" in os.path.basename(path):
        lines = _core.load_queries(path)
    else:
        lines = _core.load_examples(path)
    assert len(lines) > 0


# ---- errors -------------------------------------------------------------------------------
BAD_TEMPLATES = [
    "h(X) :- a(X)\ng(X) :- b(X).\n",  # missing '.'
    "h(X) :- [1, 2 a(X).\n",
    "h(X) :- a(X). [activation=]\n",
    "import ./does_not_exist.lrnn\n",
]


@pytest.mark.parametrize("text", BAD_TEMPLATES)
def test_parse_errors_are_lrnn_errors_with_the_cli_message(tmp_path, text):
    path = tmp_path / "bad.lrnn"
    path.write_text(text)
    with pytest.raises(lrnn.LrnnError) as info:
        Template.from_file(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert str(err).startswith(f"{path}:")
    assert ": error: " in str(err)
    assert err.line is not None and err.file == str(path)
    if CLI.exists():
        cli = subprocess.run([str(CLI), "check", str(path)], capture_output=True, text=True)
        assert cli.returncode != 0
        assert str(err) in cli.stderr


def test_error_points_at_the_column():
    with pytest.raises(lrnn.LrnnError) as info:
        Template.from_string("h(X) :- a(X).\ng(X) :- b(X) c.\n", "t.lrnn")
    err = info.value
    assert (err.file, err.line, err.col, err.kind) == ("t.lrnn", 2, 14, "parse")
    lines = str(err).split("\n")
    assert lines[0].startswith("t.lrnn:2:14: error: ")
    assert lines[1] == "g(X) :- b(X) c."
    assert lines[2].startswith(" " * 13 + "^")


def test_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(lrnn.LrnnError) as info:
        Template.from_file(tmp_path / "nope.lrnn")
    assert info.value.kind == "io"
