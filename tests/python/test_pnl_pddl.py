"""PyNeuraLogic's PDDLDataset (`lrnn.dataset.PDDLDataset`, `lrnn.utils.pddl`): PDDL domains and
problems as samples, their action rules, and what lrnn does with them (issue 11)."""

import numpy as np
import pytest

import lrnn
from lrnn import R, V, Settings
from lrnn.dataset import Dataset, PDDLDataset, Sample
from lrnn.utils.pddl import DeleteEffect, PDDLDomain, PDDLProblem, PDDLReader, tokenize

# a typed domain: types after `-`, nested `and`, a comment, an action with only add effects
GRIPPER = """
; gripper, reduced
(define (domain gripper)
  (:requirements :strips :typing)
  (:types room ball)
  (:predicates (at ?b - ball ?r - room) (free) (carry ?b - ball) (connected ?x ?y))
  (:action pick
     :parameters (?b - ball ?r - room)
     :precondition (and (at ?b ?r) (and (free)))
     :effect (and (carry ?b) (not (at ?b ?r)) (not (free))))
  (:action move
     :parameters (?x - room ?y - room)
     :precondition (connected ?x ?y)
     :effect (reached ?y)))
"""


def problem(name, init, goal):
    return f"(define (problem {name}) (:domain gripper) (:objects r1 r2 - room b1 - ball) (:init {init}) (:goal {goal}))"


def test_reader_nests_and_drops_comments():
    assert tokenize("(a ?x) ; (b)\n(c)") == ["(", "a", "?x", ")", "(", "c", ")"]
    assert PDDLReader.parse_string("(define (p ?x) (and (q) (r b)))") == ["define", ["p", "?x"], ["and", ["q"], ["r", "b"]]]
    with pytest.raises(ValueError, match="never closed"):
        PDDLReader.parse_string("(define (p ?x)")
    with pytest.raises(ValueError, match="closes nothing"):
        PDDLReader.parse_string(")")
    with pytest.raises(ValueError, match=r"a problem starts with \(define \(problem name\)"):
        PDDLProblem(PDDLReader.parse_string("(domain d)"))


def test_domain_actions_become_rules_in_order():
    domain = PDDLDomain(PDDLReader.parse_string(GRIPPER))
    assert domain.name == "gripper" and [a.name for a in domain.actions] == ["pick", "move"]
    assert domain.requirements == [":strips", ":typing"]
    rules = [str(r) for r in domain.to_rules()]
    # one rule per effect literal, the precondition's literals (nested and flattened) as body
    assert rules == [
        "carry(B) :- at(B, R), free.",
        "!*at(B, R) :- at(B, R), free.",
        "!*free :- at(B, R), free.",
        "reached(Y) :- connected(X, Y).",
    ]
    kinds = [type(r).__name__ for r in domain.to_rules()]
    assert kinds == ["Rule", "DeleteEffect", "DeleteEffect", "Rule"]


def test_problem_init_goal_and_typed_objects():
    p = PDDLProblem(PDDLReader.parse_string(problem("p1", "(at b1 r1) (free) (connected r1 r2)", "(and (carry b1) (reached r2))")))
    assert (p.name, p.domain) == ("p1", "gripper")
    assert [str(f) for f in p.init] == ["at(b1, r1).", "free.", "connected(r1, r2)."]
    assert [str(g) for g in p.goal] == ["carry(b1).", "reached(r2)."]
    assert [str(c) for c in p.get_objects()] == ["r1", "r2", "b1"]  # `- room`, `- ball` left out
    with pytest.raises(ValueError, match=r"\?b .* variable"):
        PDDLProblem(PDDLReader.parse_string(problem("p2", "(at ?b r1)", "(free)")))


def test_dataset_one_sample_per_problem_from_text_and_files(tmp_path):
    (tmp_path / "domain.pddl").write_text(GRIPPER)
    (tmp_path / "p2.pddl").write_text(problem("p2", "(connected r2 r1)", "(reached r1)"))
    texts = [problem("p1", "(at b1 r1) (free)", "(carry b1)"), str(tmp_path / "p2.pddl")]
    for domain in (GRIPPER, str(tmp_path / "domain.pddl")):
        ds = PDDLDataset(domain, texts).to_dataset()
        assert isinstance(ds, Dataset) and len(ds) == 2
        first, second = ds[0], ds[1]
        assert [str(q) for q in first.query] == ["carry(b1)."] and [str(q) for q in second.query] == ["reached(r1)."]
        # the initial state's facts, then every action rule
        assert [str(e) for e in first.example][:3] == ["at(b1, r1).", "free.", "carry(B) :- at(B, R), free."]
        assert len(first.example) == 2 + 4 and len(second.example) == 1 + 4
    without = PDDLDataset(GRIPPER, texts[0], include_actions=False).to_dataset()
    assert [str(e) for e in without[0].example] == ["at(b1, r1).", "free."]
    assert str(PDDLDataset(GRIPPER, texts)) == "PDDLDataset(n_problems=2)"


def test_building_example_rules_is_refused_naming_the_rule():
    model = lrnn.Model()
    model += R.carry(V.B) <= R.at(V.B, V.R)
    model.build(Settings())
    ds = PDDLDataset(GRIPPER, problem("p1", "(at b1 r1) (free)", "(carry b1)")).to_dataset()
    with pytest.raises(ValueError, match=r"example holds the rule carry\(B\) :- at\(B, R\), free\..*template"):
        model.build_dataset(ds)


def test_action_rules_in_the_template_derive_the_goal():
    """The documented way: facts in the samples, the action rules (add effects) in the
    template. Defaults are identity, sum, avg: carry(b1) = at(b1, r1) + free = 2 (facts are
    1), reached(r2) = connected(r1, r2) = 1."""
    pddl = PDDLDataset(GRIPPER, [problem("p1", "(at b1 r1) (free)", "(carry b1)"),
                                 problem("p2", "(connected r1 r2)", "(reached r2)")], include_actions=False)
    rules = pddl.action_rules(delete_effects=False)
    assert [str(r) for r in rules] == ["carry(B) :- at(B, R), free.", "reached(Y) :- connected(X, Y)."]
    assert sum(isinstance(r, DeleteEffect) for r in pddl.action_rules()) == 2
    model = lrnn.Model()
    model.add_rules(rules)
    model.build(Settings())
    outputs = [float(np.ravel(o)[0]) for o in model.test(model.build_dataset(pddl))]
    assert outputs == pytest.approx([2.0, 1.0], abs=1e-12)


def test_delete_effects_are_not_rules():
    effect = PDDLDomain(PDDLReader.parse_string(GRIPPER)).to_rules()[1]
    assert isinstance(effect, DeleteEffect) and not effect.head.negated and str(effect.head) == "at(B, R)."
    with pytest.raises(TypeError, match=r"got DeleteEffect: !\*at\(B, R\) :- at\(B, R\), free\."):
        lrnn.Model().add_rules([effect])


def test_action_without_precondition_is_refused():
    domain = "(define (domain d) (:action a :parameters (?x) :effect (p ?x)))"
    with pytest.raises(ValueError, match="'a' has no precondition"):
        PDDLDomain(PDDLReader.parse_string(domain)).to_rules()


def test_sample_keeps_rules_as_given():
    rule = R.on(V.X, V.Y) <= R.clear(V.Y)
    sample = Sample(R.on("b", "a"), [R.clear("a"), rule])
    assert sample.example[1] is rule and len(sample) == 2
    with pytest.raises(TypeError, match="facts such as"):
        Sample(R.q, [3])
