#!/usr/bin/env python3
"""Data-parallel training over MPI (docs/distributed.md), run by the ctest `distributed`:

- 1, 2 and 3 ranks train the same weights (to 1e-12; the sums are exact, so in fact the same
  bits) on mutagenesis and on a transformer encoder (the histogram task, with a test set);
  rank 0 alone prints;
- a checkpoint written by 2 ranks resumes on 3 ranks as it does on 1;
- a rank killed mid-training ends the job within seconds, naming the rank, and the last
  checkpoint (written atomically every epoch) still loads;
- bad data in one rank's shard ends the job with a message naming the rank and the cause;
- each rank parses only its share of the examples (examples files and TU datasets): the
  per-rank counts of `lrnn train --json` ("ranks"), and a syntax error in rank 1's share
  that only rank 1 reports, naming file:line.

Usage: check_distributed.py BUILD_DIR   (from anywhere; data from ../shared next to the repo)
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
DATA = ROOT.parent / "shared" / "datasets"
MUTAGENESIS = DATA / "neuralogic" / "molecules" / "mutagenesis"
TOLERANCE = 1e-12


def weights(path):
    model = json.loads(Path(path).read_text())
    return {p["name"]: p["values"] for p in model["parameters"]}, model["training"]


def max_difference(a, b):
    assert a.keys() == b.keys(), f"different parameters: {sorted(a.keys() ^ b.keys())}"
    return max(abs(x - y) for name in a for x, y in zip(a[name], b[name], strict=True))


def same_weights_over_ranks(lrnn, tmp, name, args):
    """Trains with 1, 2 and 3 ranks; the weights must agree to TOLERANCE."""
    runs = {}
    for ranks in (1, 2, 3):
        out = tmp / f"{name}_{ranks}.json"
        r = mpirun(lrnn, ranks, args + ["--save", out])
        check(r.returncode == 0, f"{name}: {ranks} rank(s) train (exit {r.returncode}) {r.stderr[-2000:] if r.returncode else ''}")
        if r.returncode:
            return
        check(r.stdout.count("trained ") == 1, f"{name}: {ranks} rank(s): rank 0 alone prints the summary")
        runs[ranks] = (weights(out)[0], r.stdout)
    for ranks in (2, 3):
        d = max_difference(runs[1][0], runs[ranks][0])
        check(d <= TOLERANCE, f"{name}: 1 vs {ranks} ranks: max weight difference {d:.3g} <= {TOLERANCE}")
        metrics = lambda out: [line for line in out.splitlines() if line.startswith(("train:", "test:"))]
        check(metrics(runs[ranks][1]) == metrics(runs[1][1]) != [],
              f"{name}: 1 vs {ranks} ranks: the same metrics are printed")
    # One process without MPI sums in floating point (another order): close, not bitwise.
    plain = tmp / f"{name}_plain.json"
    r = subprocess.run([str(lrnn)] + [str(a) for a in args + ["--save", plain]], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=120)
    check(r.returncode == 0, f"{name}: trains without mpirun")
    d = max_difference(runs[1][0], weights(plain)[0])
    check(d <= 1e-8, f"{name}: without mpirun vs 1 rank: max weight difference {d:.3g} <= 1e-8 (rounding only)")


def resume_with_other_ranks(lrnn, tmp, args):
    first = args + ["--epochs", 2]
    a, b = tmp / "resume_a.json", tmp / "resume_b.json"
    for ranks, path in ((2, a), (1, b)):
        r = mpirun(lrnn, ranks, ["train"] + first + ["--save", path])
        check(r.returncode == 0, f"resume: {ranks} rank(s) train 2 epochs")
    for ranks, path in ((3, a), (1, b)):
        r = mpirun(lrnn, ranks, ["train", "--load", path, "--epochs", 2, "--save", path] + args[1:])
        check(r.returncode == 0, f"resume: {ranks} rank(s) continue 2 epochs {r.stderr[-1500:] if r.returncode else ''}")
    (wa, ta), (wb, tb) = weights(a), weights(b)
    check(ta["epochs_trained"] == tb["epochs_trained"] == 4, "resume: 4 epochs trained in both")
    d = max_difference(wa, wb)
    check(d <= TOLERANCE, f"resume: 2 ranks then 3 vs 1 then 1: max weight difference {d:.3g} <= {TOLERANCE}")


def killed_rank(lrnn, tmp, args):
    checkpoint = tmp / "killed.json"
    t0 = time.monotonic()
    r = mpirun(lrnn, 2, ["train"] + args + ["--epochs", 20, "--save", checkpoint, "--checkpoint-every", 1],
               extra_env={"LRNN_TEST_KILL_RANK": "1", "LRNN_TEST_KILL_EPOCH": "3"}, timeout=60)
    seconds = time.monotonic() - t0
    check(r.returncode != 0, f"killed rank: the job fails (exit {r.returncode})")
    check(seconds < 20, f"killed rank: the job ends within seconds ({seconds:.1f} s)")
    check("rank 1" in r.stderr, "killed rank: the message names rank 1")
    _, training = weights(checkpoint)
    check(training["epochs_trained"] == 2, f"killed rank: the checkpoint holds the last complete epoch (2): {training['epochs_trained']}")
    e = subprocess.run([str(lrnn), "eval", str(checkpoint)] + [str(a) for a in args[1:5]], capture_output=True, text=True)
    check(e.returncode == 0 and "loss" in e.stdout, f"killed rank: the checkpoint loads and evaluates {e.stderr[-500:]}")


def bad_shard(lrnn, tmp):
    examples = tmp / "bad_xor.txt"
    examples.write_text("<0> xor :- <0> a, <0> b.\n<1> xor :- <0> a, <1> b.\n"
                        "<1> xor :- <1> a, <0> b.\n<0> xor :- <[1, 1]> a, <1> b.\n")
    t0 = time.monotonic()
    r = mpirun(lrnn, 2, ["train", ROOT / "examples/templates/xor.lrnn", "-e", examples, "--epochs", 3], timeout=60)
    check(r.returncode != 0 and time.monotonic() - t0 < 20, "bad shard: the job fails at once")
    # Each sample is planned on its own: the 2-vector `a` is refused under the weight of
    # the rule that reads it (a merged plan said the shards' `a` values differ in shape).
    check("rank 1 of 2 failed" in r.stderr and "literal a: weight shape 3x1 cannot apply to input shape 2x1" in r.stderr,
          "bad shard: the message names rank 1 and the cause")


def shares_parsed(lrnn, name, args, total):
    """Each rank parses and holds only its block of the examples (`--json`'s "ranks")."""
    for ranks in (2, 3):
        r = mpirun(lrnn, ranks, args + ["--epochs", 1, "--json"])
        check(r.returncode == 0, f"{name}: {ranks} ranks train with --json {r.stderr[-1500:] if r.returncode else ''}")
        if r.returncode:
            continue
        shares = json.loads(r.stdout.strip().splitlines()[-1])["ranks"]
        parsed, held = shares["examples_parsed"], shares["samples_held"]
        # Blocks of about equal work (bytes or nodes), so not of equal counts, each with
        # margins of 1/16 of a block into its neighbours': each rank parses only those.
        margins = 2 * ((total // ranks + 15) // 16)
        check(len(parsed) == ranks and parsed == held and sum(parsed) >= total
              and all(0 < p <= 1.5 * total / ranks + margins for p in parsed),
              f"{name}: {ranks} ranks parse and hold {parsed} / {held} of {total} examples")


def bad_syntax_in_one_share(lrnn, tmp):
    """A syntax error in rank 1's block: rank 1 alone parses it and reports file:line."""
    examples = tmp / "bad_syntax.txt"
    examples.write_text("<0> xor :- <0> a, <0> b.\n<1> xor :- <0> a, <1> b.\n"
                        "<1> xor :- <1> a, <0> b.\n<0> xor :- <1> a <1> b.\n")
    r = mpirun(lrnn, 2, ["train", ROOT / "examples/templates/xor.lrnn", "-e", examples, "--epochs", 3], timeout=60)
    check(r.returncode != 0 and "rank 1 of 2 failed" in r.stderr and f"{examples}:4:" in r.stderr
          and "rank 0 of 2 failed" not in r.stderr,
          f"bad syntax in rank 1's share: rank 1 alone reports it with file:line {r.stderr[-800:]}")


# ctest's SKIP_RETURN_CODE for this script (tests/CMakeLists.txt).
SKIPPED = 77


def main():
    if not DATA.is_dir():
        print(f"skipped: {DATA} is absent (the shared data sets these runs train on)")
        sys.exit(SKIPPED)
    build = Path(sys.argv[1]).resolve()
    lrnn = build / "lrnn"
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        mutagenesis = [ROOT / "examples/templates/mutagenesis.lrnn", "-e", MUTAGENESIS / "examples.txt",
                       "-q", MUTAGENESIS / "queries.txt", "--lr", 0.003, "--batch-size", 16, "--seed", 3]
        same_weights_over_ranks(lrnn, tmp, "mutagenesis", ["train"] + mutagenesis + ["--epochs", 4])

        hist = tmp / "histogram"
        subprocess.run([sys.executable, str(ROOT / "examples/transformers/histogram_data.py"), "--out", str(hist),
                        "--train", "40", "--test", "12"], check=True)
        same_weights_over_ranks(lrnn, tmp, "transformer",
                                ["train", ROOT / "examples/transformers/histogram.lrnn",
                                 "-e", hist / "train_examples.txt", "-q", hist / "train_queries.txt",
                                 "--test-examples", hist / "test_examples.txt", "--test-queries", hist / "test_queries.txt",
                                 "--loss", "crossentropy", "--batch-size", 8, "--epochs", 2])

        shares_parsed(lrnn, "mutagenesis", ["train"] + mutagenesis, 188)
        mutag = ["train", ROOT / "examples/graphs/gcn_mutag.lrnn", "--dataset", f"tu:{DATA / 'tu' / 'MUTAG'}",
                 "--batch-size", 32, "--lr", 0.01]
        same_weights_over_ranks(lrnn, tmp, "TU MUTAG", mutag + ["--epochs", 2])
        shares_parsed(lrnn, "TU MUTAG", mutag, 188)
        bad_syntax_in_one_share(lrnn, tmp)

        resume_with_other_ranks(lrnn, tmp, mutagenesis)
        killed_rank(lrnn, tmp, mutagenesis)
        bad_shard(lrnn, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} distributed check(s) failed")
        return 1
    print("all distributed checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
