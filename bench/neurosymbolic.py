#!/usr/bin/env python3
"""Benchmark bench/neurosymbolic: digit addition with neural predicates (issue 34), lrnn
against the same exact computation in torch and against DeepProbLog 2.1.0, on one thread.

An MLP (64 -> 64 -> 10) reads scikit-learn's 8x8 digit images; two numbers of N digits
(N = 1..4) are added, and the MLP learns from the sums alone (loss -log p(a + b = sum)).
  lrnn          examples/neurosymbolic/digit_addition.py's template through
                lrnn.nn.torch_function.NeuraLogic(batched=True): a carry recursion, linear in N
  torch-exact   digit_addition.torch_exact_probability: the same recursion as tensor products
  deepproblog   bench/peers/deepproblog_addition.py: DeepProbLog's own multi-digit addition
                program (it enumerates the digit tuples) with its exact engine; skipped with the
                reason when `import deepproblog` fails, stopped after --dpl-timeout seconds
Each engine runs in its own process with one thread (OMP_NUM_THREADS=1,
torch.set_num_threads(1)), from the same initial MLP (torch.manual_seed(0)), data, batch
order, Adam (lr 0.003) and batch size. An epoch is forward + backward + step over the training
pairs; the epoch time printed is the median over --epochs epochs, the accuracy the test sum
accuracy (each digit the MLP's most likely one) after the last. Writes
bench/results/neurosymbolic.json."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE_DIR = os.path.join(os.path.dirname(HERE), "examples", "neurosymbolic")
DEEPPROBLOG = os.path.join(HERE, "peers", "deepproblog_addition.py")


def worker(engine: str, digits: int, epochs: int, train: int, test: int, batch_size: int) -> None:
    """One engine's run in this process: prints {"epoch_seconds": [...], "accuracy": [...]}."""
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, EXAMPLE_DIR)
    import digit_addition as da

    images, labels = da.load_digit_images()
    half = len(images) // 2
    train_data = da.make_pairs(images[:half], labels[:half], digits, train, seed=1)
    test_data = da.make_pairs(images[half:], labels[half:], digits, test, seed=2)
    torch.manual_seed(0)
    net = da.DigitNet()
    probability = da.lrnn_probability(digits) if engine == "lrnn" else da.torch_exact_probability
    optimizer = torch.optim.Adam(net.parameters(), lr=0.003)
    seconds, accuracy = [], []
    for _ in range(epochs):
        seconds.append(da.train_epoch(net, probability, train_data, optimizer, batch_size))
        accuracy.append(da.accuracy(net, test_data[0], test_data[1], test_data[3]))
    print(json.dumps({"epoch_seconds": seconds, "accuracy": accuracy}))


def run(cmd: list[str], timeout: float) -> dict:
    env_cmd = ["env", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"] + cmd
    result = benchlib.run_with_rss(env_cmd, timeout_s=timeout)
    parsed = benchlib.last_json_object(result.stdout) or {}
    if result.returncode != 0 or not parsed.get("epoch_seconds"):
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        parsed["error"] = f"exit {result.returncode} after {result.wall_s:.0f} s: {tail}"
    parsed["peak_rss_mb"] = result.peak_rss_mb
    return parsed


def deepproblog_missing() -> str | None:
    try:
        import deepproblog  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure is the reason it cannot run
        return f"DeepProbLog cannot run: import deepproblog failed ({type(e).__name__}: {e})"
    return None


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--digits", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train", type=int, default=700)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dpl-timeout", type=float, default=300.0)
    parser.add_argument("--worker", choices=["lrnn", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.digits[0], args.epochs, args.train, args.test, args.batch_size)
        return
    try:
        import sklearn  # noqa: F401 - the digit images ship with scikit-learn
    except ImportError:
        print("neurosymbolic: scikit-learn is not installed (pip install scikit-learn): its 8x8 digits are the data")
        return
    dpl_reason = deepproblog_missing()
    results = {"benchmark": "neurosymbolic", "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "train_pairs": args.train, "test_pairs": args.test, "batch_size": args.batch_size,
               "epochs": args.epochs, "threads": 1, "runs": []}
    if dpl_reason:
        results["deepproblog"] = dpl_reason
        print(dpl_reason)
    for digits in args.digits:
        common = ["--digits", str(digits), "--epochs", str(args.epochs), "--train", str(args.train),
                  "--test", str(args.test), "--batch-size", str(args.batch_size)]
        row = {"digits": digits}
        for engine in ("lrnn", "torch"):
            row[engine] = run([sys.executable, os.path.abspath(__file__), "--worker", engine] + common, timeout=3600)
        if not dpl_reason:
            row["deepproblog"] = run([sys.executable, DEEPPROBLOG] + common, timeout=args.dpl_timeout)
        results["runs"].append(row)
        print(describe(row), flush=True)
    os.makedirs(benchlib.RESULTS, exist_ok=True)
    with open(os.path.join(benchlib.RESULTS, "neurosymbolic.json"), "w") as f:
        json.dump(results, f, indent=2)


def describe(row: dict) -> str:
    parts = [f"addition, {row['digits']} digit(s):"]
    epoch = {}
    for engine in ("lrnn", "torch", "deepproblog"):
        r = row.get(engine)
        if r is None:
            continue
        if "error" in r and not r.get("epoch_seconds"):
            parts.append(f"{engine} {r['error']};")
            continue
        epoch[engine] = median(r["epoch_seconds"])
        partial = " (stopped: " + r["error"] + ")" if "error" in r else ""
        parts.append(f"{engine} epoch {epoch[engine]:.3f} s, test accuracy {r['accuracy'][-1]:.3f} after "
                     f"{len(r['accuracy'])} epochs{partial};")
    if "lrnn" in epoch and "torch" in epoch:
        parts.append(f"lrnn / torch-exact {epoch['lrnn'] / epoch['torch']:.2f}x (target <= 2x);")
    if "lrnn" in epoch and "deepproblog" in epoch:
        parts.append(f"deepproblog / lrnn {epoch['deepproblog'] / epoch['lrnn']:.1f}x (target >= 20x)")
    return " ".join(parts)


if __name__ == "__main__":
    main()
