#!/usr/bin/env python3
"""Benchmark bench/attention_modules (issues 13, 35): lrnn.nn's MultiheadAttention,
TransformerEncoderLayer and Transformer (encoder-decoder, causal target mask; the source and
target both of length n) against torch.nn's, float32 against float32, one run.

    python3 bench/attention_modules.py [--sizes 128,512] [--dim 64] [--heads 4]
                                       [--feedforward 256] [--min-time 1.0] [--out FILE]

Each module is built in torch (dropout 0, batch_first) and copied into lrnn with
`load_torch` (same weights, so the outputs are compared too). A pass is forward + backward of
one sequence x [n, d] with dL/dy = 1: the input and every weight gradient, in both engines.
Timed passes repeat for at least --min-time seconds per engine, in 5 turns of lrnn then torch
(each turn >= 5 passes), so that both see the same spells of the machine's load; each
engine's minimum is reported, and the ratio lrnn / torch (issue 13's target: <= 1.2). lrnn's first call on a new length
(grounding + plan + that pass, after the module's first call on 16 positions) is given in passes, by
CPU time, and so is its grounding + plan alone (SequenceModel stats: build_cpu_seconds). Everything runs on one
thread (OMP_NUM_THREADS=1, torch.set_num_threads(1)). Writes bench/results/attention_modules.json.
"""
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before lrnn and torch load their thread pools

import argparse
import sys
import time

import numpy as np

import _benchlib as benchlib

ROUNDS = 5  # turns of the two engines' timing (timed_pair)


def timed(fn, min_time: float) -> float:
    """The minimum wall time of fn() over at least min_time seconds and 5 calls."""
    best, start, calls = float("inf"), time.perf_counter(), 0
    while calls < 5 or time.perf_counter() - start < min_time:
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        calls += 1
    return best


def timed_pair(ours, theirs, min_time: float, rounds: int = ROUNDS) -> tuple:
    """The minimum wall times of ours() and theirs(), timed in turns: `rounds` rounds of
    min_time / rounds seconds each (at least 5 calls), so that both engines see the same
    spells of the machine's load (on a shared machine a second that one engine ran alone
    could be a slower one)."""
    best_ours = best_theirs = float("inf")
    for _ in range(rounds):
        best_ours = min(best_ours, timed(ours, min_time / rounds))
        best_theirs = min(best_theirs, timed(theirs, min_time / rounds))
    return best_ours, best_theirs


def cpu_timed(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def build_pair(kind: str, a):
    import torch
    from lrnn import nn as lnn

    torch.manual_seed(a.seed)
    if kind == "MultiheadAttention":
        theirs = torch.nn.MultiheadAttention(a.dim, a.heads, dropout=0.0, batch_first=True)
        ours = lnn.MultiheadAttention(a.dim, a.heads, dtype="float32")
    elif kind == "Transformer":  # issue 35: Transformer(32, 4, 2, 2, 64) by default, causal target mask
        d, h, enc, dec, ff = a.transformer
        theirs = torch.nn.Transformer(d, h, enc, dec, ff, dropout=0.0, batch_first=True)
        ours = lnn.Transformer(d, h, enc, dec, ff, norm_affine=True, tgt_mask=lnn.Mask.causal(), dtype="float32")
    else:
        theirs = torch.nn.TransformerEncoderLayer(a.dim, a.heads, dim_feedforward=a.feedforward, dropout=0.0,
                                                  batch_first=True)
        ours = lnn.TransformerEncoderLayer(a.dim, a.heads, dim_feedforward=a.feedforward, dtype="float32")
    ours.load_torch(theirs)
    return ours, theirs.float()


def run_case(kind: str, n: int, a) -> dict:
    import torch

    ours, theirs = build_pair(kind, a)
    dim = a.transformer[0] if kind == "Transformer" else a.dim
    x = np.random.default_rng(a.seed).standard_normal((n, dim))
    xt = torch.tensor(x, dtype=torch.float32).unsqueeze(0).requires_grad_(True)
    # The Transformer's target: another sequence of the same length, under a causal mask.
    target = np.random.default_rng(a.seed + 1).standard_normal((n, dim))
    tt = torch.tensor(target, dtype=torch.float32).unsqueeze(0)
    causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)

    def torch_pass():
        theirs.zero_grad(set_to_none=False)
        xt.grad = None
        if kind == "MultiheadAttention":
            y = theirs(xt, xt, xt, need_weights=False)[0]
        elif kind == "Transformer":
            y = theirs(xt, tt, tgt_mask=causal)
        else:
            y = theirs(xt)
        y.sum().backward()
        return y

    def lrnn_pass_on(xs):
        ours.zero_grad()
        y = ours(xs, target[: len(xs)]) if kind == "Transformer" else ours(xs)
        return y, ours.backward(np.ones_like(y))

    def lrnn_pass():
        return lrnn_pass_on(x)

    cold_cpu = cpu_timed(lambda: lrnn_pass_on(x[: min(n, 16)]))  # the module's first call (16 positions)
    first_cpu = cpu_timed(lrnn_pass)  # grounding + plan on this new length, then the pass
    build_cpu = ours.stats()["build_cpu_seconds"]  # grounding + plan alone
    y_ours, grads = lrnn_pass()
    y_theirs = torch_pass()
    diff = float(np.max(np.abs(y_ours - y_theirs.detach().numpy()[0])))
    grad_diff = float(np.max(np.abs(grads[0] - xt.grad.numpy()[0])))
    lrnn_s, torch_s = timed_pair(lrnn_pass, torch_pass, a.min_time)
    pass_cpu = min(cpu_timed(lrnn_pass) for _ in range(5))
    return {"module": kind, "n": n, "lrnn_ms": lrnn_s * 1e3, "torch_ms": torch_s * 1e3,
            "lrnn_over_torch": lrnn_s / torch_s, "first_call_cpu_s": first_cpu,
            "first_call_passes": first_cpu / pass_cpu if pass_cpu > 0 else None,
            "module_first_call_cpu_s": cold_cpu,
            "build_cpu_s": build_cpu, "build_passes": build_cpu / pass_cpu if pass_cpu > 0 else None,
            "max_abs_output_diff": diff, "max_abs_input_grad_diff": grad_diff}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="128,512")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--feedforward", type=int, default=256)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modules", default="MultiheadAttention,TransformerEncoderLayer,Transformer")
    ap.add_argument("--transformer", default="32,4,2,2,64",
                    help="the Transformer's d_model,nhead,encoder layers,decoder layers,dim_feedforward")
    ap.add_argument("--out", default=None, help="result file (default bench/results/attention_modules.json)")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("bench/attention_modules needs torch (pip install torch==2.13.0)")
    torch.set_num_threads(1)
    warning = benchlib.load_warning()
    if warning:
        print(warning)
    rows = []
    a.transformer = [int(v) for v in a.transformer.split(",")]
    for kind in a.modules.split(","):
        for n in (int(s) for s in a.sizes.split(",")):
            r = run_case(kind, n, a)
            rows.append(r)
            print(f"{kind:24s} n={n:4d}  lrnn {r['lrnn_ms']:7.3f} ms  torch {r['torch_ms']:7.3f} ms  "
                  f"lrnn/torch {r['lrnn_over_torch']:.2f} (target <= 1.2)  first call {r['first_call_cpu_s']:.3f} s CPU "
                  f"= {r['first_call_passes']:.1f} passes (ground + plan {r['build_passes']:.1f})  "
                  f"|y - y_torch| {r['max_abs_output_diff']:.1e}", flush=True)
    result = {**benchlib.header(), "benchmark": "attention_modules", "dim": a.dim, "heads": a.heads,
              "feedforward": a.feedforward, "threads": 1, "dtype": "float32", "torch": torch.__version__, "rows": rows}
    print(f"wrote {benchlib.write_result('attention_modules', result, a.out)}")

if __name__ == "__main__":
    main()
