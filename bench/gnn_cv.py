#!/usr/bin/env python3
"""Benchmark bench/gnn_cv: 10-fold cross-validated test accuracy of GIN (5 layers, 64
hidden, sum readout; examples/graphs/gin_<ds>.lrnn) in lrnn and of the same model in
PyTorch Geometric (bench/peers/pyg_gin_cv.py), on the same stratified folds with the same
epochs, optimizer and batch size, plus each engine's training time per epoch.

    python3 bench/gnn_cv.py [--datasets MUTAG PROTEINS NCI1] [--epochs 50] [--folds 10]
                            [--lr 0.01] [--batch-size 32] [--seed 1] [--build build] [--batch-norm]

--batch-norm: the paper's batch normalisation after each MLP's first linear map
(examples/graphs/gin_<ds>_bn.lrnn; BatchNorm1d in PyG); its results are kept under
"<DS> batch norm".

lrnn: `<build>/lrnn train TEMPLATE --dataset tu:DIR --folds K --epochs N --loss crossentropy
--lr X --batch-size B --seed S --json` (its JSON gives the folds, `fold_of_sample`, that
the PyG run reuses). Both engines run on one thread (OMP_NUM_THREADS=1, torch 1 thread).
Both also test every fold after every epoch (lrnn `--test-curve`; untimed, training
unchanged) so each engine gets two numbers: the final epoch's mean ± std, and the GIN
paper's selection, the epoch whose mean test accuracy over the folds is highest (chosen on
the test folds, so optimistic, as the paper's 0.827 on NCI1 is).
Results of every dataset run are merged into bench/results/gnn_cv.json (a later run of a
dataset replaces its entry), and one line per dataset is printed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import sys
import tempfile

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "peers", "pyg_gin_cv.py")
TU = os.path.join(benchlib.DATASETS, "tu")
RESULTS = os.path.join(benchlib.RESULTS, "gnn_cv.json")


def run_lrnn(a, name: str) -> dict:
    suffix = "_bn" if a.batch_norm else ""
    template = os.path.join(benchlib.REPO, "examples", "graphs", f"gin_{name.lower()}{suffix}.lrnn")
    if not os.path.exists(template):
        sys.exit(f"no template {template} for {name}")
    cmd = [os.path.join(a.build, "lrnn"), "train", template, "--dataset", "tu:" + os.path.join(TU, name),
           "--folds", str(a.folds), "--epochs", str(a.epochs), "--loss", "crossentropy", "--lr", str(a.lr),
           "--batch-size", str(a.batch_size), "--seed", str(a.seed), "--report-every", str(max(a.epochs, 1)), "--json",
           "--dtype", a.lrnn_dtype]
    if a.epochs > 0:
        cmd.append("--test-curve")
    if a.step_size:
        cmd += ["--schedule", "step", "--step-size", str(a.step_size), "--gamma", str(a.gamma)]
    os.environ["OMP_NUM_THREADS"] = "1"
    run = benchlib.run_with_rss(cmd)
    if run.returncode != 0:
        sys.exit(f"lrnn failed ({run.returncode}): {run.stderr[-2000:]}")
    out = json.loads(run.stdout.strip().splitlines()[-1])
    out["wall_s"], out["peak_rss_mb"], out["command"] = run.wall_s, run.peak_rss_mb, " ".join(cmd)
    return out


def run_pyg(a, name: str, fold_of_sample: list) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"fold_of_sample": fold_of_sample}, f)
        folds_file = f.name
    try:
        cmd = [sys.executable, PEER, "--dataset-dir", os.path.join(TU, name), "--folds-json", folds_file,
               "--epochs", str(a.epochs), "--lr", str(a.lr), "--batch-size", str(a.batch_size), "--seed", str(a.seed),
               "--step-size", str(a.step_size), "--gamma", str(a.gamma), "--test-curve"]
        if a.batch_norm:
            cmd.append("--batch-norm")
        run = benchlib.run_with_rss(cmd)
    finally:
        os.unlink(folds_file)
    if run.returncode != 0:
        sys.exit(f"PyG failed ({run.returncode}): {run.stderr[-2000:]}")
    out = json.loads(run.stdout.strip().splitlines()[-1])
    out["wall_s"], out["peak_rss_mb"] = run.wall_s, run.peak_rss_mb
    return out


def curve_summary(curves: list) -> dict:
    """The GIN paper's selection over per-fold test curves ([fold][epoch]): the mean over the
    folds per epoch, and the epoch (1-based) whose mean is highest (the first on a tie), with
    that mean and std."""
    k, epochs = len(curves), len(curves[0])
    means = [sum(c[e] for c in curves) / k for e in range(epochs)]
    e = max(range(epochs), key=lambda i: (means[i], -i))
    std = (sum((c[e] - means[e]) ** 2 for c in curves) / k) ** 0.5
    return {"best_epoch": e + 1, "best_epoch_mean": means[e], "best_epoch_std": std, "mean_by_epoch": means}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["MUTAG"])
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(benchlib.REPO, "build"))
    ap.add_argument("--no-pyg", action="store_true", help="run lrnn only")
    ap.add_argument("--step-size", type=int, default=0,
                    help="multiply the learning rate by --gamma every N epochs in both engines (torch's StepLR; 0: constant)")
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--lrnn-dtype", choices=("float64", "float32"), default="float64",
                    help="lrnn's dtype (PyG runs float32)")
    ap.add_argument("--batch-norm", action="store_true",
                    help="GIN with batch norm after each MLP's first linear map (gin_<ds>_bn.lrnn; BatchNorm1d in PyG)")
    ap.add_argument("--concurrent", action="store_true",
                    help="run lrnn and PyG at the same time, one core each (the folds come from an lrnn run of 0 epochs)")
    a = ap.parse_args()

    results = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            results = json.load(f).get("datasets", {})
    for name in a.datasets:
        pyg = None
        if a.concurrent and not a.no_pyg:
            folds = run_lrnn(argparse.Namespace(**{**vars(a), "epochs": 0}), name)["fold_of_sample"]
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                lrnn_run = pool.submit(run_lrnn, a, name)
                pyg_run = pool.submit(run_pyg, a, name, folds)
                lr, pyg = lrnn_run.result(), pyg_run.result()
            assert lr["fold_of_sample"] == folds
        else:
            lr = run_lrnn(a, name)
        entry = {"epochs": a.epochs, "folds": a.folds, "lr": a.lr, "batch_size": a.batch_size, "seed": a.seed,
                 "schedule": f"step {a.step_size} gamma {a.gamma}" if a.step_size else "constant",
                 "batch_norm": bool(a.batch_norm),
                 "concurrent": bool(a.concurrent), "date": datetime.date.today().isoformat(),
                 "lrnn": {"accuracies": [f["test"]["accuracy"] for f in lr["folds"]], "mean": lr["mean_accuracy"],
                          "std": lr["std_accuracy"], "epoch_s": lr["epoch_s"], "wall_s": lr["wall_s"],
                          "peak_rss_mb": lr["peak_rss_mb"], "dtype": a.lrnn_dtype, "command": lr["command"]}}
        key = f"{name} batch norm" if a.batch_norm else name
        line = f"{key}: lrnn {lr['mean_accuracy']:.4f} ± {lr['std_accuracy']:.4f} ({lr['epoch_s']:.4f} s/epoch)"
        curves = {"lrnn": [f["test_accuracy_by_epoch"] for f in lr["folds"]] if a.epochs > 0 else None}
        if not a.no_pyg:
            pyg = pyg or run_pyg(a, name, lr["fold_of_sample"])
            entry["pyg"] = {"accuracies": [f["test_accuracy"] for f in pyg["folds"]], "mean": pyg["mean_accuracy"],
                            "std": pyg["std_accuracy"], "epoch_s": pyg["epoch_s"], "wall_s": pyg["wall_s"],
                            "peak_rss_mb": pyg["peak_rss_mb"], "torch": pyg["torch"], "dtype": pyg["dtype"]}
            entry["epoch_time_ratio_lrnn_over_pyg"] = lr["epoch_s"] / pyg["epoch_s"]
            line += (f"  PyG {pyg['mean_accuracy']:.4f} ± {pyg['std_accuracy']:.4f} ({pyg['epoch_s']:.4f} s/epoch)"
                     f"  lrnn/PyG time per epoch {lr['epoch_s'] / pyg['epoch_s']:.2f}")
            curves["pyg"] = [f["test_accuracy_by_epoch"] for f in pyg["folds"]] if a.epochs > 0 else None
        for engine, c in curves.items():
            if c:  # the GIN paper's number: the epoch with the best mean test accuracy over the folds
                summary = curve_summary(c)
                entry[engine].update(summary)
                line += (f"\n  {engine} best epoch {summary['best_epoch']}: {summary['best_epoch_mean']:.4f} ± "
                         f"{summary['best_epoch_std']:.4f} (GIN paper's selection, optimistic)")
        print(line, flush=True)
        results[key] = entry
        benchlib.write_result("gnn_cv", {"benchmark": "gnn_cv", "datasets": results}, RESULTS)


if __name__ == "__main__":
    main()
