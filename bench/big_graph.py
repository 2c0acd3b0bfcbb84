#!/usr/bin/env python3
"""Benchmark bench/big_graph (issue 28): full-batch node classification on ONE big
planted-partition graph, lrnn against PyTorch Geometric, one thread, float32.

  graph  examples/big_graphs/planted_partition.py --nodes N --degree D (seeded): one
         example of facts (16 features per node, edges both ways), one query per node,
         and the same graph as an .npz
  lrnn   <build>/lrnn train examples/big_graphs/gcn.lrnn -e G.examples.txt -q G.queries.txt
         --epochs E --dtype float32 --json (one thread: OMP_NUM_THREADS=1); with --held-out
         -q G.train.queries.txt --val-queries G.val.queries.txt --test-queries G.test.queries.txt
  npz    (unless --no-npz) the same training from the arrays: <build>/lrnn train
         examples/big_graphs/gcn_arrays.lrnn --dataset npz:G.binary.npz (the graph's .npz
         with y // 2, the binary target of gcn.lrnn; its masks are the query split)
  pyg    bench/peers/pyg_big_graph.py (two GCNConv(normalize=False) + self loops, Linear,
         sigmoid, MSE, Adam; float32, torch.set_num_threads(1))

Each engine runs in its own process, the sizes interleaved (lrnn then PyG per size), and
its peak RSS is that process's own (os.wait4). lrnn's build is its `timing.build_s`
(parse + ground + neuralize + plan), its epoch the minimum of `timing.steps_s`, the
training steps (forward, backward, optimizer) as PyG's epoch times them; with --held-out
lrnn's `timing.epochs_s` also computes the validation and test queries' loss, accuracy
and AUC every epoch, reported beside as `with_eval_s`. PyG's epoch is the minimum over
its epochs. Printed per size: both engines' build, epoch, peak
RSS and accuracy, and the ratios PyG / lrnn (the npz build too); then, over the sizes, a
growth table with the exponent b of a least-squares fit t ~ a n^b of lrnn's build (text
and npz), epoch and peak RSS against the node count. Writes bench/results/big_graph.json.

Mini-batches (`--minibatch B --fanout F1,F2`, issue 28's "mini-batches of 1024 queries
with fan-out (10, 10)"): both engines train on the train_mask nodes in batches of B with
the fan-out per hop, and report the test_mask nodes' accuracy computed full batch after
every epoch. lrnn: `lrnn train examples/big_graphs/gcn_arrays.lrnn --dataset
npz:G.binary.npz --query-batch-size B --fanout F1,F2` (the arrays' masks are the query
split; its epoch is the minimum of `timing.steps_s`, the training steps without the
evaluation of the held-out queries). PyG: NeighborLoader(num_neighbors=[F1, F2],
batch_size=B, shuffle=True) over the train_mask nodes (bench/peers/pyg_big_graph.py; its
epoch is the loop over the loader, sampling included). Without pyg-lib or torch-sparse
the PyG row says so and is skipped. Writes bench/results/big_graph_minibatch.json.

  python3 bench/big_graph.py                      # quick: 20k nodes
  python3 bench/big_graph.py --nodes 20000,200000,2000000 --epochs 3
  python3 bench/big_graph.py --minibatch 1024 --fanout 10,10 --nodes 20000,200000
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(benchlib.REPO, "examples", "big_graphs", "gcn.lrnn")
ARRAYS_TEMPLATE = os.path.join(benchlib.REPO, "examples", "big_graphs", "gcn_arrays.lrnn")
GENERATOR = os.path.join(benchlib.REPO, "examples", "big_graphs", "planted_partition.py")
PYG = os.path.join(HERE, "peers", "pyg_big_graph.py")


def one_thread_env() -> dict:
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    return env


def make_graph(args, nodes: int) -> str:
    """The graph's path prefix under --graphs (generated unless its three files exist)."""
    prefix = os.path.join(args.graphs, f"planted_n{nodes}_d{args.degree:g}_s{args.seed}")
    files = (".examples.txt", ".queries.txt", ".train.queries.txt", ".val.queries.txt", ".test.queries.txt", ".npz")
    if not all(os.path.exists(prefix + ext) for ext in files):
        os.makedirs(args.graphs, exist_ok=True)
        subprocess.run([sys.executable, GENERATOR, "--nodes", str(nodes), "--degree", str(args.degree),
                        "--seed", str(args.seed), "--out", prefix], check=True)
    return prefix


def binary_npz(prefix: str) -> str:
    """The graph's .npz with y // 2 (whether a node's class is 2 or 3: gcn.lrnn's target; the
    arrays' reader makes 4 class ids a one-hot target), written once next to it."""
    path = prefix + ".binary.npz"
    if not os.path.exists(path):
        import numpy as np
        graph = dict(np.load(prefix + ".npz"))
        graph["y"] = graph["y"] // 2
        np.savez(path, **graph)
    return path


def unmasked_npz(prefix: str) -> str:
    """binary_npz without the masks: every node's query trains (the text run without --held-out)."""
    path = prefix + ".binary.all.npz"
    if not os.path.exists(path):
        import numpy as np
        graph = dict(np.load(binary_npz(prefix)))
        np.savez(path, **{k: v for k, v in graph.items() if not k.endswith("_mask")})
    return path


def lrnn_query_args(prefix: str, held_out: bool) -> list[str]:
    """Every node's query, or (held out) the train_mask nodes' queries to train on and the
    val_mask and test_mask nodes' as a query split of the same example (the generator
    writes one queries file per mask, so lrnn and PyG hold out the same nodes)."""
    if not held_out:
        return ["-q", prefix + ".queries.txt"]
    return ["-q", prefix + ".train.queries.txt", "--val-queries", prefix + ".val.queries.txt",
            "--test-queries", prefix + ".test.queries.txt"]


def run_lrnn(args, prefix: str, npz: bool = False) -> dict:
    """lrnn train from the text (-e/-q) or, with npz, from the arrays (the .npz masks split
    the queries: held out the same nodes as --held-out; without --held-out every node trains
    as the text run's does, so the npz run is given the .npz without its masks)."""
    if npz:
        data = ["--dataset", "npz:" + binary_npz(prefix)] if args.held_out else \
            ["--dataset", "npz:" + unmasked_npz(prefix)]
        cmd = [os.path.join(args.build, "lrnn"), "train", ARRAYS_TEMPLATE] + data
    else:
        cmd = [os.path.join(args.build, "lrnn"), "train", TEMPLATE, "-e", prefix + ".examples.txt"] + \
            lrnn_query_args(prefix, args.held_out)
    cmd += ["--epochs", str(args.epochs), "--lr", str(args.lr), "--seed", str(args.seed), "--dtype", "float32", "--json"]
    if args.minibatch:
        cmd += ["--query-batch-size", str(args.minibatch), "--fanout", args.fanout]
    report, error, rss = benchlib.run_json(cmd, one_thread_env(), args.timeout)
    if report is None:
        return {"available": False, "reason": "lrnn train failed " + error, "peak_rss_mb": rss}
    timing = report["timing"]
    epochs = timing.get("epochs_s") or [timing["epoch_s"]]
    if args.minibatch:  # the training steps, without the full-batch evaluation of the held-out nodes
        return {"available": True, "build_s": timing["build_s"], "epoch_s": timing["steps_s"],
                "epoch_min_s": min(timing["steps_s"]), "with_eval_s": epochs,
                "loss": (report.get("splits") or {}).get("train", {}).get("loss"),
                "accuracy": (report.get("splits") or {}).get("train", {}).get("accuracy"),
                "test_accuracy": (report.get("splits") or {}).get("test", {}).get("accuracy"), "peak_rss_mb": rss}
    # With a query split the parts' metrics are under "splits" (docs/big_graphs.md).
    splits = report.get("splits") or {}
    accuracy = (splits.get("train") or {}).get("accuracy", report.get("accuracy"))
    steps = timing.get("steps_s") or epochs  # the training steps: what PyG's epoch times
    return {"available": True, "build_s": timing["build_s"], "read_s": timing.get("read_s"),
            "ground_s": timing.get("ground_s"), "plan_s": timing.get("plan_s"),
            "load_cpu_s": timing.get("load_cpu_s"), "epoch_s": steps,
            "epoch_min_s": min(steps), "with_eval_s": epochs, "loss": report.get("loss"), "accuracy": accuracy,
            "test_accuracy": (splits.get("test") or {}).get("accuracy"), "peak_rss_mb": rss}


def run_pyg(args, prefix: str) -> dict:
    cmd = [sys.executable, PYG, "--graph", prefix + ".npz", "--epochs", str(args.epochs), "--lr", str(args.lr),
           "--seed", str(args.seed), "--threads", "1"] + (["--train-mask"] if args.held_out else [])
    if args.minibatch:
        cmd += ["--minibatch", str(args.minibatch), "--fanout", args.fanout]
    report, error, rss = benchlib.run_json(cmd, one_thread_env(), args.timeout)
    if report is None:
        return {"available": False, "reason": "PyG failed " + error, "peak_rss_mb": rss}
    if not report.get("available", True):
        return {"available": False, "reason": "PyG NeighborLoader skipped: " + report["reason"], "peak_rss_mb": rss}
    if args.minibatch:
        return {"available": True, "build_s": report["build_s"], "epoch_s": report["epoch_s"],
                "epoch_min_s": min(report["epoch_s"]), "with_eval_s": [a + b for a, b in zip(report["epoch_s"],
                                                                                          report["eval_s"])],
                "loss": report["losses"][-1], "accuracy": report["accuracy"],
                "test_accuracy": report["test_accuracy"], "sampler": report["sampler"],
                "batches_per_epoch": report["batches_per_epoch"], "peak_rss_mb": rss}
    return {"available": True, "build_s": report["build_s"], "epoch_s": report["epoch_s"],
            "epoch_min_s": min(report["epoch_s"]), "loss": report["losses"][-1], "accuracy": report["accuracy"],
            "test_accuracy": report.get("test_accuracy"), "peak_rss_mb": rss}


def fitted_exponent(sizes: list[int], values: list[float]) -> float | None:
    """b of the least-squares fit log v = log a + b log n (None below two sizes)."""
    points = [(math.log(n), math.log(v)) for n, v in zip(sizes, values) if v and v > 0]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx > 0 else None


def describe(name: str, r: dict) -> str:
    if not r.get("available"):
        return f"  {name:5s} {r.get('reason')}"
    acc = benchlib.fmt(r.get("accuracy"), digits=4)
    test = "" if r.get("test_accuracy") is None else f"  test accuracy {r['test_accuracy']:.4f}"
    # The first epoch is shown too: it is where each engine first touches its working memory
    # (on this VM a fresh page costs ~3-5 ms per MB, bench/README.md "big_graph, the first epoch").
    first = r["epoch_s"][0] if r.get("epoch_s") else None
    first_text = "" if first is None else f" (first {first * 1e3:.0f} ms)"
    return (f"  {name:5s} build {r['build_s']:8.3f} s  epoch {r['epoch_min_s'] * 1e3:9.1f} ms{first_text}  "
            f"peak RSS {r['peak_rss_mb']:8.1f} MB  loss {benchlib.fmt(r.get('loss'), digits=4)}  accuracy {acc}{test}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--nodes", default="20000", help="comma-separated node counts (degree --degree)")
    parser.add_argument("--degree", type=float, default=10.0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graphs", default=os.path.join("/tmp", "lrnn_big_graphs"),
                        help="where the generated graphs are kept between runs")
    parser.add_argument("--held-out", action="store_true",
                        help="train on the train_mask nodes, report the accuracy of the test_mask nodes (lrnn: "
                             "--val-queries/--test-queries, a query split)")
    parser.add_argument("--no-pyg", action="store_true")
    parser.add_argument("--no-npz", action="store_true", help="skip lrnn's run from the arrays (--dataset npz:)")
    parser.add_argument("--minibatch", type=int, default=0,
                        help="mini-batches of this many training nodes (implies --held-out and --no-npz: lrnn "
                             "trains from the arrays; PyG with NeighborLoader)")
    parser.add_argument("--fanout", default="10,10", help="with --minibatch: neighbours per hop, outermost first")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--out", default=None, help="result JSON (default bench/results/big_graph.json)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",") if n]
    if args.minibatch:
        return minibatch_main(args, sizes)

    result = new_result(args, "big_graph", TEMPLATE, held_out=args.held_out)
    for nodes in sizes:
        prefix = make_graph(args, nodes)
        row = {"nodes": nodes, "lrnn": run_lrnn(args, prefix)}
        if not args.no_npz:
            row["lrnn_npz"] = run_lrnn(args, prefix, npz=True)
        if not args.no_pyg:
            row["pyg"] = run_pyg(args, prefix)
        print(f"{nodes} nodes, degree {args.degree:g}:")
        print(describe("lrnn", row["lrnn"]))
        if "lrnn_npz" in row:
            print(describe("npz", row["lrnn_npz"]))
        if "pyg" in row:
            print(describe("pyg", row["pyg"]))
        lrnn, npz, pyg = row["lrnn"], row.get("lrnn_npz", {}), row.get("pyg", {})
        if npz.get("available") and pyg.get("available"):
            row["lrnn_npz_build_in_pyg_epochs"] = benchlib.ratio(npz["build_s"], pyg["epoch_min_s"])
            print(f"  npz build {row['lrnn_npz_build_in_pyg_epochs']:.2f} PyG epochs (target <= 2)  "
                  f"RSS npz/PyG {benchlib.ratio(npz['peak_rss_mb'], pyg['peak_rss_mb']):.2f}")
        if lrnn.get("available") and pyg.get("available"):
            row["pyg_epoch_over_lrnn_epoch"] = benchlib.ratio(pyg["epoch_min_s"], lrnn["epoch_min_s"])
            row["lrnn_build_in_pyg_epochs"] = benchlib.ratio(lrnn["build_s"], pyg["epoch_min_s"])
            row["lrnn_rss_over_pyg_rss"] = benchlib.ratio(lrnn["peak_rss_mb"], pyg["peak_rss_mb"])
            row["accuracy_difference"] = lrnn["accuracy"] - pyg["accuracy"]
            held_out = ""
            if lrnn.get("test_accuracy") is not None and pyg.get("test_accuracy") is not None:
                row["test_accuracy_difference"] = lrnn["test_accuracy"] - pyg["test_accuracy"]
                held_out = f"  test accuracy lrnn - PyG {row['test_accuracy_difference']:+.4f} (target within 0.01)"
            print(f"  epoch PyG/lrnn {row['pyg_epoch_over_lrnn_epoch']:.2f}x (target >= 5)  "
                  f"build {row['lrnn_build_in_pyg_epochs']:.2f} PyG epochs (target <= 2)  "
                  f"RSS lrnn/PyG {row['lrnn_rss_over_pyg_rss']:.2f} (target <= 1)  "
                  f"accuracy lrnn - PyG {row['accuracy_difference']:+.4f}{held_out}")
        result["rows"].append(row)

    kept = [r for r in result["rows"] if r["lrnn"].get("available")]
    if len(kept) >= 2:
        ns = [r["nodes"] for r in kept]
        growth = {key: fitted_exponent(ns, [r["lrnn"][field] for r in kept])
                  for key, field in (("build", "build_s"), ("epoch", "epoch_min_s"), ("peak_rss", "peak_rss_mb"))}
        npz_kept = [r for r in kept if r.get("lrnn_npz", {}).get("available")]
        if len(npz_kept) == len(kept):
            growth["npz_build"] = fitted_exponent(ns, [r["lrnn_npz"]["build_s"] for r in kept])
            growth["npz_peak_rss"] = fitted_exponent(ns, [r["lrnn_npz"]["peak_rss_mb"] for r in kept])
        # The reading and grounding's CPU time, lrnn's own (user) and the kernel's (system):
        # which of the two makes a build grow faster than its graph.
        if all(r["lrnn"].get("load_cpu_s") for r in kept):
            for part in ("user", "system"):
                growth["load_cpu_" + part] = fitted_exponent(ns, [r["lrnn"]["load_cpu_s"][part] for r in kept])
        result["lrnn_growth_exponents"] = growth
        if all(r.get("pyg", {}).get("available") for r in kept):
            result["pyg_growth_exponents"] = {"epoch": fitted_exponent(ns, [r["pyg"]["epoch_min_s"] for r in kept]),
                                              "peak_rss": fitted_exponent(ns, [r["pyg"]["peak_rss_mb"] for r in kept])}
        print("growth of lrnn (fit t ~ a n^b; target b <= 1.1):")
        print(f"  {'nodes':>9s} {'build s':>9s} {'npz build':>9s} {'epoch ms':>9s} {'RSS MB':>9s} {'npz RSS':>9s}")
        for r in kept:
            x, z = r["lrnn"], r.get("lrnn_npz", {})
            npz_build = f"{z['build_s']:9.3f}" if z.get("available") else f"{'-':>9s}"
            npz_rss = f"{z['peak_rss_mb']:9.1f}" if z.get("available") else f"{'-':>9s}"
            print(f"  {r['nodes']:9d} {x['build_s']:9.3f} {npz_build} {x['epoch_min_s'] * 1e3:9.1f} "
                  f"{x['peak_rss_mb']:9.1f} {npz_rss}")
        print("  exponent  " + "  ".join(f"{k} {benchlib.fmt(v, digits=3)}" for k, v in growth.items()))
        if "load_cpu_user" in growth:
            print("  reading + grounding CPU s (user / system): " +
                  "  ".join(f"{r['nodes']}: {r['lrnn']['load_cpu_s']['user']:.2f} / {r['lrnn']['load_cpu_s']['system']:.2f}"
                            for r in kept))
        if "pyg_growth_exponents" in result:
            print("  PyG, same run: exponent  " + "  ".join(f"{k} {benchlib.fmt(v, digits=3)}"
                                                          for k, v in result["pyg_growth_exponents"].items()))
    path = benchlib.write_result("big_graph", result, args.out)
    print(f"wrote {path}")
    return 0 if all(r["lrnn"].get("available") and r.get("lrnn_npz", {"available": True}).get("available")
                    for r in result["rows"]) else 1


def new_result(args, benchmark: str, template: str, **settings) -> dict:
    """The result JSON's header (machine, commit, load; a warning printed when the machine is
    busy) and the run's settings, with no rows yet."""
    warning = benchlib.load_warning()
    if warning:
        print(warning, file=sys.stderr)
    result = benchlib.header()
    result.update({"benchmark": benchmark, "template": os.path.relpath(template, benchlib.REPO),
                   "degree": args.degree, "epochs": args.epochs, "lr": args.lr, "seed": args.seed, "threads": 1,
                   "dtype": "float32", **settings, "rows": []})
    return result


def minibatch_main(args, sizes: list[int]) -> int:
    """--minibatch: lrnn's query batches with a fan-out against PyG's NeighborLoader."""
    args.held_out = True
    result = new_result(args, "big_graph_minibatch", ARRAYS_TEMPLATE, minibatch=args.minibatch, fanout=args.fanout,
                        evaluation="test_mask accuracy, full batch, after every epoch (both engines)")
    for nodes in sizes:
        prefix = make_graph(args, nodes)
        row = {"nodes": nodes, "load_average_before": os.getloadavg()[0], "lrnn": run_lrnn(args, prefix, npz=True)}
        if not args.no_pyg:
            row["pyg"] = run_pyg(args, prefix)
        row["load_average_after"] = os.getloadavg()[0]
        print(f"{nodes} nodes, degree {args.degree:g}, batches of {args.minibatch}, fan-out {args.fanout} "
              f"(load average {row['load_average_before']:.2f} before, {row['load_average_after']:.2f} after):")
        for name in ("lrnn", "pyg"):
            if name in row:
                print(describe(name, row[name]).replace("epoch", "epoch (steps)", 1) if row[name].get("available")
                      else describe(name, row[name]))
        lrnn, pyg = row["lrnn"], row.get("pyg", {})
        if lrnn.get("available") and pyg.get("available"):
            row["pyg_epoch_over_lrnn_epoch"] = benchlib.ratio(pyg["epoch_min_s"], lrnn["epoch_min_s"])
            row["pyg_over_lrnn_with_eval"] = benchlib.ratio(min(pyg["with_eval_s"]), min(lrnn["with_eval_s"]))
            row["lrnn_rss_over_pyg_rss"] = benchlib.ratio(lrnn["peak_rss_mb"], pyg["peak_rss_mb"])
            row["test_accuracy_difference"] = lrnn["test_accuracy"] - pyg["test_accuracy"]
            print(f"  epoch PyG/lrnn {row['pyg_epoch_over_lrnn_epoch']:.2f}x (target >= 3)  with the evaluation "
                  f"{row['pyg_over_lrnn_with_eval']:.2f}x  RSS lrnn/PyG {row['lrnn_rss_over_pyg_rss']:.2f}  "
                  f"test accuracy lrnn - PyG {row['test_accuracy_difference']:+.4f} (target within 0.01)")
        result["rows"].append(row)
    path = benchlib.write_result("big_graph_minibatch", result, args.out)
    print(f"wrote {path}")
    return 0 if all(r["lrnn"].get("available") for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
