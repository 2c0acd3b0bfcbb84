#!/usr/bin/env python3
"""Benchmark bench/distributed: data-parallel training over MPI (docs/distributed.md).

The 3-layer GCN of bench/templates/gcn_nci1_bench.lrnn (hidden 32, 3361 parameters) on NCI1
(4110 graphs, ../shared/datasets/tu/NCI1), trained with

  mpirun --bind-to core -np N <build>/lrnn train TEMPLATE --dataset tu:NCI1 --loss crossentropy
         --batch-size B --epochs E --json          (OMP_NUM_THREADS=1: one thread per rank)

for N = 1 and 2 (--ranks). Each run's epoch time is the minimum over its epochs; printed are
the speed-up over one rank and rank 0's split of the training steps: forward + backward of
its samples, waiting for the slower rank (load imbalance), and the gradient allreduce
itself (timing.step_compute_s / imbalance_wait_s / allreduce_s of `lrnn train --json`), and
the work balance: the plan values all ranks computed over those of each step's busiest rank
(timing.work), i.e. the speed-up the split of the batches allows on idle cores — N when
every step is split evenly, and independent of the machine's load.
Every run must end with the same training loss (the sums are exact). Writes
bench/results/distributed.json. Without MPI in the build (or no mpirun) it says so and
fails.

--big-graph: one big sample partitioned over the ranks instead (docs/distributed.md "One
sample over many ranks"): the 2-layer GCN of examples/big_graphs/gcn.lrnn on the planted
graph --graph (default the 200k-node / 2M-edge one, written by
examples/big_graphs/planted_partition.py --nodes 200000 --degree 10 --seed 1 if missing),
float64, the whole graph per step. Printed per rank count against the one-rank run: the
loss's relative difference, the busiest rank's share of the work (plan values; and of the
values the passes computed, timing.computed: without the data, the ghosts and the sums of
data alone, and the share all ranks computed together), each rank's peak RSS over one rank's, the facts each rank held and the edge cut, and the epoch's
speed-up. --repeat R runs the rank counts R times in turn (1, 2, 1, 2, ...) and prints each
round's ratios and the median speed-up. Writes bench/results/distributed_big_graph.json.

--big-graph --grid WxH: the graph is a W x H grid instead (each node's 4 neighbours; 16
seeded features and a binary label per node), written as an .npz by
examples/big_graphs/grid_graph.py and trained with
examples/big_graphs/gcn_arrays.lrnn from `--dataset npz:`: each rank reads the arrays and
builds only its part of the facts (load_npz_graph_share), which on a grid, unlike the
planted graph (an expander: a rank's part within 2 hops is all of it), is a little over
1/N of them. Each row prints the facts each rank built (partition.built_facts). Writes
bench/results/distributed_big_graph_grid.json.

--big-graph --query-batch-size B: mini-batches of B queries instead of the whole graph per
step. The baseline is then one process without MPI, whose steps run their batches'
supports (docs/big_graphs.md "Mini-batches of queries"; its peak RSS measured from outside
the process); the ranks take the same steps, each running its whole part
(docs/distributed.md "One sample over many ranks").
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "templates", "gcn_nci1_bench.lrnn")
BIG_TEMPLATE = os.path.join(HERE, "..", "examples", "big_graphs", "gcn.lrnn")
BIG_GRAPH = "/tmp/lrnn_big_graphs/planted_n200000_d10_s1"
ARRAYS_TEMPLATE = os.path.join(HERE, "..", "examples", "big_graphs", "gcn_arrays.lrnn")


def big_graph_files(prefix: str) -> None:
    if os.path.exists(prefix + ".examples.txt") and os.path.exists(prefix + ".queries.txt"):
        return
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "..", "examples", "big_graphs", "planted_partition.py"),
                    "--nodes", "200000", "--degree", "10", "--seed", "1", "--out", prefix], check=True)


def grid_npz(shape: str) -> str:
    """The W x H grid of --grid as an .npz (written once by examples/big_graphs/grid_graph.py,
    float32 features): its path."""
    width, height = (int(v) for v in shape.lower().split("x"))
    path = f"/tmp/lrnn_big_graphs/grid_{width}x{height}.npz"
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(HERE, "..", "examples", "big_graphs", "grid_graph.py"),
                        "--width", str(width), "--height", str(height), "--float32", "--out", path], check=True)
    return path


def mpirun_train(args, ranks: int, train_args: list) -> tuple:
    """`mpirun -np ranks lrnn train <train_args> --json`, one thread per rank: (report, None),
    or (None, the failed run's row)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", args.bind_to, "-np", str(ranks), os.path.join(args.build, "lrnn"),
           "train"] + train_args + ["--lr", str(args.lr), "--epochs", str(args.epochs), "--seed", str(args.seed),
                                    "--json"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    j = benchlib.last_json_object(run.stdout)
    if run.returncode != 0 or not j:
        return None, {"ranks": ranks, "available": False, "reason": (run.stderr or run.stdout).strip()[-500:]}
    return j, None


def plain_train(args, train_args: list) -> tuple:
    """`lrnn train <train_args> --json` in one process without MPI: (report with
    ranks.max_rss_mb measured from outside, None), or (None, the failed run's row)."""
    cmd = [os.path.join(args.build, "lrnn"), "train"] + train_args + [
        "--lr", str(args.lr), "--epochs", str(args.epochs), "--seed", str(args.seed), "--json"]
    j, error, rss = benchlib.run_json(cmd, {"OMP_NUM_THREADS": str(args.threads)}, args.timeout)
    if j is None:
        return None, {"ranks": 1, "available": False, "reason": error}
    j["ranks"] = {"max_rss_mb": [round(rss)]}
    return j, None


def run_big_graph(args, ranks: int) -> dict:
    train_args = ([ARRAYS_TEMPLATE, "--dataset", "npz:" + grid_npz(args.grid)] if args.grid else
                  [BIG_TEMPLATE, "-e", args.graph + ".examples.txt", "-q", args.graph + ".queries.txt"])
    if args.query_batch_size:
        train_args += ["--query-batch-size", str(args.query_batch_size)]
    # In query batches one rank would be a partition of one part: the baseline is one process's own steps.
    j, failed = (plain_train(args, train_args) if ranks == 1 and args.query_batch_size
                 else mpirun_train(args, ranks, train_args))
    if failed:
        return failed
    t = j["timing"]
    return {"ranks": ranks, "available": True, "epoch_min_s": min(t["epochs_s"]), "epochs_s": t["epochs_s"],
            "build_s": t["build_s"], "loss": j["loss"], "history": [h["train"]["loss"] for h in j["history"]],
            "work": t.get("work"), "computed": t.get("computed"), "allreduce_bytes": t.get("allreduce_bytes"),
            "max_rss_mb": j["ranks"]["max_rss_mb"], "exchange_s": t.get("exchange_s"),
            "exchange_bytes": t.get("exchange_bytes"), "partition": j["ranks"].get("partition"),
            "steps": t.get("steps")}


def big_graph_round(args) -> list:
    """One run per rank count of --ranks, in order; ratios against this round's one rank."""
    rows = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        row = run_big_graph(args, ranks)
        rows.append(row)
        if not row["available"]:
            print(f"{ranks} rank(s): failed: {row['reason']}", flush=True)
            continue
        one = rows[0] if rows[0].get("available") and rows[0]["ranks"] == 1 else None
        line = f"{ranks} rank(s): epoch {row['epoch_min_s']:.3f} s (min of {args.epochs})  loss {row['loss']:.12g}"
        if one and ranks > 1:
            row["loss_rel_diff"] = max(abs(a - b) / abs(b) for a, b in zip(row["history"], one["history"]))
            if one.get("work"):  # one process without MPI (query batches) counts no work
                row["work_share_max_rank"] = row["work"]["max_rank"] / one["work"]["total"]
            if row.get("computed") and one.get("computed"):
                row["computed_share_max_rank"] = row["computed"]["max_rank"] / one["computed"]["total"]
                row["computed_total_share"] = row["computed"]["total"] / one["computed"]["total"]
            row["rss_share"] = [m / one["max_rss_mb"][0] for m in row["max_rss_mb"]]
            row["speedup"] = one["epoch_min_s"] / row["epoch_min_s"]
            part = row["partition"] or {}
            computed = (f" (of the values computed: {row['computed_share_max_rank'] * 100:.1f}%, all ranks "
                        f"{row['computed_total_share'] * 100:.1f}%)") if "computed_share_max_rank" in row else ""
            work = (f"  busiest rank's work {row['work_share_max_rank'] * 100:.1f}%"
                    if "work_share_max_rank" in row else f"  {row['steps']} steps")
            line += (f"  | loss rel. diff {row['loss_rel_diff']:.2g}{work}"
                     f"{computed}"
                     f"  RSS {[round(x * 100, 1) for x in row['rss_share']]}% of one rank's"
                     f"  speed-up {row['speedup']:.2f}x  | held facts {part.get('held_facts')} of {part.get('facts', [0])[0]}"
                     f" (built {part.get('built_facts')})"
                     f", edge cut {part.get('cut_facts', [0])[0]} facts, METIS {part.get('metis', [0])[0]}"
                     f", ghosts {part.get('ghosts')} (cut at ghosts: {part.get('ghost_exchange')}), rank 0 sent "
                     f"{(row.get('exchange_bytes') or 0) / 1e6:.1f} MB of ghost values and gradients")
        print(line + f"  (peak RSS MB {row['max_rss_mb']})", flush=True)
    return rows


def big_graph(args) -> int:
    if not args.grid:
        big_graph_files(args.graph)
    # --repeat rounds alternate the rank counts, so that the machine's drift (this VM's epochs
    # move by +-30% from minute to minute) falls on both sides of each ratio alike.
    rounds = []
    for r in range(args.repeat):
        if args.repeat > 1:
            print(f"round {r + 1} of {args.repeat}", flush=True)
        rounds.append(big_graph_round(args))
    rows = rounds[0]
    summary = {}
    for k, row in enumerate(rows):
        if row.get("ranks", 1) > 1 and all(len(rd) > k and "speedup" in rd[k] for rd in rounds):
            speedups = sorted(rd[k]["speedup"] for rd in rounds)
            rss = [max(rd[k]["rss_share"]) for rd in rounds]
            summary[str(row["ranks"])] = {"speedups": speedups, "median_speedup": speedups[len(speedups) // 2],
                                          "max_rss_share": rss}
            if args.repeat > 1:
                print(f"{row['ranks']} ranks over {args.repeat} rounds: speed-ups "
                      f"{', '.join(f'{x:.2f}x' for x in speedups)} (median {speedups[len(speedups) // 2]:.2f}x); "
                      f"busiest rank's RSS {', '.join(f'{x * 100:.1f}%' for x in rss)} of one rank's", flush=True)
    ok = all(r["available"] and r.get("loss_rel_diff", 0) <= 1e-9 for rd in rounds for r in rd)
    graph = f"grid_{args.grid}" if args.grid else os.path.basename(args.graph)
    result = {**benchlib.header(), "benchmark": "distributed_big_graph", "graph": graph,
              "threads_per_rank": args.threads, "bind_to": args.bind_to, "epochs": args.epochs,
              "query_batch_size": args.query_batch_size, "rows": rows,
              "rounds": rounds, "summary": summary, "load_average": os.getloadavg()[0]}
    out = args.output or os.path.join(benchlib.RESULTS,
                                      "distributed_big_graph_grid.json" if args.grid else "distributed_big_graph.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fp:
        json.dump(result, fp, indent=1)
    print(f"load average {os.getloadavg()[0]:.2f}; wrote {os.path.relpath(out)}")
    return 0 if ok else 1


def run_ranks(args, ranks: int) -> dict:
    j, failed = mpirun_train(args, ranks, [TEMPLATE, "--dataset", "tu:" + args.dataset, "--loss", "crossentropy",
                                           "--batch-size", str(args.batch_size)])
    if failed:
        return failed
    t = j["timing"]
    step_s = t["step_compute_s"] + t["imbalance_wait_s"] + t["allreduce_s"]
    return {"ranks": ranks, "available": True, "epoch_min_s": min(t["epochs_s"]), "epochs_s": t["epochs_s"],
            "train_s": t["train_s"], "build_s": t["build_s"], "step_compute_s": t["step_compute_s"],
            "imbalance_wait_s": t["imbalance_wait_s"], "allreduce_s": t["allreduce_s"],
            "allreduce_share": t["allreduce_s"] / step_s if step_s else 0.0,
            "wait_share": t["imbalance_wait_s"] / step_s if step_s else 0.0,
            "loss": j["loss"], "accuracy": j["accuracy"], "parameters": j["parameters"], "samples": j["samples"],
            # Plan values computed by all ranks over those of each step's busiest rank: the
            # speed-up the split of the batches allows on idle cores, whatever the load.
            "work_balance": t["work"]["total"] / t["work"]["max_rank"] if t["work"]["max_rank"] else 0.0,
            "examples_parsed": j["ranks"]["examples_parsed"], "max_rss_mb": j["ranks"]["max_rss_mb"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--dataset", default=os.path.join(benchlib.DATASETS, "tu", "NCI1"))
    parser.add_argument("--ranks", default="1,2", help="comma-separated rank counts")
    parser.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank")
    parser.add_argument("--bind-to", default="core", choices=["core", "socket", "none"],
                        help="mpirun --bind-to: core keeps each one-thread rank on its own core (no migrations)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--output", default=None,
                        help="result JSON (default bench/results/distributed.json, or distributed_big_graph.json "
                             "with --big-graph)")
    parser.add_argument("--big-graph", action="store_true", help="one big sample partitioned over the ranks")
    parser.add_argument("--graph", default=BIG_GRAPH, help="--big-graph: path prefix of the planted graph's files")
    parser.add_argument("--grid", default="", metavar="WxH",
                        help="--big-graph: a W x H grid from an .npz instead of the planted graph (each rank builds "
                             "only its part of the facts)")
    parser.add_argument("--query-batch-size", type=int, default=0,
                        help="--big-graph: mini-batches of this many queries (the baseline: one process without MPI)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="--big-graph: rounds of --ranks, alternating (ratios per round, their median)")
    args = parser.parse_args()
    args.dataset = os.path.abspath(args.dataset)
    if not shutil.which("mpirun"):
        print("distributed: mpirun not found (apt-get install openmpi-bin libopenmpi-dev, then rebuild)")
        return 1
    warning = benchlib.load_warning()
    if warning:
        print(warning)
    if args.big_graph:
        return big_graph(args)
    rows = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        row = run_ranks(args, ranks)
        if not row["available"]:
            print(f"{ranks} rank(s): failed: {row['reason']}")
            rows.append(row)
            continue
        if rows and rows[0].get("available"):
            row["speedup"] = rows[0]["epoch_min_s"] / row["epoch_min_s"]
        print(f"{ranks} rank(s) x {args.threads} thread(s): epoch {row['epoch_min_s']:.3f} s (min of {args.epochs})"
              + (f"  speed-up {row['speedup']:.2f}x" if "speedup" in row else "")
              + f"  | step: compute {row['step_compute_s']:.3f} s, imbalance wait {row['imbalance_wait_s']:.3f} s"
              f" ({row['wait_share'] * 100:.1f}%), allreduce {row['allreduce_s'] * 1e3:.2f} ms"
              f" ({row['allreduce_share'] * 100:.2f}%)  | work balance {row['work_balance']:.3f}"
              f" (examples parsed per rank {row['examples_parsed']}, peak RSS MB {row['max_rss_mb']})"
              f"  loss {row['loss']:.12g}", flush=True)
        rows.append(row)
    ok = all(r["available"] for r in rows)
    if ok and len({r["loss"] for r in rows}) != 1:
        print("distributed: the runs ended with different losses: " + ", ".join(str(r["loss"]) for r in rows))
        ok = False
    result = {**benchlib.header(), "benchmark": "distributed", "dataset": os.path.basename(args.dataset),
              "threads_per_rank": args.threads, "bind_to": args.bind_to, "epochs": args.epochs, "batch_size": args.batch_size, "rows": rows,
              "load_warning": warning}
    out = args.output or os.path.join(benchlib.RESULTS, "distributed.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fp:
        json.dump(result, fp, indent=1)
    print(f"wrote {os.path.relpath(out)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
