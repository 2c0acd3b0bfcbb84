#!/usr/bin/env python3
"""Probes of PyNeuraLogic's semantics behind docs/peers.md (what lrnn must match or
deliberately differs from). Each probe builds a tiny template (text format via
Model(model_file=...) or the Python DSL), evaluates it, and prints the observed value next
to the value the statement in docs/peers.md predicts. Exit status 1 if any observation
disagrees. Run: python3 bench/peers/pyneuralogic_semantics.py  (about 10 s, needs neuralogic).
"""
from __future__ import annotations

import math
import os
import sys
import tempfile

import numpy as np

os.chdir(tempfile.mkdtemp(prefix="pyneuralogic_probe_"))  # the Java side writes ./target/out

import neuralogic  # noqa: E402
import neuralogic.logging  # noqa: E402

neuralogic.logging.clear_handlers()
neuralogic.manual_seed(0)

from neuralogic.core import Aggregation, C, Model, R, Settings, Transformation, V  # noqa: E402
from neuralogic.dataset import Dataset, FileDataset  # noqa: E402
from neuralogic.nn.loss import MSE  # noqa: E402
from neuralogic.nn.optim import SGD  # noqa: E402

failures = 0


def check(name: str, observed, expected, tol: float = 1e-9) -> None:
    global failures
    if isinstance(expected, str):
        ok = isinstance(observed, str) and expected in observed
    else:
        try:
            ok = np.allclose(np.asarray(observed, dtype=float), np.asarray(expected, dtype=float), atol=tol)
        except (ValueError, TypeError):
            ok = False
    failures += not ok
    print(f"{'ok  ' if ok else 'DIFF'} {name}: observed {observed!r}, expected {expected!r}")


def text_model(template: str, examples: str, queries: str | None, **settings):
    with open("t.txt", "w") as fp:
        fp.write(template)
    with open("e.txt", "w") as fp:
        fp.write(examples)
    if queries is not None:
        with open("q.txt", "w") as fp:
            fp.write(queries)
    model = Model(model_file="t.txt")
    model.build(Settings(**settings))
    built = model.build_dataset(FileDataset("e.txt", "q.txt" if queries is not None else None))
    return model, built


def text_outputs(template: str, examples: str, queries: str | None, **settings):
    try:
        model, built = text_model(template, examples, queries, **settings)
        return model.test(built)
    except Exception as error:  # the JVM's exceptions surface as Python exceptions
        return f"error: {error}"


def dsl_outputs(rules, example, query, **settings):
    try:
        model = Model()
        model.add_rules(rules)
        model.build(Settings(**settings))
        return model.test(model.build_dataset(Dataset().add(query, example)))
    except Exception as error:
        return f"error: {error}"


sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731

# Defaults: rule/atom activation identity, combination sum, aggregation avg, fact value 1.
check("defaults: h :- a(X), b. with a=1,3 and b=10 -> avg(1+10, 3+10)",
      text_outputs("h :- a(X), b.\n", "1 a(x), 3 a(y), 10 b.\n", "h.\n"), [12.0])
check("atom combination: two rules for h add up", text_outputs("h :- a.\nh :- b.\n", "2 a, 3 b.\n", "h.\n"), [5.0])
check("default fact value is 1.0", text_outputs("h :- a.\n", "a.\n", "h.\n"), [1.0])
check("unweighted scalar broadcasts into a vector sum",
      text_outputs("h :- a, b.\n", "[1,2] a, 1 b.\n", "h.\n"), [[2.0, 3.0]])

# Weights on values: weights are matrices applied as W·x; vectors are columns.
check("vector weight on vector input is an error (column times column)",
      text_outputs("h :- <[1,2,3]> a.\n", "[1,1,2] a.\n", "h.\n"), "Incompatible dimensions")
check("vector weight on scalar input scales the vector",
      text_outputs("h :- <[1,2,3]> a.\n", "2 a.\n", "h.\n"), [[2.0, 4.0, 6.0]])
check("matrix weight on vector input is W·x",
      dsl_outputs([R.h <= R.a[[[1, 0, 0], [0, 2, 0]]].fixed()], [R.a[[1, 1, 2]]], R.h), [[1.0, 2.0]])

# Chain pruning (default on) drops single-input unweighted neurons, activations included.
check("chain pruning: h :- a. [sigmoid] with a=1 gives 1.0, not sigmoid(1)",
      dsl_outputs([(R.h <= R.a) | [Transformation.SIGMOID]], [R.a[1.0]], R.h), [1.0])
check("without chain pruning the same rule gives sigmoid(1)",
      dsl_outputs([(R.h <= R.a) | [Transformation.SIGMOID]], [R.a[1.0]], R.h, chain_pruning=False), [sig(1)])
check("a weighted single input keeps its activation",
      dsl_outputs([(R.h <= R.a[2.0]) | [Transformation.SIGMOID]], [R.a[1.0]], R.h), [sig(2)])

# Aggregations.
check("max aggregation on vectors keeps the whole input with the largest sum (not element-wise)",
      text_outputs("h :- a(X). [aggregation=max]\n", "[1,5] a(x), [2,0] a(y).\n", "h.\n"), [[1.0, 5.0]])
softmax_123 = np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum()
check("softmax(Y) with Y in the head: each h(p, y) gets its own normalised weight",
      dsl_outputs([(R.h(V.X, V.Y) <= R.a(V.X, V.Y)) | [Aggregation.SOFTMAX(agg_terms=["Y"])]],
                  [R.a(C.p, C.x)[1.0], R.a(C.p, C.y)[2.0], R.a(C.p, C.z)[3.0]], R.h(C.p, C.z)), [softmax_123[2]])
observed = text_outputs("h :- a(X). [aggregation=softmax]\n", "1 a(x), 2 a(y), 3 a(z).\n", "h.\n")
check("plain softmax aggregation returns the distribution vector (grounding order), not a weighted sum",
      sorted(observed[0]) if isinstance(observed, list) else observed, sorted(softmax_123))
check("softmax aggregation of vector inputs is an error",
      text_outputs("h :- a(X). [aggregation=softmax]\n", "[1,0] a(x), [2,5] a(y).\n", "h.\n"), "cannot be cast")

# Template facts.
check("a valued template fact joins every example (learnable embedding)",
      text_outputs("[0.5,2] e(a).\nh :- e(X), k(X).\n", "k(a).\n", "h.\n"), [[1.5, 3.0]])
check("an example fact with the same atom replaces the template fact's value",
      text_outputs("[0.5,2] e(a).\nh :- e(X).\n", "[0.1,0.1] e(a).\n", "h.\n"), [[0.1, 0.1]])

# Examples and queries.
check("labelled examples without a queries file: each line is example and query",
      text_outputs("h :- <2> a.\n", "1.0 h :- 3 a.\n0.0 h :- 1 a.\n", None), [6.0, 2.0])
check("named examples and queries pair by id, in the queries file's order",
      text_outputs("h(X) :- <2> a(X).\n", "e1 :- 3 a(p).\ne2 :- 1 a(q).\n", "e2 :- 0.5 h(q).\ne1 :- 1.5 h(p).\n"),
      [2.0, 6.0])
check("one example serves every query",
      text_outputs("h(X) :- <2> a(X).\n", "3 a(p), 1 a(q).\n", "1 h(p).\n0 h(q).\n"), [6.0, 2.0])
observed = text_outputs("h(X) :- <2> a(X).\n", "3 a(p), 1 a(q).\n", "1 h(X).\n")
check("a query with a variable matches every ground atom it subsumes",
      sorted(observed) if isinstance(observed, list) else observed, [2.0, 6.0])

# Loss: the reported per-query error is the sum of squared differences; the gradient is the
# exact gradient of the mean over elements (reduction="mean", the default).
for reduction, expected_w in (("mean", [0.55, 0.45]), ("sum", [0.6, 0.4])):
    model = Model()
    model.add_rules([R.predict <= R.a[[0.5, 0.5]]])
    model.build(Settings(optimizer=SGD(lr=0.1), error_function=MSE(reduction=reduction)))
    built = model.build_dataset(Dataset().add(R.predict[[1.0, 0.0]], [R.a[1.0]]))
    (target, output, error), = model.train(built, epochs=1)
    check(f"MSE({reduction}) reported error of output [0.5,0.5] vs target [1,0]", error, 0.5)
    check(f"MSE({reduction}) one SGD step (lr 0.1) from w=[0.5,0.5]", list(model.state_dict()["weights"].values())[0],
          expected_w)

# Default initialiser: Glorot, uniform in +-sqrt(6 / (rows + cols)).
model = Model()
model.add_rules([R.h <= R.a[50, 50]])
model.build(Settings())
weights = np.asarray(list(model.state_dict()["weights"].values())[0], dtype=float)
check("default initialiser: {50,50} weights lie in +-sqrt(6/100)", [abs(weights).max() <= math.sqrt(0.06)], [1.0])
check("default initialiser: their std is that of a uniform on +-sqrt(6/100)", weights.std(),
      math.sqrt(0.06) / math.sqrt(3), tol=0.01)

model = Model()
model.add_rules([R.h <= R.get(f"a{i}")[1, 1] for i in range(300)])
model.build(Settings())
weights = np.array([float(np.ravel(w)[0]) for w in model.state_dict()["weights"].values()])
check("default initialiser: 300 scalar {1,1} weights lie in +-sqrt(3) and spread over it",
      [abs(weights).max() <= math.sqrt(3), abs(weights).max() > 1.5], [1.0, 1.0])

print(f"{failures} observation(s) differ" if failures else "all observations as documented")
sys.exit(1 if failures else 0)
