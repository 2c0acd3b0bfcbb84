#!/usr/bin/env python3
"""One big sample partitioned over MPI ranks (docs/distributed.md "One sample over many
ranks"), run by the ctest `distributed_partition`:

- a planted-partition graph of 300 nodes (one example, one query per node), the 2-layer GCN
  of examples/big_graphs/gcn.lrnn and the 3-layer sage3.lrnn beside this script, float64: 1,
  2 and 3 ranks and one process without MPI train the same weights and losses (to 1e-12
  relative; the actual differences are printed), the sample is cut at ghost atoms (their
  values and gradients exchanged layer by layer) and the busiest rank computes well under
  one rank's share of the plan values;
- the same graph from arrays (`--dataset npz:`) partitions alike, and each rank builds only
  its part of an array graph's facts (on a grid, a little over half of them with 2 ranks);
- a checkpoint of 2 ranks continues on 3 as one process continues its own;
- a rank killed mid-training ends the job, naming the rank;
- query mini-batches (`--query-batch-size`, with and without a query split): 1, 2 and 3
  ranks take one process's steps (the same batches, weights, losses and outputs to 1e-12);
- a template the partition cannot make exact is refused (exit 2) naming its rule's
  file:line (exit 1, as a semantic error in one process), and so is neighbour sampling
  (`--fanout`) of query mini-batches.

Usage: check_partition.py BUILD_DIR   (from anywhere)
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpi_checks import FAILURES, check, mpirun  # beside this script

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-12


def weights(path):
    model = json.loads(Path(path).read_text())
    return {p["name"]: p["values"] for p in model["parameters"]}


def relative_difference(a, b):
    assert a.keys() == b.keys(), f"different parameters: {sorted(a.keys() ^ b.keys())}"
    scale = max(abs(x) for name in a for x in a[name])
    return max(abs(x - y) for name in a for x, y in zip(a[name], b[name], strict=True)) / scale


def losses(stdout):
    report = json.loads(stdout.strip().splitlines()[-1])
    return [h["train"]["loss"] for h in report["history"]], report


def same_training_over_ranks(lrnn, tmp, args):
    plain_model = tmp / "plain.json"
    r = subprocess.run([str(lrnn)] + [str(a) for a in args + ["--save", plain_model, "--json"]], capture_output=True,
                       text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
    check(r.returncode == 0, f"one process trains {r.stderr[-1500:]}")
    if r.returncode:
        return
    plain_losses, plain = losses(r.stdout)
    plain_weights = weights(plain_model)
    by_ranks, work, computed_by_one_rank = {}, {}, {}
    for ranks in (1, 2, 3):
        out = tmp / f"part_{ranks}.json"
        r = mpirun(lrnn, ranks, args + ["--save", out, "--json"])
        check(r.returncode == 0, f"{ranks} rank(s) train (exit {r.returncode}) {r.stderr[-2000:] if r.returncode else ''}")
        if r.returncode:
            continue
        rank_losses, report = losses(r.stdout)
        by_ranks[ranks] = weights(out)
        if ranks > 1 and 1 in by_ranks:
            d = relative_difference(by_ranks[1], by_ranks[ranks])
            check(d <= TOLERANCE, f"{ranks} ranks vs 1 rank: max relative weight difference {d:.3g} <= {TOLERANCE}")
        dw = relative_difference(plain_weights, weights(out))
        dl = max(abs(a - b) / abs(a) for a, b in zip(plain_losses, rank_losses, strict=True))
        check(dw <= TOLERANCE, f"{ranks} rank(s) vs one process: max relative weight difference {dw:.3g} <= {TOLERANCE}")
        check(dl <= TOLERANCE, f"{ranks} rank(s) vs one process: max relative loss difference over "
                               f"{len(rank_losses)} epochs {dl:.3g} <= {TOLERANCE}")
        check(report["loss"] == report["loss"] and abs(report["loss"] - plain["loss"]) <= TOLERANCE * abs(plain["loss"]),
              f"{ranks} rank(s): the final evaluation's loss {report['loss']!r} is one process's {plain['loss']!r}")
        outputs = report["outputs"]
        check([o["query"] for o in outputs] == [o["query"] for o in plain["outputs"]],
              f"{ranks} rank(s): rank 0 reports every output in the queries' order")
        # One number per output (a scalar query; "output" is a list for a bigger value).
        dv = max((abs(o["output"] - p["output"]) / max(abs(p["output"]), 1e-300)
                  for o, p in zip(outputs, plain["outputs"])), default=1.0)
        check(dv <= TOLERANCE, f"{ranks} rank(s): each output's value is one process's (max relative difference "
                               f"{dv:.3g} <= {TOLERANCE})")
        if ranks > 1:
            part = report["ranks"].get("partition")
            check(part is not None, f"{ranks} ranks: --json reports the partition per rank")
            if part:
                queries = part["owned_queries"]
                check(sum(queries) == 300 and all(q > 0 for q in queries),
                      f"{ranks} ranks: the queries are split {queries}")
                held, total = part["held_facts"], part["facts"]
                check(all(h < t for h, t in zip(held, total)), f"{ranks} ranks: each rank holds a part of the facts "
                                                                f"{held} of {total[0]}")
                print(f"     {ranks} ranks: work {report['timing']['work']}, cut facts {part['cut_facts'][0]}, "
                      f"metis {part['metis'][0]}, ghosts {part['ghosts']}")
                # Cut at ghosts: each atom computed by its owner, values sent layer by layer.
                check(part["ghost_exchange"] == [1] * ranks and all(g > 0 for g in part["ghosts"]),
                      f"{ranks} ranks: the sample is cut at ghost atoms {part['ghosts']}")
                check(report["timing"]["exchange_bytes"] > 0,
                      f"{ranks} ranks: rank 0 sent {report['timing']['exchange_bytes']} bytes of ghost values and gradients")
                if 1 in work:
                    share = report["timing"]["work"]["max_rank"] / work[1]
                    check(share < 0.8 * 2 / ranks, f"{ranks} ranks: the busiest rank computes {share:.1%} of one rank's "
                                                   f"plan values (the halo of a radius computed 139% for 2 ranks)")
                    # Cut at ghosts, every atom is computed once, by its owner: the ranks'
                    # computed values add up to no more than one rank's (a part's plan may
                    # choose otherwise than the whole's, e.g. summing a layer's data once
                    # before the steps: here the totals are 75-95% of one rank's; on the
                    # 200k-node graph of bench/distributed.py they are equal).
                    computed = report["timing"]["computed"]
                    check(computed["total"] <= computed_by_one_rank[1],
                          f"{ranks} ranks: the ranks computed {computed['total']} values in all, one rank "
                          f"{computed_by_one_rank[1]}")
                    check(sum(part["computed_values_per_step"]) * len(rank_losses) == computed["total"],
                          f"{ranks} ranks: the ranks' computed values per step {part['computed_values_per_step']} "
                          f"over {len(rank_losses)} steps make timing.computed")
        else:
            print(f"     1 rank: work {report['timing']['work']}, computed {report['timing']['computed']}")
            work[1] = report["timing"]["work"]["total"]
            computed_by_one_rank[1] = report["timing"]["computed"]["total"]


def exchange_in_slices(lrnn, tmp, args):
    """A ghost exchange bigger than a slice goes in several rounds (each rank's buffer holds
    one slice): the same training with slices of 7 entries per pair of ranks as with whole
    layers, in more alltoallv rounds."""
    runs = {}
    for name, env in (("whole", None), ("sliced", {"LRNN_TEST_EXCHANGE_SLICE": "7"})):
        out = tmp / f"slices_{name}.json"
        r = mpirun(lrnn, 3, args + ["--save", out, "--json"], extra_env=env)
        check(r.returncode == 0, f"3 ranks, {name} exchanges, train {r.stderr[-1500:] if r.returncode else ''}")
        if r.returncode:
            return
        rank_losses, report = losses(r.stdout)
        runs[name] = (rank_losses, weights(out), report["timing"]["exchange_rounds"])
    (whole_losses, whole_w, whole_rounds), (sliced_losses, sliced_w, sliced_rounds) = runs["whole"], runs["sliced"]
    check(sliced_rounds > 2 * whole_rounds,
          f"slices of 7 entries take more exchange rounds ({sliced_rounds}) than whole layers ({whole_rounds})")
    dw = relative_difference(whole_w, sliced_w)
    dl = max(abs(a - b) / abs(a) for a, b in zip(whole_losses, sliced_losses, strict=True))
    check(dw <= TOLERANCE and dl <= TOLERANCE,
          f"sliced exchanges train as whole ones: weights {dw:.3g}, losses {dl:.3g} <= {TOLERANCE}")


def derived_facts_keep_the_halo(lrnn, tmp, graph, args):
    """An example fact of a derived predicate (h1's, here) mixes into its atom's value: such
    a sample is not cut at ghosts but recomputed in halos, and trains as one process does,
    in query mini-batches too (each rank's whole part runs, the batch's queries seeded)."""
    text = Path(f"{graph}.examples.txt").read_text().rstrip()
    mixed = tmp / "mixed.examples.txt"
    mixed.write_text(text[:-1] + ", <[" + ", ".join(["0.1"] * 32) + "]> h1(n005).\n")
    for extra in ([], ["--query-batch-size", 32]):
        what = "derived facts" + (" in query batches" if extra else "")
        run = args[:2] + ["-e", mixed] + args[4:] + ["--epochs", 2, "--json"] + extra
        plain = subprocess.run([str(lrnn)] + [str(a) for a in run], capture_output=True, text=True,
                               env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
        two = mpirun(lrnn, 2, run)
        check(plain.returncode == 0 and two.returncode == 0, f"{what}: both train {two.stderr[-800:]}")
        if plain.returncode or two.returncode:
            continue
        (pl, p), (tl, t) = losses(plain.stdout), losses(two.stdout)
        check(t["ranks"]["partition"]["ghost_exchange"] == [0, 0], f"{what}: the sample keeps the halo")
        d = max(abs(a - b) / abs(b) for a, b in zip(tl + [t["loss"]], pl + [p["loss"]], strict=True))
        check(d <= TOLERANCE, f"{what}: 2 ranks' losses (each epoch's, the final) are one process's to {d:.3g}")


def train_one_and_two(lrnn, tmp, name, npz, epochs):
    """gcn_arrays.lrnn on `npz` in one process and on 2 ranks: their --json reports (None
    where a run failed; each failure is a check)."""
    args = ["train", ROOT / "examples/big_graphs/gcn_arrays.lrnn", "--dataset", f"npz:{npz}",
            "--epochs", epochs, "--lr", 0.01, "--seed", 3, "--json"]
    r = subprocess.run([str(lrnn)] + [str(a) for a in args], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
    check(r.returncode == 0, f"{name}: one process trains {r.stderr[-800:]}")
    m = mpirun(lrnn, 2, args)
    check(m.returncode == 0, f"{name}: 2 ranks train {m.stderr[-800:]}")
    if r.returncode != 0 or m.returncode != 0:
        return None
    (one, _), (two, report) = losses(r.stdout), losses(m.stdout)
    d = max(abs(a - b) / abs(a) for a, b in zip(one, two, strict=True))
    check(d <= TOLERANCE and "partition" in report["ranks"],
          f"{name}: 2 ranks vs one process: max relative loss difference {d:.3g} <= {TOLERANCE}")
    return report["ranks"]["partition"]


def arrays(lrnn, tmp, graph):
    """The same graph from arrays (--dataset npz:, gcn_arrays.lrnn) partitions alike, each rank
    building only its part of the facts (load_npz_graph_share)."""
    import numpy as np
    g = dict(np.load(f"{graph}.npz"))
    g["y"] //= 2  # the binary target of the text's queries
    for mask in ("train_mask", "val_mask", "test_mask"):
        g.pop(mask)  # no query split: the partition refuses one
    np.savez(tmp / "arrays.npz", **g)
    planted = train_one_and_two(lrnn, tmp, "arrays", tmp / "arrays.npz", 3)
    text = mpirun(lrnn, 2, ["train", ROOT / "examples/big_graphs/gcn.lrnn", "-e", f"{graph}.examples.txt",
                            "-q", f"{graph}.queries.txt", "--epochs", 1, "--json"])
    check(text.returncode == 0, f"arrays: the text's 2 ranks train {text.stderr[-800:]}")
    if planted and text.returncode == 0:  # (the planted graph's parts are all of it: the grid below shows a part)
        from_text = losses(text.stdout)[1]["ranks"]["partition"]
        check(all(b >= f for b, f in zip(from_text["built_facts"], from_text["facts"])),
              f"arrays: from text each rank builds the whole sample's facts and more ({from_text['built_facts']} "
              f"of {from_text['facts'][0]})")
    # A grid's balls stay near their parts: each rank builds only its part, a little over half.
    subprocess.run([sys.executable, str(ROOT / "examples/big_graphs/grid_graph.py"), "--width", "40", "--height", "15",
                    "--out", str(tmp / "grid.npz")], check=True, capture_output=True)
    grid = train_one_and_two(lrnn, tmp, "grid arrays", tmp / "grid.npz", 3)
    if grid:
        facts = grid["facts"][0]
        check(all(b <= 0.7 * facts for b in grid["built_facts"]) and grid["ghost_exchange"] == [1, 1],
              f"grid arrays: each of 2 ranks builds only its part of the facts ({grid['built_facts']} of {facts}; "
              f"held {grid['held_facts']})")


def resume_on_other_ranks(lrnn, tmp, args):
    """A checkpoint of 2 ranks continues on 3 as one process continues its own."""
    a, b = tmp / "resume_2_3.json", tmp / "resume_plain.json"
    r = mpirun(lrnn, 2, args + ["--epochs", 2, "--save", a])
    check(r.returncode == 0, f"resume: 2 ranks train 2 epochs {r.stderr[-800:] if r.returncode else ''}")
    r = mpirun(lrnn, 3, ["train", "--load", a] + args[2:] + ["--epochs", 2, "--save", a])
    check(r.returncode == 0, f"resume: 3 ranks continue 2 epochs {r.stderr[-800:] if r.returncode else ''}")
    for run in (args + ["--epochs", 2, "--save", b], ["train", "--load", b] + args[2:] + ["--epochs", 2, "--save", b]):
        r = subprocess.run([str(lrnn)] + [str(x) for x in run], capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
        check(r.returncode == 0, f"resume: one process trains 2 epochs {r.stderr[-800:] if r.returncode else ''}")
    d = relative_difference(weights(b), weights(a))
    check(d <= TOLERANCE, f"resume: 2 then 3 ranks vs one process twice: max relative weight difference {d:.3g}")


def query_batches_over_ranks(lrnn, tmp, args, rank_counts=(1, 2, 3), name="gcn", batch=32):
    """Query mini-batches of a partitioned sample: the batches are one process's (its shuffle,
    its cuts); each rank's step runs its share of the batch's support, the ghosts it reaches
    asked of their owners level by level, so 1, 2 and 3 ranks train one process's weights,
    epoch by epoch."""
    batches = args + ["--epochs", 4, "--query-batch-size", batch, "--json"]
    one = tmp / f"batches_plain_{name}.json"
    r = subprocess.run([str(lrnn)] + [str(a) for a in batches + ["--save", one]], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
    check(r.returncode == 0, f"query batches: one process trains {r.stderr[-800:]}")
    if r.returncode:
        return
    plain_losses, plain = losses(r.stdout)
    for ranks in rank_counts:  # one rank too: one sample whose queries come in batches is a part
        out = tmp / f"batches_{name}_{ranks}.json"
        m = mpirun(lrnn, ranks, batches + ["--save", out])
        check(m.returncode == 0, f"query batches: {ranks} rank(s) train {m.stderr[-800:]}")
        if m.returncode:
            continue
        rank_losses, report = losses(m.stdout)
        dw = relative_difference(weights(one), weights(out))
        dl = max(abs(a - b) / abs(a) for a, b in zip(plain_losses, rank_losses, strict=True))
        # Outputs relative to the largest (one near 0 would make its own relative difference noise).
        scale = max(abs(p["output"]) for p in plain["outputs"])
        dv = max(abs(o["output"] - p["output"]) for o, p in zip(report["outputs"], plain["outputs"], strict=True)) / scale
        check(max(dw, dl, dv) <= TOLERANCE,
              f"query batches ({name}): {ranks} rank(s) vs one process: max relative difference of the weights {dw:.3g}, "
              f"the losses of {len(rank_losses)} epochs {dl:.3g}, the outputs {dv:.3g} <= {TOLERANCE}")
        steps = report["timing"]["steps"]
        per_epoch = -(-300 // batch)
        check(steps == 4 * per_epoch, f"query batches ({name}): {ranks} rank(s) take {per_epoch} steps an epoch (300 "
                                      f"queries, {batch} a batch): {steps} in 4 epochs")
        part = report["ranks"].get("partition")
        check(part is not None and part["ghost_exchange"] == [1] * ranks,
              f"query batches ({name}): {ranks} rank(s) train the sample as parts cut at ghost atoms")
        if ranks > 1 and batch <= 4:  # a step runs the batch's support (32 queries' reach most of this graph)
            full = mpirun(lrnn, ranks, args + ["--epochs", 1, "--json"])  # one step: every part whole
            whole = json.loads(full.stdout.strip().splitlines()[-1])["timing"]["work"]["total"] if not full.returncode else 0
            per_step = report["timing"]["work"]["total"] / steps
            check(0 < per_step < whole / 2, f"query batches ({name}): {ranks} ranks compute {per_step:.0f} plan values "
                                            f"a step, their whole parts {whole}")


def query_split_over_ranks(lrnn, args, extra=()):
    """A query split (PyG's node masks) of a partitioned sample: only training queries give
    gradient; every epoch's validation and test metrics, the final split metrics and the
    epoch early stopping picks are one process's on 1, 2 and 3 ranks (`extra`: in query
    mini-batches too)."""
    split = args + ["--epochs", 6, "--query-split", "0.6,0.2,0.2", "--patience", 2, "--json"] + list(extra)
    r = subprocess.run([str(lrnn)] + [str(a) for a in split], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=180)
    check(r.returncode == 0, f"query split: one process trains {r.stderr[-800:]}")
    if r.returncode:
        return
    plain = json.loads(r.stdout.strip().splitlines()[-1])

    def numbers(report):
        per_epoch = [(h[part]["loss"], h[part]["accuracy"], h[part].get("auc", 0.0))
                     for h in report["history"] for part in ("train", "val", "test")]
        final = [(report["splits"][part]["loss"], report["splits"][part]["accuracy"], report["splits"][part]["count"])
                 for part in ("train", "val", "test")]
        return per_epoch, final

    plain_epochs, plain_final = numbers(plain)
    check(plain["splits"]["val"]["count"] > 0 and plain["splits"]["test"]["count"] > 0,
          "query split: one process reports validation and test queries")
    what = f"query split{' ' + ' '.join(map(str, extra)) if extra else ''}"
    for ranks in (1, 2, 3):  # one rank: a sharded set of one sample, not partitioned (unless in batches)
        m = mpirun(lrnn, ranks, split)
        check(m.returncode == 0, f"{what}: {ranks} ranks train {m.stderr[-800:]}")
        if m.returncode:
            continue
        report = json.loads(m.stdout.strip().splitlines()[-1])
        epochs, final = numbers(report)
        check(len(epochs) == len(plain_epochs) and report.get("best", {}).get("epoch") == plain.get("best", {}).get("epoch"),
              f"{what}: {ranks} ranks train as many epochs and pick the same best epoch "
              f"({report.get('best', {}).get('epoch')} vs {plain.get('best', {}).get('epoch')})")
        d = max((abs(a - b) / max(abs(b), 1e-300) for x, y in zip(epochs + final, plain_epochs + plain_final)
                 for a, b in zip(x, y, strict=True)), default=1.0)
        check(d <= TOLERANCE, f"{what}: {ranks} ranks' per-epoch and final split metrics are one process's "
                              f"(max relative difference {d:.3g} <= {TOLERANCE})")


def killed_rank(lrnn, args):
    t0 = time.monotonic()
    r = mpirun(lrnn, 2, args + ["--epochs", 30], extra_env={"LRNN_TEST_KILL_RANK": "1", "LRNN_TEST_KILL_EPOCH": "3"},
               timeout=90)
    seconds = time.monotonic() - t0
    check(r.returncode != 0, f"killed rank: the job fails (exit {r.returncode})")
    check(seconds < 30, f"killed rank: the job ends within seconds ({seconds:.1f} s)")
    check("rank 1" in r.stderr, "killed rank: the message names rank 1")


def refusals(lrnn, tmp, graph):
    bad = tmp / "two_hops.lrnn"
    bad.write_text("h(X) :- {4,16} x(Z), *edge(X, Y), *edge(Y, Z).\nout(X) :- {1,4} h(X).\n")
    r = mpirun(lrnn, 2, ["train", bad, "-e", f"{graph}.examples.txt", "-q", f"{graph}.queries.txt", "--epochs", 1])
    # A refusal ends the job as any semantic error does in one process (exit 1; 2 is for
    # usage and syntax errors), every rank naming the rule.
    check(r.returncode == 1 and f"{bad}:1:" in r.stderr and "variable Z shares no body literal with X" in r.stderr,
          f"a template failing the check is refused (exit {r.returncode}), naming its rule {r.stderr[-600:]}")
    r = mpirun(lrnn, 2, ["train", ROOT / "examples/big_graphs/gcn.lrnn", "-e", f"{graph}.examples.txt",
                         "-q", f"{graph}.queries.txt", "--epochs", 1, "--query-batch-size", 32, "--fanout", 5])
    check(r.returncode == 1 and "--fanout (sampled neighbours) cannot train one sample partitioned" in r.stderr,
          f"neighbour sampling of a partitioned sample's query batches is refused (exit {r.returncode}) "
          f"{r.stderr[-600:]}")


def main():
    build = Path(sys.argv[1]).resolve()
    lrnn = build / "lrnn"
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        graph = tmp / "planted"
        subprocess.run([sys.executable, str(ROOT / "examples/big_graphs/planted_partition.py"), "--nodes", "300",
                        "--degree", "4", "--seed", "1", "--out", str(graph)], check=True, capture_output=True)
        args = ["train", ROOT / "examples/big_graphs/gcn.lrnn", "-e", f"{graph}.examples.txt",
                "-q", f"{graph}.queries.txt", "--lr", 0.01, "--seed", 3]
        same_training_over_ranks(lrnn, tmp, args + ["--epochs", 5])
        # Three layers, ghosts exchanged after layers 1 and 2, rules with weights of their own.
        three = ["train", Path(__file__).resolve().parent / "sage3.lrnn"] + args[2:]
        same_training_over_ranks(lrnn, tmp, three + ["--epochs", 3])
        exchange_in_slices(lrnn, tmp, three + ["--epochs", 3])
        derived_facts_keep_the_halo(lrnn, tmp, graph, args)
        arrays(lrnn, tmp, graph)
        resume_on_other_ranks(lrnn, tmp, args)
        query_split_over_ranks(lrnn, args)
        query_batches_over_ranks(lrnn, tmp, args)
        query_batches_over_ranks(lrnn, tmp, three, (2, 3), "sage3", batch=4)  # ghosts asked at two levels
        query_split_over_ranks(lrnn, args, ["--query-batch-size", 32])
        killed_rank(lrnn, args)
        refusals(lrnn, tmp, graph)
    if FAILURES:
        print(f"{len(FAILURES)} partition check(s) failed")
        return 1
    print("all partition checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
