#!/usr/bin/env python3
"""Reversal with lrnn's sequence-to-sequence transformer (issue 35, docs/seq2seq.md): digit
strings of lengths 2-4 and 6-8 (seeded), trained with cross-entropy and label smoothing 0.1,
Adam and the noam warm-up schedule; exact-match accuracy of greedy decoding on new strings of
the trained lengths and of the held-out length 5.

    python3 examples/seq2seq/reversal.py [--epochs 30] [--train 2000] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402

from lrnn.nn import Seq2Seq  # noqa: E402


def exact_match(model: Seq2Seq, pairs) -> float:
    return sum(model.generate(src, len(tgt) + 2) == tgt for src, tgt in pairs) / len(pairs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    trained, held_out = [2, 3, 4, 6, 7, 8], [5]
    train = tasks.reversal(a.train, trained, a.seed)
    model = Seq2Seq(tasks.VOCAB, d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                    dim_feedforward=64, max_len=20, bos=tasks.BOS, eos=tasks.EOS, seed=a.seed)
    report = model.fit(train, epochs=a.epochs, batch_size=32, optimizer="adam", lr=1.0, betas=(0.9, 0.98),
                       eps=1e-9, label_smoothing=0.1, schedule="noam", warmup=400, dtype="float32",
                       callback=lambda h: print(f"epoch {h['epoch']}  loss {h['train']['loss']:.4f}  "
                                                f"{h['seconds']:.2f} s") or True)
    print(f"exact match, trained lengths: {exact_match(model, tasks.reversal(a.test, trained, a.seed + 1)):.3f}")
    print(f"exact match, held-out length 5: {exact_match(model, tasks.reversal(a.test, held_out, a.seed + 2)):.3f}")
    src = tasks.reversal(1, held_out, a.seed + 3)[0][0]
    print("reverse of", src, "->", model.generate(src, 8))


if __name__ == "__main__":
    main()
