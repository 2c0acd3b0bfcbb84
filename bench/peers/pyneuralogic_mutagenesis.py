#!/usr/bin/env python3
"""PyNeuraLogic side of the mutagenesis benchmark (see bench/README.md).

Builds the message-passing template of bench/templates/mutagenesis_bench.lrnn with
PyNeuraLogic's Python DSL, checks that the DSL rules print exactly as the rules of that
file (so lrnn and PyNeuraLogic train the same network), loads the dataset through
neuralogic.dataset.FileDataset, and measures:

  jvm_start_s  starting the JVM in-process (JPype); reported, not part of build_s
  build_s      model.build(settings) (template -> Java model) + model.build_dataset(...)
               (grounding + neuralization of every example)
  epoch_s      wall time of each training epoch, model.train(built, epochs=1)
  peak_rss_mb  peak resident set size of this process; JPype runs the JVM inside this
               process, so it includes the JVM heap and code (getrusage(RUSAGE_SELF)
               ru_maxrss, which on Linux is /proc/self/status VmHWM)
  loss/accuracy after training: mean squared error and the fraction of queries whose
               output rounds (at 0.5) to the target, from one evaluation pass (model.test);
               online_losses are the per-epoch means of the errors PyNeuraLogic reports while
               training (what its Trainer prints).

Prints one JSON object on stdout (progress, if any, on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import sys
import tempfile
import time

import numpy as np

ATOM_TYPES = ["c", "h", "o", "n", "cl", "f", "br", "i"]
BOND_TYPES = ["b_1", "b_2", "b_3", "b_4", "b_5", "b_7"]
DIM = 3

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_TEMPLATE = os.path.join(REPO, "bench", "templates", "mutagenesis_bench.lrnn")
DEFAULT_DATA = os.path.join(os.path.dirname(REPO), "shared", "datasets", "neuralogic", "molecules", "mutagenesis")
# The worktree layout (/work/wt-NAME) and the main checkout (/work/main) both sit beside shared/.
if not os.path.isdir(DEFAULT_DATA):
    DEFAULT_DATA = "/work/shared/datasets/neuralogic/molecules/mutagenesis"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # ru_maxrss is in KiB on Linux


def template_rules():
    """The benchmark template in PyNeuraLogic's DSL (must match mutagenesis_bench.lrnn)."""
    from neuralogic.core import Aggregation, R, Transformation, V

    rules = []
    for atom in ATOM_TYPES:
        rules.append(R.atom_embed(V.A) <= R.get(atom)(V.A)[DIM, 1])
    for bond in BOND_TYPES:
        rules.append(R.bond_embed(V.B) <= R.get(bond)(V.B)[DIM, 1])
    previous = "atom_embed"
    for layer in (1, 2, 3):
        head = f"layer_{layer}"
        rules.append(
            (
                R.get(head)(V.X)
                <= (
                    R.get(previous)(V.X)[DIM, DIM],
                    R.get(previous)(V.Y)[DIM, DIM],
                    R.bond(V.X, V.Y, V.B),
                    R.bond_embed(V.B)[DIM, DIM],
                )
            )
            | [Transformation.TANH, Aggregation.AVG]
        )
        previous = head
    rules.append((R.predict <= R.layer_3(V.X)[1, DIM]) | [Transformation.SIGMOID, Aggregation.AVG])
    return rules


def normalised_rule_lines(text: str) -> list[str]:
    """Rule lines of a template text without comments and whitespace."""
    lines = []
    for line in text.splitlines():
        line = line.split("%", 1)[0]
        line = re.sub(r"\s+", "", line)
        if line:
            lines.append(line)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--template", default=DEFAULT_TEMPLATE, help="lrnn text template the DSL must equal")
    parser.add_argument("--examples", default=os.path.join(DEFAULT_DATA, "examples.txt"))
    parser.add_argument("--queries", default=os.path.join(DEFAULT_DATA, "queries.txt"))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.template, args.examples, args.queries = map(os.path.abspath, (args.template, args.examples, args.queries))

    # PyNeuraLogic's Java side writes ./target/out/{settings,sources} when it reads files:
    # keep that out of the caller's directory.
    workdir = tempfile.TemporaryDirectory(prefix="pyneuralogic_")
    os.chdir(workdir.name)

    t0 = time.perf_counter()
    import neuralogic
    import neuralogic.logging
    from neuralogic.core import Model, Settings
    from neuralogic.dataset import FileDataset
    from neuralogic.nn.init import Glorot
    from neuralogic.nn.loss import MSE
    from neuralogic.nn.optim import Adam

    # By default the Java backend logs every grounded sample at INFO to stdout; that would
    # both pollute the JSON on stdout and cost time inside the measured build.
    neuralogic.logging.clear_handlers()
    neuralogic.manual_seed(args.seed)
    neuralogic.initialize()
    jvm_start_s = time.perf_counter() - t0

    rules = template_rules()
    model = Model()
    model.add_rules(rules)
    with open(args.template) as fp:
        expected = normalised_rule_lines(fp.read())
    actual = normalised_rule_lines(str(model))
    if expected != actual:
        print("the DSL template differs from " + args.template, file=sys.stderr)
        for a, b in zip(expected + [""] * len(actual), actual + [""] * len(expected)):
            if a != b:
                print(f"  file: {a}\n  dsl:  {b}", file=sys.stderr)
        return 2

    settings = Settings(optimizer=Adam(lr=args.lr), error_function=MSE(), initializer=Glorot())
    dataset = FileDataset(examples_file=args.examples, queries_file=args.queries)

    t0 = time.perf_counter()
    model.build(settings)
    t1 = time.perf_counter()
    built = model.build_dataset(dataset, batch_size=args.batch_size)
    t2 = time.perf_counter()
    template_build_s, dataset_build_s = t1 - t0, t2 - t1
    n_samples = len(built.samples) if hasattr(built, "samples") else len(built._samples)

    epoch_s = []
    results = None
    losses = []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        results = model.train(built, epochs=1)
        epoch_s.append(time.perf_counter() - t0)
        losses.append(statistics.fmean(float(error) for _, _, error in results))

    # Final loss/accuracy from one evaluation pass after training (no updates), as lrnn
    # reports them; the per-epoch losses above are PyNeuraLogic's online errors (each
    # query's error before its own update).
    targets = [float(target) for target, _, _ in results] if results else []
    outputs = [float(output) for output in model.test(built)] if results else []
    final_loss = statistics.fmean((o - t) ** 2 for o, t in zip(outputs, targets)) if outputs else None
    correct = sum(1 for o, t in zip(outputs, targets) if (o >= 0.5) == (t >= 0.5))
    parameters = sum(int(np.size(value)) for value in model.state_dict()["weights"].values())
    report = {
        "engine": "pyneuralogic",
        "version": neuralogic.__version__,
        "template": os.path.relpath(args.template, REPO) if args.template.startswith(REPO) else args.template,
        "samples": n_samples,
        "epochs": args.epochs,
        "optimizer": "adam",
        "lr": args.lr,
        "batch_size": args.batch_size,
        "loss_function": "mse",
        "initializer": "glorot",
        "seed": args.seed,
        "timing": {
            "jvm_start_s": jvm_start_s,
            "template_build_s": template_build_s,
            "dataset_build_s": dataset_build_s,
            "build_s": template_build_s + dataset_build_s,
            "epoch_s": epoch_s,
            "epoch_median_s": statistics.median(epoch_s) if epoch_s else None,
            "epoch_mean_s": statistics.fmean(epoch_s) if epoch_s else None,
        },
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_method": "getrusage(RUSAGE_SELF).ru_maxrss of the Python process; the JVM runs in it (JPype)",
        "parameters": parameters,
        "online_losses": losses,
        "loss": final_loss,
        "accuracy": correct / len(outputs) if outputs else None,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
