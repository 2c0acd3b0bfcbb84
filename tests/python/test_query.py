"""Logic answers from Python (`template.query(goal, facts)`) are the CLI's (`lrnn query`)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import lrnn
from lrnn import C, R, Template, V

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))


def family():
    template = Template()
    template += R.ancestor(V.X, V.Y) <= R.parent(V.X, V.Y)
    template += R.ancestor(V.X, V.Z) <= (R.parent(V.X, V.Y), R.ancestor(V.Y, V.Z))
    template += R.sibling(V.X, V.Y) <= (R.parent(V.P, V.X), R.parent(V.P, V.Y), R.special.neq(V.X, V.Y))
    facts = [R.parent(C.ann, C.bob), R.parent(C.bob, C.carl), R.parent(C.bob, C.cid), R.parent(C.carl, C.dora)]
    return template, facts


def test_answers_with_variables():
    template, facts = family()
    assert template.query(R.ancestor(V.X, C.dora), facts) == [{"X": "ann"}, {"X": "bob"}, {"X": "carl"}]
    assert template.query(R.sibling(V.A, V.B), facts) == [{"A": "carl", "B": "cid"}, {"A": "cid", "B": "carl"}]
    assert template.query(R.ancestor(C.ann, V.Who), facts) == [
        {"Who": "bob"},
        {"Who": "carl"},
        {"Who": "cid"},
        {"Who": "dora"},
    ]


def test_ground_goals_are_booleans():
    template, facts = family()
    assert template.query(R.ancestor(C.ann, C.dora), facts) is True
    assert template.query(R.ancestor(C.dora, C.ann), facts) is False
    assert template.query(R.ancestor(C.ann, C.dora)) is False  # no facts at all


def test_numbers_and_arithmetic_builtins():
    template = Template()
    template += R.diff(V.I, V.J, V.D) <= (R.tok(V.I), R.tok(V.J), R.special.sub(V.I, V.J, V.D), R.special.leq(V.D, 1), R.special.geq(V.D, 0))
    facts = [R.tok(i) for i in range(4)]
    answers = template.query(R.diff(V.I, V.J, V.D), facts)
    # every value a string, numbers too, as PyNeuraLogic gives them
    assert answers == [
        {"I": "0", "J": "0", "D": "0"},
        {"I": "1", "J": "0", "D": "1"},
        {"I": "1", "J": "1", "D": "0"},
        {"I": "2", "J": "1", "D": "1"},
        {"I": "2", "J": "2", "D": "0"},
        {"I": "3", "J": "2", "D": "1"},
        {"I": "3", "J": "3", "D": "0"},
    ]


def test_query_errors_raise_lrnn_error():
    template = Template()
    template += R.p(V.X) <= (R.q(V.X), R.special.lt(V.X, V.Y))  # Y is never bound
    with pytest.raises(lrnn.LrnnError) as info:
        template.query(R.p(V.X), [R.q(1)])
    assert "Y" in str(info.value)


@pytest.mark.skipif(not CLI.exists(), reason="the lrnn CLI is not built")
def test_same_answers_as_the_cli(tmp_path):
    template, facts = family()
    (tmp_path / "t.lrnn").write_text(str(template))
    (tmp_path / "facts.txt").write_text(", ".join(f.to_str() for f in facts) + ".\n")
    for goal in [R.ancestor(V.X, V.Y), R.sibling(V.X, C.carl), R.ancestor(C.ann, C.dora)]:
        out = subprocess.run(
            [str(CLI), "query", str(tmp_path / "t.lrnn"), "--facts", str(tmp_path / "facts.txt"), goal.to_str(), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        cli = json.loads(out)
        mine = template.query(goal, facts)
        if isinstance(mine, bool):
            assert cli == ([{}] if mine else [])
        else:
            assert [{k: str(v) for k, v in row.items()} for row in cli] == mine
