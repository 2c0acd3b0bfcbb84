"""examples/relations/kinship.py (issue 35): attention learns to compose father/mother into
the four grandparent relations, on held-out families of new people, and each head's
attention points at the intermediate person Y the rule names."""

import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "relations" / "kinship.py"


def _kinship():
    spec = importlib.util.spec_from_file_location("kinship", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_small_run_reaches_held_out_accuracy_and_attends_to_the_rules_intermediate(tmp_path):
    kinship = _kinship()
    r = kinship.run(tmp_path, train_families=12, test_families=8, epochs=60, seed=3)
    assert r.queries >= 60  # enough held-out queries for the rates to mean something
    assert r.accuracy >= 0.95
    assert r.on_rule.shape == (2,) and (r.on_rule >= 0.95).all(), r.on_rule
    # The weight is learned, not an artefact of a small family: untrained, it is under 0.15
    # (the next test).
    assert (r.weight > 0.5).all(), r.weight
    # Each head's learned relation: Y scores higher for being linked to X and to Z (either
    # parent) than for not being linked (score 0).
    for u, v in r.scores:
        assert (u > 0).all() and (v > 0).all(), (u, v)
    svg = (tmp_path / "attention.svg").read_text()
    assert svg.startswith("<svg") and svg.count('stroke="red"') >= 2
    assert '<rect class="weight"' in (tmp_path / "heatmaps.svg").read_text()  # lrnn's own drawing


def test_untrained_attention_does_not_point_at_the_rule(tmp_path):
    # The same run without training: the held-out rates come from the training, not from the
    # data or the read-back.
    r = _kinship().run(tmp_path, train_families=12, test_families=8, epochs=0, seed=3)
    assert (r.weight < 0.15).all(), r.weight
    assert r.on_rule.min() < 0.95 and r.accuracy < 0.95


def test_the_rule_intermediate_is_the_parent_linking_x_and_z():
    kinship = _kinship()
    import random

    people, sex, father, mother = kinship.make_family(random.Random(7), 0)
    queries = kinship.grandparent_queries(people, father, mother)
    assert queries
    for x, z, k, y in queries:
        first = father if k in (0, 1) else mother
        second = father if k in (0, 2) else mother
        assert first[x] == y and second[y] == z
        assert sex[z] == ("m" if k in (0, 2) else "f")


def test_command_line_prints_the_numbers(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--train-families", "8",
                             "--test-families", "4", "--epochs", "40"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("held-out accuracy ")
    assert float(lines[0].split()[2]) >= 0.95
    assert sum(line.startswith("head ") for line in lines) == 2
    assert len((tmp_path / "test_queries.txt").read_text().splitlines()) == 4  # one line per held-out family


def test_docs_show_the_template_the_script_writes():
    doc = (SCRIPT.parents[2] / "docs" / "relations.md").read_text()
    assert _kinship().template_text(2) in doc
