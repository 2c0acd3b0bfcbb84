"""RASP with RASPy's API: the blog's addition program ("Thinking Like Transformers", Sasha
Rush), its layer count, its lowering to an lrnn template run by the engine, and a picture.

    python examples/python/rasp_blog.py [out.svg]
"""

import os
import sys
import tempfile

import lrnn.rasp
from lrnn.rasp import *

before = key(indices) < query(indices)


def cumsum(seq=tokens):
    return (before | (key(indices) == query(indices))).value(seq).name("cumsum")


def shift(i=1, default="_", seq=tokens):
    return (key(indices) == query(indices - i)).value(seq, default).name("shift")


def ralign(default="-", sop=tokens):
    c = (key(sop) == query("_")).value(1)
    return (key(indices + c) == query(indices)).value(sop, default).name("ralign")


def split(v, get_first_part, sop=tokens, default="0"):
    split_point = (key(sop) == query(v)).value(indices)
    if get_first_part:
        return ralign(default, where(indices < split_point, sop, "_"))
    return where(indices > split_point, sop, default)


def slide(match, seq=tokens):
    x = cumsum(match)
    y = ((key(x) == query(x + 1)) & (key(match) == query(True))).value(seq)
    return where(match, seq, y).name("slide")


def atoi(seq=tokens):
    return seq.map(lambda x: ord(x) - ord("0"))


def add(sop=tokens):
    x = atoi(split("+", True, sop)) + atoi(split("+", False, sop))
    gets_carry = shift(-1, "0", where(x > 9, "1", where(x == 9, "<", "0")))
    gets_carry = atoi(slide(gets_carry != "<", gets_carry))
    return ((x + gets_carry) % 10).name("sum")


program = add()
for text in ["683+345", "1+1", "99+901"]:
    digits = "".join(str(d) for d in program(text))
    print(f"{text} = {int(digits)}   (the program's output: {digits})")

analysis = analyze(program)
print(f"layers: {analysis.layers}, heads per layer: {analysis.heads_per_layer}")

# The lowered template, evaluated by the lrnn engine, on every input up to length 4
lowered = to_template(program, "19+", 4)
inputs = [a + b + c for a in "19" for b in "+" for c in "19"] + ["19+9", "9+19", "99+1"]
agree = lowered.run_many(inputs) == [program(x) for x in inputs]
print(f"lowered: {len(lowered.ast.rules)} rules; the engine agrees with the interpreter: {agree}")

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "add.svg")
draw(program, "683+345", path)
print(f"picture: {path}")
