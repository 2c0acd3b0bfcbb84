#!/usr/bin/env python3
"""Benchmark bench/mutagenesis: lrnn vs PyNeuraLogic, same template, data, epochs, optimizer.

Runs, in one invocation:
  lrnn          <build>/lrnn train bench/templates/mutagenesis_bench.lrnn --examples E
                --queries Q --epochs N --optimizer adam --lr X --loss mse --batch-size B
                --seed S --json
  pyneuralogic  bench/peers/pyneuralogic_mutagenesis.py with the same settings
and prints one line per engine (build time, median time per epoch, peak RSS, final loss
and accuracy) plus the ratios PyNeuraLogic / lrnn, then writes bench/results/mutagenesis.json.

Peak RSS is measured the same way for both engines: os.wait4 on the child process
(benchlib.run_with_rss). PyNeuraLogic's JVM runs inside its Python process (JPype), so its
number includes the JVM. If `lrnn train` does not exist yet, its line says
"lrnn train unavailable" and the peer still runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "templates", "mutagenesis_bench.lrnn")
PEER = os.path.join(HERE, "peers", "pyneuralogic_mutagenesis.py")
PARITY = os.path.join(HERE, "peers", "parity_mutagenesis.py")
DATA = os.path.join(benchlib.DATASETS, "neuralogic", "molecules", "mutagenesis")


def lrnn_has_train(lrnn: str) -> tuple[bool, str]:
    if not os.path.isfile(lrnn) or not os.access(lrnn, os.X_OK):
        return False, f"{lrnn} not built"
    try:
        help_text = subprocess.run([lrnn, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"{lrnn} --help failed: {error}"
    # CLI11 lists subcommands under "Subcommands:"; `lrnn train --help` exits 0 even
    # without a train subcommand, so the listing is what tells.
    if "Subcommands:" not in help_text or "train" not in help_text.split("Subcommands:", 1)[1].split():
        return False, f"{lrnn} has no train subcommand yet"
    return True, ""


def epoch_seconds(timing: dict) -> tuple[float | None, float | None, list | None]:
    """(median, mean, list) of per-epoch seconds from a timing dict whose epoch_s is a list or a number."""
    value = timing.get("epoch_s")
    if isinstance(value, list) and value:
        values = [float(v) for v in value]
        return statistics.median(values), statistics.fmean(values), values
    if isinstance(value, (int, float)):
        return float(value), float(value), None
    return None, None, None


def run_lrnn(args) -> dict:
    lrnn = os.path.join(args.build, "lrnn")
    available, reason = lrnn_has_train(lrnn)
    if not available:
        return {"engine": "lrnn", "available": False, "reason": f"lrnn train unavailable: {reason}"}
    cmd = [
        lrnn, "train", TEMPLATE,
        "--examples", os.path.join(args.data, "examples.txt"),
        "--queries", os.path.join(args.data, "queries.txt"),
        "--epochs", str(args.epochs),
        "--optimizer", "adam",
        "--lr", str(args.lr),
        "--loss", "mse",
        "--batch-size", str(args.batch_size),
        "--seed", str(args.seed),
        "--initializer", "glorot",
        "--json",
    ]
    run = benchlib.run_with_rss(cmd, timeout_s=args.timeout)
    report = benchlib.last_json_object(run.stdout)
    if run.returncode != 0 or report is None:
        tail = (run.stderr or run.stdout).strip().splitlines()[-5:]
        return {
            "engine": "lrnn", "available": False, "command": cmd,
            "reason": f"lrnn train failed (exit {run.returncode}): " + " | ".join(tail),
        }
    timing = report.get("timing", {})
    median, mean, per_epoch = epoch_seconds(timing)
    return {
        "engine": "lrnn",
        "available": True,
        "command": cmd,
        "build_s": timing.get("build_s"),
        "train_s": timing.get("train_s"),
        "epoch_median_s": median,
        "epoch_mean_s": mean,
        "epoch_s": per_epoch,
        "peak_rss_mb": run.peak_rss_mb,
        "wall_s": run.wall_s,
        "loss": report.get("loss"),
        "accuracy": report.get("accuracy"),
        "epochs": report.get("epochs"),
        "parameters": report.get("parameters"),
    }


def run_peer(args) -> dict:
    cmd = [
        sys.executable, PEER,
        "--template", TEMPLATE,
        "--examples", os.path.join(args.data, "examples.txt"),
        "--queries", os.path.join(args.data, "queries.txt"),
        "--epochs", str(args.epochs),
        "--lr", str(args.lr),
        "--batch-size", str(args.batch_size),
        "--seed", str(args.seed),
    ]
    run = benchlib.run_with_rss(cmd, timeout_s=args.timeout)
    report = benchlib.last_json_object(run.stdout)
    if run.returncode != 0 or report is None:
        tail = (run.stderr or run.stdout).strip().splitlines()[-5:]
        hint = ""
        if "No module named 'neuralogic'" in run.stderr:
            hint = " (pip install neuralogic)"
        return {
            "engine": "pyneuralogic", "available": False, "command": cmd,
            "reason": f"pyneuralogic run failed (exit {run.returncode}){hint}: " + " | ".join(tail),
        }
    timing = report["timing"]
    return {
        "engine": "pyneuralogic",
        "available": True,
        "command": cmd,
        "version": report.get("version"),
        "jvm_start_s": timing.get("jvm_start_s"),
        "build_s": timing.get("build_s"),
        "template_build_s": timing.get("template_build_s"),
        "dataset_build_s": timing.get("dataset_build_s"),
        "epoch_median_s": timing.get("epoch_median_s"),
        "epoch_mean_s": timing.get("epoch_mean_s"),
        "epoch_s": timing.get("epoch_s"),
        "peak_rss_mb": run.peak_rss_mb,
        "peak_rss_self_mb": report.get("peak_rss_mb"),
        "wall_s": run.wall_s,
        "loss": report.get("loss"),
        "accuracy": report.get("accuracy"),
        "online_losses": report.get("online_losses"),
        "epochs": report.get("epochs"),
        "parameters": report.get("parameters"),
    }


def epoch_statistic(lrnn: dict) -> str:
    """Median per-epoch time when lrnn reports every epoch, else the mean (lrnn's epoch_s is
    train_s / epochs): both engines are always compared on the same statistic."""
    return "median" if lrnn.get("available") and lrnn.get("epoch_s") else "mean"


def run_parity(args) -> dict:
    """Same weights in both engines: outputs on all molecules and one SGD step compared."""
    cmd = [sys.executable, PARITY, "--lrnn", os.path.join(args.build, "lrnn"), "--template", TEMPLATE,
           "--data", args.data]
    run = benchlib.run_with_rss(cmd, timeout_s=args.timeout)
    report = benchlib.last_json_object(run.stdout)
    if report is None:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        return {"available": False, "reason": f"parity check failed (exit {run.returncode}): " + " | ".join(tail)}
    report["available"] = True
    return report


def line(result: dict, stat: str) -> str:
    name = f"{result['engine']:<13}"
    if not result.get("available"):
        return f"{name} {result['reason']}"
    return (
        f"{name} build {benchlib.fmt(result['build_s'], ' s')}"
        f"  epoch {benchlib.fmt(result[f'epoch_{stat}_s'], ' s')} ({stat} of {result.get('epochs') or '?'})"
        f"  peak RSS {benchlib.fmt(result['peak_rss_mb'], ' MB', 4)}"
        f"  loss {benchlib.fmt(result['loss'], '', 4)}  accuracy {benchlib.fmt(result['accuracy'], '', 3)}"
        f"  ({result.get('parameters') or '?'} parameters)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(benchlib.REPO, "build"), help="lrnn build directory")
    parser.add_argument("--data", default=DATA, help="folder with examples.txt and queries.txt")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per engine")
    parser.add_argument("--skip-peer", action="store_true", help="run lrnn only")
    parser.add_argument("--no-parity", action="store_true",
                        help="skip the check that both engines compute the same outputs and gradients")
    parser.add_argument("--out", default=None, help="result file (default bench/results/mutagenesis.json)")
    args = parser.parse_args()
    args.build, args.data = os.path.abspath(args.build), os.path.abspath(args.data)

    warning = benchlib.load_warning()
    if warning:
        print(warning)
    print(f"mutagenesis: {os.path.relpath(TEMPLATE, benchlib.REPO)}, {args.epochs} epochs, adam lr={args.lr}, "
          f"mse, batch size {args.batch_size}, seed {args.seed}")
    lrnn = run_lrnn(args)
    stat = epoch_statistic(lrnn)
    print(line(lrnn, stat), flush=True)
    peer = {"engine": "pyneuralogic", "available": False, "reason": "skipped (--skip-peer)"}
    if not args.skip_peer:
        peer = run_peer(args)
    print(line(peer, stat), flush=True)
    if lrnn.get("available") and peer.get("available") and lrnn.get("parameters") != peer.get("parameters"):
        print(f"warning: the engines built different models: {lrnn.get('parameters')} vs "
              f"{peer.get('parameters')} parameters")

    parity = {"available": False, "reason": "needs both engines"}
    if lrnn.get("available") and peer.get("available") and not args.no_parity:
        parity = run_parity(args)
        if parity["available"]:
            print(f"{'parity':<13} same weights: outputs max |diff| {parity['forward_max_abs_diff']:.2g} over "
                  f"{parity['outputs_compared']} molecules, one SGD step max |weight diff| "
                  f"{parity['sgd_step_max_abs_weight_diff']:.2g} ({'pass' if parity['pass'] else 'FAIL'})")
        else:
            print(f"{'parity':<13} {parity['reason']}")

    ratios = {}
    if lrnn.get("available") and peer.get("available"):
        ratios = {
            "epoch_statistic": stat,
            "build_speedup": benchlib.ratio(peer["build_s"], lrnn["build_s"]),
            "epoch_speedup": benchlib.ratio(peer[f"epoch_{stat}_s"], lrnn[f"epoch_{stat}_s"]),
            "memory_ratio": benchlib.ratio(peer["peak_rss_mb"], lrnn["peak_rss_mb"]),
        }
        print(
            f"{'ratio':<13} pyneuralogic/lrnn: build {benchlib.fmt(ratios['build_speedup'], 'x')}"
            f" (target >= 20x)  epoch {benchlib.fmt(ratios['epoch_speedup'], 'x')} (target >= 3x)"
            f"  peak RSS {benchlib.fmt(ratios['memory_ratio'], 'x')}"
        )
    else:
        print(f"{'ratio':<13} n/a (needs both engines)")

    result = {
        "benchmark": "mutagenesis",
        **benchlib.header(),
        "config": {
            "template": os.path.relpath(TEMPLATE, benchlib.REPO),
            "data": args.data,
            "epochs": args.epochs,
            "optimizer": "adam",
            "lr": args.lr,
            "loss": "mse",
            "batch_size": args.batch_size,
            "seed": args.seed,
        },
        "engines": {"lrnn": lrnn, "pyneuralogic": peer},
        "ratios": ratios,
        "parity": parity,
        "notes": [
            "build_s: lrnn's timing.build_s; PyNeuraLogic's model.build + build_dataset (JVM start excluded, reported as jvm_start_s)",
            "epoch: median wall time per training epoch if lrnn reports each epoch, else the mean (train time / epochs) for both (see ratios.epoch_statistic)",
            "loss/accuracy: one evaluation pass after training (MSE over queries; output >= 0.5 counts as 1)",
            "peak_rss_mb: ru_maxrss from os.wait4 on each engine's process (PyNeuraLogic's JVM runs in-process)",
            "ratios: PyNeuraLogic divided by lrnn (above 1 means lrnn is faster / smaller)",
        ],
    }
    path = benchlib.write_result("mutagenesis", result, args.out)
    print(f"wrote {os.path.relpath(path, benchlib.REPO) if path.startswith(benchlib.REPO) else path}")
    return 0 if (lrnn.get("available") or peer.get("available")) else 1


if __name__ == "__main__":
    sys.exit(main())
