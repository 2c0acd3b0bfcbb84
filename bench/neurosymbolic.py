#!/usr/bin/env python3
"""Benchmark bench/neurosymbolic: neural predicates (issue 34), lrnn against the same exact
computation in torch and against DeepProbLog 2.1.0, on one thread.

An MLP (64 -> 64 -> 10) reads scikit-learn's 8x8 digit images and learns from a symbolic
label alone. --task addition: two numbers of N digits (N = 1..4, --digits) are added, the
label is the sum (loss -log p(a + b = sum)). --task count: rows of K images (--images) and
a queried digit, the label is how many of the images show it (loss -log p(count = n)).
--task kinship: chains of 2 or 3 kinship words (12 words, synonyms of father, mother, son,
daughter), the label is the composed relation (grandfather, ...); the model is a learned word
embedding (kinship_chains.py's RelationNet) instead of the MLP, Adam lr 0.01.
  lrnn          examples/neurosymbolic/digit_addition.py's carry template (linear in N) or
                digit_count.py's count recursion or kinship_chains.py's composition table, through
                lrnn.nn.torch_function.NeuraLogic(batched=True)
  torch-exact   the same file's torch_exact_probability: the same recursion as tensor products
  deepproblog   bench/peers/deepproblog_addition.py (DeepProbLog's own multi-digit program,
                which enumerates the digit tuples), deepproblog_count.py or
                deepproblog_kinship.py, with its exact
                engine; skipped with the reason when `import deepproblog` fails, stopped
                after --dpl-timeout seconds or at --dpl-max-rss-gb resident (the epochs it
                finished are reported), not run for addition above --dpl-max-digits digits
                (2 digits grew to 22 GB in 643 s without finishing an epoch)
Each engine runs in its own process with one thread (OMP_NUM_THREADS=1,
torch.set_num_threads(1)), from the same initial MLP (torch.manual_seed(0)), data, batch
order, Adam (lr 0.003) and batch size. An epoch is forward + backward + step over the training
rows; the epoch time printed is the median over --epochs epochs, the accuracy the test
accuracy (each digit the MLP's most likely one) after the last. Writes
bench/results/neurosymbolic.json (--task addition) or neurosymbolic_TASK.json."""
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
TASKS = ("addition", "count", "kinship")
DEEPPROBLOG = {task: os.path.join(HERE, "peers", f"deepproblog_{task}.py") for task in TASKS}


def worker(engine: str, task: str, size: int, epochs: int, train: int, test: int, batch_size: int) -> None:
    """One engine's run in this process: prints {"epoch_seconds": [...], "accuracy": [...]}."""
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, EXAMPLE_DIR)
    import digit_addition as da
    import digit_count as dc
    import kinship_chains as kc

    if task == "addition":
        train_data, test_data = da.split_rows(da.make_pairs, size, train, test)
        probability = da.lrnn_probability(size) if engine == "lrnn" else da.torch_exact_probability
        epoch = da.train_epoch

        def accuracy(net):
            return da.accuracy(net, test_data[0], test_data[1], test_data[3])
    elif task == "kinship":
        train_data, test_data = kc.make_chains(train, seed=1), kc.make_chains(test, seed=2)
        probability = kc.lrnn_probability() if engine == "lrnn" else kc.torch_exact_probability
        epoch = kc.train_epoch

        def accuracy(net):
            return kc.accuracy(net, test_data)
    else:
        train_data, test_data = da.split_rows(dc.make_rows, size, train, test)
        probability = dc.lrnn_probability(size) if engine == "lrnn" else dc.torch_exact_probability
        epoch = dc.train_epoch

        def accuracy(net):
            return dc.accuracy(net, test_data)
    torch.manual_seed(0)
    net = kc.RelationNet() if task == "kinship" else da.DigitNet()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01 if task == "kinship" else 0.003)
    seconds, accuracies = [], []
    for _ in range(epochs):
        seconds.append(epoch(net, probability, train_data, optimizer, batch_size))
        accuracies.append(accuracy(net))
    print(json.dumps({"epoch_seconds": seconds, "accuracy": accuracies}))


def run(cmd: list[str], timeout: float, max_rss_mb: float | None = None) -> dict:
    # `env` execs the command: the child is the engine's process, whose memory max_rss_mb watches
    env_cmd = ["env", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"] + cmd
    result = benchlib.run_with_rss(env_cmd, timeout_s=timeout, max_rss_mb=max_rss_mb)
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
    parser.add_argument("--task", choices=TASKS, default="addition")
    parser.add_argument("--digits", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--images", type=int, nargs="+", default=[4])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--train", type=int, default=700)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dpl-timeout", type=float, default=900.0)
    parser.add_argument("--dpl-max-digits", type=int, default=1)
    parser.add_argument("--dpl-max-rss-gb", type=float, default=8.0)
    parser.add_argument("--worker", choices=["lrnn", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = {"addition": args.digits, "count": args.images, "kinship": [0]}[args.task]
    if args.worker:
        worker(args.worker, args.task, sizes[0], args.epochs, args.train, args.test, args.batch_size)
        return
    try:
        import sklearn  # noqa: F401 - the digit images ship with scikit-learn
    except ImportError:
        print("neurosymbolic: scikit-learn is not installed (pip install scikit-learn): its 8x8 digits are the data")
        return
    dpl_reason = deepproblog_missing()
    results = {"benchmark": "neurosymbolic", "task": args.task,
               "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": os.getloadavg()[0],
               "train_rows": args.train, "test_rows": args.test, "batch_size": args.batch_size,
               "epochs": args.epochs, "threads": 1, "dpl_timeout_s": args.dpl_timeout,
               "dpl_max_rss_gb": args.dpl_max_rss_gb, "runs": []}
    if dpl_reason:
        results["deepproblog"] = dpl_reason
        print(dpl_reason)
    size_flag = {"addition": "--digits", "count": "--images", "kinship": "--images"}[args.task]
    for size in sizes:
        common = ["--epochs", str(args.epochs), "--train", str(args.train), "--test", str(args.test),
                  "--batch-size", str(args.batch_size)]
        sized = [] if args.task == "kinship" else [size_flag, str(size)]
        row = {"task": args.task} if args.task == "kinship" else {"task": args.task, size_flag[2:]: size}
        for engine in ("lrnn", "torch"):
            row[engine] = run([sys.executable, os.path.abspath(__file__), "--worker", engine, "--task", args.task]
                              + sized + common, timeout=3600)
        if dpl_reason:
            pass
        elif args.task == "addition" and size > args.dpl_max_digits:
            row["deepproblog"] = {"error": f"not run: above --dpl-max-digits {args.dpl_max_digits}"}
        else:
            row["deepproblog"] = run([sys.executable, DEEPPROBLOG[args.task]] + sized + common,
                                     timeout=args.dpl_timeout, max_rss_mb=args.dpl_max_rss_gb * 1024)
        results["runs"].append(row)
        print(describe(row), flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    os.makedirs(benchlib.RESULTS, exist_ok=True)
    name = "neurosymbolic.json" if args.task == "addition" else f"neurosymbolic_{args.task}.json"
    with open(os.path.join(benchlib.RESULTS, name), "w") as f:
        json.dump(results, f, indent=2)


def describe(row: dict) -> str:
    parts = [{"addition": lambda: f"addition, {row['digits']} digit(s):",
              "count": lambda: f"count, {row['images']} images:",
              "kinship": lambda: "kinship chains of 2 and 3 links:"}[row["task"]]()]
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
    target = row["task"] == "addition" and row["digits"] == 1  # issue 34's targets are for 1-digit sums
    if "lrnn" in epoch and "torch" in epoch:
        parts.append(f"lrnn / torch-exact {epoch['lrnn'] / epoch['torch']:.2f}x" + (" (target <= 2x);" if target else ";"))
    if "lrnn" in epoch and "deepproblog" in epoch:
        # "at the same accuracy": lrnn's after as many epochs as DeepProbLog finished
        done = len(row["deepproblog"]["accuracy"])
        same = row["lrnn"]["accuracy"][min(done, len(row["lrnn"]["accuracy"])) - 1]
        parts.append(f"lrnn's test accuracy after {done} epochs {same:.3f};")
        parts.append(f"deepproblog / lrnn {epoch['deepproblog'] / epoch['lrnn']:.1f}x" + (" (target >= 20x)" if target else ""))
    return " ".join(parts)


if __name__ == "__main__":
    main()
