#!/usr/bin/env python3
"""Benchmark bench/link_prediction (issue 28): link prediction on ONE big planted-partition
graph, lrnn against PyTorch Geometric, one thread, float32.

  graph  examples/big_graphs/link_split.py --nodes N (seeded; --signal 0.5 --homophily 0.8,
         so that the features say something about the links): the training links as the
         graph's edges and as queries, validation and test links held out
  lrnn   <build>/lrnn train examples/big_graphs/link_gcn.lrnn -e G.examples.txt
         -q G.train.links.txt --val-queries G.val.links.txt --test-queries G.test.links.txt
         --link-prediction --loss crossentropy --initializer torch --dtype float32 --json
  pyg    bench/peers/pyg_link_prediction.py (the same encoder and dot-product decoder, one
         tail-corrupted negative per training link each epoch, BCE from logits, Adam)

Each engine in its own process (peak RSS its own), one thread. PyG runs first and writes
the weights its model starts from; lrnn's template is given those values (biases zero in
both), so the two runs differ only in their seeded draws of negatives. Epoch: the minimum over the
epochs; AUC: the test links against one fixed corruption each, from the last epoch's pass.
Prints both and the ratios; writes bench/results/link_prediction.json.

  python3 bench/link_prediction.py                         # quick: 20k nodes
  python3 bench/link_prediction.py --nodes 200000 --epochs 20
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(benchlib.REPO, "examples", "big_graphs", "link_gcn.lrnn")
GENERATOR = os.path.join(benchlib.REPO, "examples", "big_graphs", "link_split.py")
PYG = os.path.join(HERE, "peers", "pyg_link_prediction.py")


def one_thread_env() -> dict:
    return {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def make_graph(args) -> str:
    prefix = os.path.join(args.graphs, f"links_n{args.nodes}_s{args.seed}")
    files = (".examples.txt", ".train.links.txt", ".val.links.txt", ".test.links.txt", ".npz")
    if not all(os.path.exists(prefix + ext) for ext in files):
        os.makedirs(args.graphs, exist_ok=True)
        subprocess.run([sys.executable, GENERATOR, "--nodes", str(args.nodes), "--signal", "0.5", "--homophily", "0.8",
                        "--seed", str(args.seed), "--out", prefix], check=True)
    return prefix


def shared_start(template: str, init_json: str, out: str) -> str:
    """The template with its weights $w1, $w2 written as the values PyG's model started from
    (its Linear weights, [out, in], applied as W x in both)."""
    with open(init_json) as f:
        weights = json.load(f)
    with open(template) as f:
        text = f.read()
    for name, value in weights.items():
        dims = f"{{{len(value)},{len(value[0])}}}"
        literal = "[" + ", ".join("[" + ", ".join(repr(float(v)) for v in row) + "]" for row in value) + "]"
        if f"${name}={dims}" not in text:
            raise SystemExit(f"{template} has no ${name}={dims} to start from PyG's weights")
        text = text.replace(f"${name}={dims}", f"${name}={literal}")
    with open(out, "w") as f:
        f.write(text)
    return out


def run_lrnn(args, prefix: str, template: str = TEMPLATE) -> dict:
    cmd = [os.path.join(args.build, "lrnn"), "train", template, "-e", prefix + ".examples.txt",
           "-q", prefix + ".train.links.txt", "--val-queries", prefix + ".val.links.txt",
           "--test-queries", prefix + ".test.links.txt", "--link-prediction", "--loss", "crossentropy",
           "--initializer", "torch", "--epochs", str(args.epochs), "--lr", str(args.lr), "--seed", str(args.seed),
           "--dtype", "float32", "--json"]
    report, error, rss = benchlib.run_json(cmd, one_thread_env(), args.timeout)
    if report is None:
        return {"available": False, "reason": "lrnn train failed " + error, "peak_rss_mb": rss}
    epochs = report["timing"]["epochs_s"]
    splits = report["splits"]
    return {"available": True, "build_s": report["timing"]["build_s"], "epoch_s": epochs, "epoch_min_s": min(epochs),
            "loss": splits["train"]["loss"], "val_auc": splits["val"].get("auc"),
            "test_auc": splits["test"].get("auc"), "peak_rss_mb": rss}


def run_pyg(args, prefix: str, init_out: str) -> dict:
    cmd = [sys.executable, PYG, "--graph", prefix + ".npz", "--epochs", str(args.epochs), "--lr", str(args.lr),
           "--seed", str(args.seed), "--threads", "1", "--init-out", init_out]
    report, error, rss = benchlib.run_json(cmd, one_thread_env(), args.timeout)
    if report is None:
        return {"available": False, "reason": "PyG failed " + error, "peak_rss_mb": rss}
    return {"available": True, "build_s": report["build_s"], "epoch_s": report["epoch_s"],
            "epoch_min_s": min(report["epoch_s"]), "loss": report["losses"][-1], "val_auc": report["val_auc"][-1],
            "test_auc": report["test_auc"][-1], "peak_rss_mb": rss}


def describe(name: str, r: dict) -> str:
    if not r.get("available"):
        return f"  {name:5s} {r.get('reason')}"
    return (f"  {name:5s} build {r['build_s']:8.3f} s  epoch {r['epoch_min_s']:8.3f} s  peak RSS "
            f"{r['peak_rss_mb']:8.1f} MB  loss {benchlib.fmt(r['loss'], digits=4)}  val AUC "
            f"{benchlib.fmt(r['val_auc'], digits=4)}  test AUC {benchlib.fmt(r['test_auc'], digits=4)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(benchlib.REPO, "build"))
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graphs", default="/tmp/lrnn_big_graphs")
    parser.add_argument("--no-pyg", action="store_true")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    warning = benchlib.load_warning()
    if warning:
        print(warning, file=sys.stderr)
    prefix = make_graph(args)
    result = {**benchlib.header(), "benchmark": "link_prediction", "template": os.path.relpath(TEMPLATE, benchlib.REPO),
              "nodes": args.nodes, "epochs": args.epochs, "lr": args.lr, "seed": args.seed, "threads": 1,
              "dtype": "float32"}
    template = TEMPLATE
    if not args.no_pyg:
        try:
            import torch_geometric  # noqa: F401
            # PyG first: lrnn then starts from the weights PyG's model started from, so that
            # the two runs differ only in their draws of negatives.
            init = prefix + ".pyg_init.json"
            result["pyg"] = run_pyg(args, prefix, init)
            if result["pyg"].get("available"):
                template = shared_start(TEMPLATE, init, prefix + ".shared_start.lrnn")
                result["shared_start"] = True
        except ImportError:
            result["pyg"] = {"available": False, "reason": "torch_geometric is not installed"}
    result["lrnn"] = run_lrnn(args, prefix, template)
    print(f"link prediction, {args.nodes} nodes, {args.epochs} epochs (float32, one thread)")
    for name in ("lrnn", "pyg"):
        if name in result:
            print(describe(name, result[name]))
    lrnn, pyg = result["lrnn"], result.get("pyg") or {}
    if lrnn.get("available") and pyg.get("available"):
        result["ratios"] = {"epoch_pyg_over_lrnn": benchlib.ratio(pyg["epoch_min_s"], lrnn["epoch_min_s"]),
                            "rss_lrnn_over_pyg": benchlib.ratio(lrnn["peak_rss_mb"], pyg["peak_rss_mb"]),
                            "test_auc_points": 100 * (lrnn["test_auc"] - pyg["test_auc"])}
        r = result["ratios"]
        print(f"  PyG / lrnn epoch {benchlib.fmt(r['epoch_pyg_over_lrnn'])}x, lrnn / PyG peak RSS "
              f"{benchlib.fmt(r['rss_lrnn_over_pyg'])}, test AUC lrnn - PyG {r['test_auc_points']:+.2f} points")
    print("wrote", benchlib.write_result("link_prediction", result, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
