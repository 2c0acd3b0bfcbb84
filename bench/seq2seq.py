#!/usr/bin/env python3
"""Benchmark bench/seq2seq (issue 35): a sequence-to-sequence task of examples/seq2seq/tasks.py
trained by lrnn (lrnn.nn.Seq2Seq) and by torch (the same model in torch.nn, TorchSeq2Seq:
nn.Embedding, nn.Transformer, tied output) with the same sizes, data, optimizer (Adam, betas
0.9/0.98, eps 1e-9, the noam warm-up schedule), label smoothing, batch size, epochs and seed,
one after the other in one run, one thread each, from the same initial weights and through the
same batches (the pairs in their drawn order every epoch, unshuffled, so that the two runs
differ only by their engines' rounding).

    python3 bench/seq2seq.py [--task reversal] [--epochs 30] [--train 2000] [--test 200]
                             [--batch-size 32] [--warmup 400] [--seed 0] [--out FILE]

Prints for each: exact-match accuracy of greedy decoding on the test pairs of training
lengths and of the held-out lengths, the median epoch time, and greedy generation time per
generated token (one source at a time: lrnn recomputes the encoder with every prefix, torch
encodes once), with the ratios lrnn / torch. Writes bench/results/seq2seq_<task>.json.
"""
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before lrnn and torch load their thread pools

import argparse
import statistics
import sys
import time

import _benchlib as benchlib

sys.path.insert(0, os.path.join(benchlib.REPO, "examples", "seq2seq"))
import tasks  # noqa: E402

# Lengths trained on, and the lengths held out (never trained; in between, so that the
# sinusoidal positions are all seen in training).
LENGTHS = {"reversal": ([2, 3, 4, 6, 7, 8], [5]), "sorting": ([2, 3, 4, 6, 7, 8], [5]),
           "addition": ([1, 2, 4], [3])}
SIZES = dict(vocab_size=tasks.VOCAB, d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
             dim_feedforward=64, max_len=20)


def exact_match(generate, pairs) -> tuple[float, float, int]:
    """(accuracy, seconds, generated tokens counting each EOS step) of greedy decoding."""
    right, tokens, start = 0, 0, time.perf_counter()
    for src, tgt in pairs:
        out = generate(src, len(tgt) + 2)
        right += out == tgt
        tokens += len(out) + 1
    return right / len(pairs), time.perf_counter() - start, tokens


def initial_torch_model(a):
    """The torch model both runs start from (lrnn loads its weights): seeded, and Xavier-uniform
    weights of every matrix as the Annotated Transformer initialises (torch's own N(0, 1)
    embedding, scaled by sqrt(d) and tied to the output, starts with logits of ~5)."""
    import torch

    from lrnn.nn.seq2seq_torch import TorchSeq2Seq

    torch.manual_seed(a.seed)
    model = TorchSeq2Seq(**SIZES, dtype=torch.float32 if a.dtype == "float32" else torch.float64)
    for p in model.parameters():
        if p.dim() > 1:
            torch.nn.init.xavier_uniform_(p)
    return model


def run_lrnn(a, train, tests) -> dict:
    from lrnn.nn import Seq2Seq

    model = Seq2Seq(**SIZES, bos=tasks.BOS, eos=tasks.EOS, seed=a.seed).load_torch(initial_torch_model(a))
    start = time.perf_counter()
    model._prepare(train)  # grounding, reported apart from the epochs
    prepare = time.perf_counter() - start
    report = model.fit(train, epochs=a.epochs, batch_size=a.batch_size, optimizer="adam", lr=a.lr,
                       betas=(0.9, 0.98), eps=1e-9, label_smoothing=0.1, schedule="noam", warmup=a.warmup,
                       shuffle=False, dtype=a.dtype)
    out = {"prepare_s": prepare, "epoch_s": [h["seconds"] for h in report["history"]],
           "loss": [h["train"]["loss"] for h in report["history"]]}
    for name, pairs in tests.items():
        acc, secs, tokens = exact_match(lambda s, n: model.generate(s, n, dtype=a.dtype), pairs)
        out[name] = {"accuracy": acc, "generate_s_per_token": secs / tokens}
    return out


def run_torch(a, train, tests) -> dict:
    import torch

    from lrnn.nn.seq2seq_torch import batch_tensors

    torch.set_num_threads(1)
    dtype = torch.float32 if a.dtype == "float32" else torch.float64
    model = initial_torch_model(a)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9)
    d, w = SIZES["d_model"], a.warmup
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: d ** -0.5 * min((s + 1) ** -0.5, (s + 1) * w ** -1.5))
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    out = {"epoch_s": [], "loss": []}
    for _ in range(a.epochs):
        start, total, count = time.perf_counter(), 0.0, 0
        for b0 in range(0, len(train), a.batch_size):
            batch = train[b0:b0 + a.batch_size]
            src, tgt_in, tgt_out, src_pad, tgt_pad = batch_tensors(batch, tasks.BOS, tasks.EOS, tasks.PAD, dtype)
            logits = model(src, tgt_in, src_pad, tgt_pad)
            loss = loss_fn(logits.reshape(-1, SIZES["vocab_size"]), tgt_out.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            n = int((tgt_out != -100).sum())
            total, count = total + loss.item() * n, count + n
        out["epoch_s"].append(time.perf_counter() - start)
        out["loss"].append(total / count)
    model.eval()
    for name, pairs in tests.items():
        acc, secs, tokens = exact_match(lambda s, n: model.generate(s, n, tasks.BOS, tasks.EOS), pairs)
        out[name] = {"accuracy": acc, "generate_s_per_token": secs / tokens}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(tasks.TASKS), default="reversal")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1.0, help="the noam schedule's factor")
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--out")
    a = p.parse_args()
    make = tasks.TASKS[a.task]
    trained, held_out = LENGTHS[a.task]
    train = make(a.train, trained, a.seed)
    tests = {"test_trained_lengths": make(a.test, trained, a.seed + 1),
             "test_held_out_lengths": make(a.test, held_out, a.seed + 2)}
    load = os.getloadavg()[0]
    ours = run_lrnn(a, train, tests)
    theirs = run_torch(a, train, tests)
    print(f"{a.task}: {a.train} pairs, {a.epochs} epochs, batch {a.batch_size}, d_model {SIZES['d_model']}, "
          f"{a.dtype}, one thread, load average {load:.2f}")
    print(f"{'':24s}{'lrnn':>12s}{'torch':>12s}{'lrnn/torch':>12s}")
    e_ours, e_theirs = statistics.median(ours["epoch_s"]), statistics.median(theirs["epoch_s"])
    print(f"{'epoch time (median, s)':24s}{e_ours:12.3f}{e_theirs:12.3f}{e_ours / e_theirs:12.2f}")
    print(f"{'final training loss':24s}{ours['loss'][-1]:12.4f}{theirs['loss'][-1]:12.4f}")
    for name in tests:
        a_o, a_t = ours[name]["accuracy"], theirs[name]["accuracy"]
        g_o, g_t = ours[name]["generate_s_per_token"], theirs[name]["generate_s_per_token"]
        print(f"{name + ' acc':24s}{a_o:12.3f}{a_t:12.3f}{a_o - a_t:+12.3f} (difference)")
        print(f"{'  generation ms/token':24s}{g_o * 1e3:12.3f}{g_t * 1e3:12.3f}{g_o / g_t:12.2f}")
    print(f"lrnn grounding of the training pairs: {ours['prepare_s']:.2f} s (before the epochs)")
    result = {**benchlib.header(), "task": a.task, "args": vars(a), "sizes": SIZES, "load_average": load,
              "lrnn": ours, "torch": theirs}
    print("wrote", benchlib.write_result(f"seq2seq_{a.task}", result, a.out))


if __name__ == "__main__":
    main()
