#!/usr/bin/env python3
"""Numerical parity of lrnn and PyNeuraLogic on the mutagenesis benchmark template.

1. Forward: `lrnn train --epochs 0 --save m0.json` gives lrnn's initial weights and its
   outputs on all 188 molecules; the same weights are loaded into PyNeuraLogic (weights
   matched in template order: rule by rule, body literal by body literal, shapes checked)
   and its outputs are compared.
2. One training step: both engines start from m0.json and take one plain SGD step (lr 0.1,
   MSE) on the first molecule alone; the updated weights are compared, which checks the
   gradient of every weight.

Prints one JSON object (max absolute differences, pass/fail at --tol) and exits 1 on a
failure. PyNeuraLogic runs with chain pruning and iso-value compression off (docs/peers.md
section 2), though neither changes this template's outputs.

  python3 bench/peers/parity_mutagenesis.py --lrnn build/lrnn
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from pyneuralogic_mutagenesis import DEFAULT_DATA, DEFAULT_TEMPLATE, template_rules  # noqa: E402


def lrnn_train(lrnn: str, args: list[str]) -> dict:
    run = subprocess.run([lrnn, "train", *args, "--json"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise SystemExit(f"lrnn train failed ({run.returncode}): {run.stderr.strip()[-500:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def lrnn_parameters(model_path: str) -> list[np.ndarray]:
    with open(model_path) as fp:
        model = json.load(fp)
    return [np.asarray(p["values"], dtype=float).reshape(p["rows"], p["cols"]) for p in model["parameters"]
            if p.get("learnable", True)]


def pyneuralogic_model(optimizer):
    import neuralogic.logging
    from neuralogic.core import Model, Settings
    from neuralogic.nn.loss import MSE

    neuralogic.logging.clear_handlers()
    model = Model()
    model.add_rules(template_rules())
    model.build(Settings(optimizer=optimizer, error_function=MSE(), chain_pruning=False, iso_value_compression=False))
    return model


def load_into(model, params: list[np.ndarray]) -> None:
    state = model.state_dict()
    indices = sorted(state["weights"])
    if len(indices) != len(params):
        raise SystemExit(f"PyNeuraLogic has {len(indices)} weights, lrnn {len(params)}")
    for index, value in zip(indices, params):
        theirs = np.asarray(state["weights"][index], dtype=float)
        if theirs.size != value.size:
            raise SystemExit(f"weight {index}: PyNeuraLogic shape {theirs.shape}, lrnn {value.shape}")
        # PyNeuraLogic lists a column vector flat and a matrix by rows, as lrnn stores them.
        state["weights"][index] = value.reshape(theirs.shape).tolist()
    model.load_state_dict(state)


def pyneuralogic_parameters(model) -> list[np.ndarray]:
    state = model.state_dict()["weights"]
    return [np.asarray(state[i], dtype=float).ravel() for i in sorted(state)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lrnn", default=os.path.join(REPO, "build", "lrnn"))
    parser.add_argument("--template", default=DEFAULT_TEMPLATE)
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--tol", type=float, default=1e-9)
    args = parser.parse_args()
    lrnn = os.path.abspath(args.lrnn)
    template = os.path.abspath(args.template)
    examples = os.path.join(os.path.abspath(args.data), "examples.txt")
    queries = os.path.join(os.path.abspath(args.data), "queries.txt")

    work = tempfile.TemporaryDirectory(prefix="parity_")
    os.chdir(work.name)  # PyNeuraLogic writes ./target/out
    m0 = os.path.join(work.name, "m0.json")
    lrnn_report = lrnn_train(lrnn, [template, "--examples", examples, "--queries", queries,
                                    "--epochs", "0", "--seed", "3", "--save", m0])
    lrnn_outputs = np.array([o["output"] for o in sorted(lrnn_report["outputs"], key=lambda o: o["example"])])
    params0 = lrnn_parameters(m0)

    from neuralogic.dataset import FileDataset
    from neuralogic.nn.optim import SGD

    model = pyneuralogic_model(SGD(lr=0.1))
    load_into(model, params0)
    built = model.build_dataset(FileDataset(examples, queries))
    pyneuralogic_outputs = np.array([float(o) for o in model.test(built)])
    forward_diff = float(np.max(np.abs(pyneuralogic_outputs - lrnn_outputs)))

    # one SGD step on the first molecule
    one_examples, one_queries = os.path.join(work.name, "e1.txt"), os.path.join(work.name, "q1.txt")
    for source, target in ((examples, one_examples), (queries, one_queries)):
        with open(source) as src, open(target, "w") as dst:
            dst.write(src.readline())
    m1 = os.path.join(work.name, "m1.json")
    lrnn_train(lrnn, ["--load", m0, "--examples", one_examples, "--queries", one_queries, "--epochs", "1",
                      "--optimizer", "sgd", "--lr", "0.1", "--loss", "mse", "--batch-size", "1", "--save", m1])
    lrnn_after = [p.ravel() for p in lrnn_parameters(m1)]
    model = pyneuralogic_model(SGD(lr=0.1))
    load_into(model, params0)
    model.train(model.build_dataset(FileDataset(one_examples, one_queries)), epochs=1)
    theirs_after = pyneuralogic_parameters(model)
    step_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(lrnn_after, theirs_after))
    moved = max(float(np.max(np.abs(a.ravel() - b.ravel()))) for a, b in zip(lrnn_after, params0))

    report = {
        "forward_max_abs_diff": forward_diff,
        "sgd_step_max_abs_weight_diff": step_diff,
        "sgd_step_max_weight_change": moved,
        "outputs_compared": len(lrnn_outputs),
        "weights_compared": len(params0),
        "tolerance": args.tol,
        "pass": forward_diff <= args.tol and step_diff <= args.tol,
    }
    print(json.dumps(report))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
