#!/usr/bin/env python3
"""Writes a seq2seq task for `lrnn train` and `lrnn generate` (docs/seq2seq.md "From the
command line"): the template (lrnn.nn.Seq2Seq's rules), training examples and queries (one
example per pair: one-hot source and decoder input; one query per target position, the
next token's class index) and held-out test pairs.

    python3 examples/seq2seq/write_data.py --task reversal --train 200 --out /tmp/reversal
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402

from lrnn.nn import Seq2Seq  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(tasks.TASKS), default="reversal")
    p.add_argument("--train", type=int, default=200)
    p.add_argument("--test", type=int, default=50)
    p.add_argument("--d-model", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    make = tasks.TASKS[a.task]
    trained, held_out = ([1, 2, 4], [3]) if a.task == "addition" else ([2, 3, 4, 6], [5])
    model = Seq2Seq(tasks.VOCAB, d_model=a.d_model, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                    dim_feedforward=2 * a.d_model, max_len=12, bos=tasks.BOS, eos=tasks.EOS)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "template.lrnn"), "w") as f:
        f.write(model.rules() + "\n")
    for name, pairs in (("train", make(a.train, trained, a.seed)), ("test", make(a.test, held_out, a.seed + 2))):
        examples, queries = model.examples_text(pairs)
        with open(os.path.join(a.out, f"{name}_examples.txt"), "w") as f:
            f.write(examples)
        with open(os.path.join(a.out, f"{name}_queries.txt"), "w") as f:
            f.write(queries)
        with open(os.path.join(a.out, f"{name}_pairs.txt"), "w") as f:
            f.writelines(" ".join(map(str, s)) + "\t" + " ".join(map(str, t)) + "\n" for s, t in pairs)
    print(f"wrote {a.out}/template.lrnn, train_* ({a.train} pairs), test_* ({a.test} pairs, held-out lengths "
          f"{held_out})")


if __name__ == "__main__":
    main()
