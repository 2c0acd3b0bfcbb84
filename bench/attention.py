#!/usr/bin/env python3
"""Benchmark bench/attention (issue 5): lrnn attention vs PyTorch SDPA, one run.

For n in 128, 512, 2048 and d = 64, float64 and float32, forward + backward time of
  full    lrnn full attention  vs torch.nn.functional.scaled_dot_product_attention
  window  lrnn sliding-window attention (0 <= i - j <= 16, the mask as a body literal, so
          masked scores are never computed) vs torch SDPA with the equivalent boolean mask
  causal  lrnn causal attention (@leq(J, I), run as dense triangular tiles) vs torch SDPA
          with is_causal=True
and the ratio torch / lrnn per configuration (above 1 means lrnn is faster). Targets:
full within 2x of torch (ratio >= 0.5); window at n = 2048 at least 10x faster (ratio >= 10);
lrnn's windowed cost growing linearly in n; causal within 1.5x of torch (issue 13). Each lrnn
row also shows its first call (grounding + plan + the first pass, build_s) in forward+backward
passes, by wall time and by CPU time (build_cpu_s / min_cpu_s: on a loaded machine wall times
also count other jobs' turns), and its grounding + plan alone (ground_plan_cpu_s).

PyTorch runs in its own process (bench/peers/torch_attention.py, 2 threads). Writes
bench/results/attention.json.
"""
from __future__ import annotations

import argparse
import os
import sys

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "peers", "torch_attention.py")


# ---------------------------------------------------------------------------------------
# LRNN SIDE (issue 5, zoo stage). bench_attention_lrnn (bench/attention_lrnn.cpp) times one
# forward + backward pass of single-head attention on q, k, v facts of shape [n, d]:
#   w(I, J) :- d_k, k(J)^T, q(I)[, @sub(I, J, D), @geq(D, 0), @leq(D, w)].
#       [combination=product, aggregation=softmax(J[, D])]
#   out(I) :- w(I, J), v(J). [combination=product, aggregation=sum]
# with the gradients of q, k and v, in the row's dtype (--dtype float64 | float32). The
# plan is grounded and built once per n (not timed, reported as build_s); each timed pass
# writes fresh values into the cached plan. One process per configuration, OMP threads =
# --threads, so a configuration that runs out of memory fails alone.
# ---------------------------------------------------------------------------------------
def run_lrnn_attention(n: int, d: int, dtype: str, variant: str, window: int, args) -> dict:
    # Scores and weights cost two values per (i, j) pair (twice with gradients); grounding
    # and the ground network hold about 150 bytes per ground rule while the plan is built
    # (peak RSS 1.3 GB for full attention at n = 2048). A cap guards smaller machines.
    pairs = {"full": n * n, "causal": n * (n + 1) // 2}.get(variant, n * (window + 1))
    max_pairs = int(os.environ.get("LRNN_BENCH_MAX_PAIRS", "20000000"))
    if pairs > max_pairs:
        return {"available": False, "reason": f"skipped: {pairs} pairs > LRNN_BENCH_MAX_PAIRS={max_pairs}"}
    exe = os.path.join(args.build, "bench", "bench_attention_lrnn")
    if not os.path.exists(exe):
        return {"available": False, "reason": f"{exe} not built (make build)"}
    cmd = [exe, "--sizes", str(n), "--dim", str(d), "--window", str(window), "--variants", variant,
           "--min-time", str(args.min_time), "--max-repeats", str(args.max_repeats), "--dtype", dtype]
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # inherited by the child only
    run = benchlib.run_with_rss(cmd, timeout_s=args.timeout)
    report = benchlib.last_json_object(run.stdout)
    if run.returncode != 0 or report is None or not report.get("results"):
        tail = (run.stderr or run.stdout or "").strip().splitlines()[-3:]
        return {"available": False, "command": cmd, "reason": f"lrnn run failed (exit {run.returncode}): " + " | ".join(tail)}
    r = report["results"][0]
    r.update(available=True, command=cmd, peak_rss_mb=run.peak_rss_mb)
    return r


def run_torch(args) -> dict:
    cmd = [
        sys.executable, PEER,
        "--sizes", args.sizes, "--dim", str(args.dim), "--window", str(args.window),
        "--dtypes", args.dtypes, "--variants", args.variants, "--threads", str(args.threads),
        "--min-time", str(args.min_time), "--max-repeats", str(args.max_repeats),
    ]
    run = benchlib.run_with_rss(cmd, timeout_s=args.timeout)
    report = benchlib.last_json_object(run.stdout)
    if run.returncode != 0 or report is None:
        tail = (run.stderr or run.stdout).strip().splitlines()[-5:]
        hint = " (pip install torch==2.13.0)" if "No module named 'torch'" in run.stderr else ""
        return {"available": False, "command": cmd,
                "reason": f"torch run failed (exit {run.returncode}){hint}: " + " | ".join(tail)}
    report.update(available=True, command=cmd, peak_rss_mb=run.peak_rss_mb)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(benchlib.REPO, "build"), help="lrnn build directory")
    parser.add_argument("--sizes", default="128,512,2048")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--variants", default="full,window,causal")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds of timed passes per configuration")
    parser.add_argument("--max-repeats", type=int, default=50)
    parser.add_argument("--stat", choices=("min", "median"), default="min",
                        help="statistic compared (default min: on a shared machine the median also "
                             "measures other processes' load)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", default=None, help="result file (default bench/results/attention.json)")
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)

    warning = benchlib.load_warning()
    if warning:
        print(warning)
    print(f"attention: forward+backward, d={args.dim}, window={args.window}, {args.threads} threads, "
          f"{args.stat} time per pass")
    torch_report = run_torch(args)
    if not torch_report["available"]:
        print(f"torch unavailable: {torch_report['reason']}")
    torch_times = {
        (r["n"], r["dtype"], r["variant"]): r for r in torch_report.get("results", [])
    }

    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        for dtype in args.dtypes.split(","):
            for variant in args.variants.split(","):
                peer = torch_times.get((n, dtype, variant))
                mine = run_lrnn_attention(n, args.dim, dtype, variant, args.window, args)
                stat = f"{args.stat}_s"
                speedup = benchlib.ratio(peer[stat] if peer else None,
                                         mine.get(stat) if mine.get("available") else None)
                rows.append({"n": n, "d": args.dim, "dtype": dtype, "variant": variant,
                             "torch": peer, "lrnn": mine, "speedup": speedup})
                torch_text = benchlib.fmt(peer[stat] * 1e3, " ms", 4) if peer else "n/a"
                lrnn_text = (benchlib.fmt(mine[stat] * 1e3, " ms", 4) if mine.get("available")
                             else mine["reason"])
                first_call = (f"   first call {mine['build_s']:.3g} s = {mine['build_s'] / mine[stat]:.0f} passes"
                              f" ({mine['build_cpu_s'] / mine['min_cpu_s']:.0f} in CPU time;"
                              f" ground + plan {mine['ground_plan_cpu_s'] / mine['min_cpu_s']:.1f})"
                              if mine.get("available") else "")
                print(f"n={n:<5} {dtype:<8} {variant:<7} torch {torch_text:>10}   lrnn {lrnn_text}"
                      f"   torch/lrnn {benchlib.fmt(speedup, 'x')}{first_call}")

    result = {
        "benchmark": "attention",
        **benchlib.header(),
        "config": {"sizes": args.sizes, "d": args.dim, "window": args.window, "dtypes": args.dtypes,
                   "variants": args.variants,
                   "threads": args.threads, "min_time_s": args.min_time, "stat": args.stat},
        "torch": {k: v for k, v in torch_report.items() if k != "results"},
        "rows": rows,
        "notes": [
            "times: min and median seconds of one forward+backward pass (q, k, v gradients) after warm-up",
            "window mask: allowed[i, j] = 0 <= i - j <= window; torch computes all n*n scores and masks them",
            "speedup: torch / lrnn of the statistic in config.stat (above 1 means lrnn is faster)",
        ],
    }
    path = benchlib.write_result("attention", result, args.out)
    print(f"wrote {os.path.relpath(path, benchlib.REPO) if path.startswith(benchlib.REPO) else path}")
    return 0 if torch_report["available"] else 1


if __name__ == "__main__":
    sys.exit(main())
