#!/usr/bin/env python3
"""PyTorch side of the attention benchmark (issue 5, bench/attention.py).

For each sequence length n and dtype, times one forward + backward pass of
torch.nn.functional.scaled_dot_product_attention on q, k, v of shape [1, n, d]:
  full    no mask
  window  boolean mask allowed[i, j] = 0 <= i - j <= w (sliding window, causal), the
          dense-masked equivalent of lrnn's windowed attention: every one of the n*n scores
          is still computed, masked ones are then discarded
  causal  is_causal=True (keys j <= i), torch's own causal path
The backward pass starts from a fixed random output gradient and produces gradients of q,
k and v. Single process, torch.set_num_threads(threads) (2 by default).

Each configuration is warmed up, then repeated until min_time seconds have passed (at
least 3, at most max_repeats times); the median and minimum seconds per pass are reported.
Prints one JSON object on stdout.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def window_mask(n: int, w: int, torch):
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(n).unsqueeze(0)
    diff = i - j
    return (diff >= 0) & (diff <= w)  # True = attend (torch's boolean attn_mask convention)


def time_pass(n: int, d: int, dtype, mask, causal: bool, warmup: int, min_time: float, max_repeats: int, seed: int,
              torch):
    F = torch.nn.functional
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(1, n, d, dtype=dtype, generator=generator).requires_grad_()
    k = torch.randn(1, n, d, dtype=dtype, generator=generator).requires_grad_()
    v = torch.randn(1, n, d, dtype=dtype, generator=generator).requires_grad_()
    grad_out = torch.randn(1, n, d, dtype=dtype, generator=generator)

    def one_pass():
        for t in (q, k, v):
            t.grad = None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        out.backward(grad_out)
        return out

    for _ in range(warmup):
        one_pass()
    times = []
    start = time.perf_counter()
    while len(times) < max_repeats and (len(times) < 3 or time.perf_counter() - start < min_time):
        t0 = time.perf_counter()
        out = one_pass()
        times.append(time.perf_counter() - t0)
    checksum = float(out.detach().sum()) + float(q.grad.sum())
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "repeats": len(times),
        "checksum": checksum,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="128,512,2048", help="comma-separated sequence lengths")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--variants", default="full,window")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds of timed passes per configuration")
    parser.add_argument("--max-repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for variant in args.variants.split(","):
                if variant in ("full", "causal"):
                    mask = None
                elif variant == "window":
                    mask = window_mask(n, args.window, torch)
                else:
                    raise SystemExit(f"unknown variant {variant!r} (full, window, causal)")
                timing = time_pass(n, args.dim, dtype, mask, variant == "causal", args.warmup, args.min_time,
                                   args.max_repeats, args.seed, torch)
                results.append({"n": n, "d": args.dim, "dtype": dtype_name, "variant": variant,
                                "window": args.window if variant == "window" else None, **timing})
                print(f"torch n={n} {dtype_name} {variant}: {timing['median_s']:.4g} s", file=sys.stderr)
    print(json.dumps({
        "engine": "torch",
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "op": "torch.nn.functional.scaled_dot_product_attention, forward + backward (q, k, v grads)",
        "results": results,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
