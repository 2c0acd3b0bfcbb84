"""Built-in datasets under PyNeuraLogic's `neuralogic.utils.data` names: each call returns
(model, dataset), a fresh unbuilt Model with a template for the task and its data.

XOR and XOR_Vectorized generate their four samples. Family, Trains, Mutagenesis and
Nations read PyNeuraLogic's data files from the shared datasets folder
(`shared/datasets/neuralogic`, found from $LRNN_DATASETS, or as `shared/datasets` or
`../shared/datasets` beside the working directory or one of its parents); the templates
are written here (the shared folder holds data only).
"""

from __future__ import annotations

import os
import re
from itertools import product
from pathlib import Path
from typing import List, Tuple

from lrnn.dataset.samples import Dataset, FileDataset, Sample


def _model():
    from lrnn.model import Model

    return Model()


def datasets_folder() -> Path:
    """The folder of the NeuraLogic-format data files (shared/datasets/neuralogic)."""
    env = os.environ.get("LRNN_DATASETS")
    candidates: List[Path] = [Path(env) / "neuralogic"] if env else []
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        candidates += [folder / "shared" / "datasets" / "neuralogic", folder.parent / "shared" / "datasets" / "neuralogic"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "the NeuraLogic-format datasets were not found: set LRNN_DATASETS to the shared datasets folder "
        "(the one holding neuralogic/), or run from the repository (../shared/datasets/neuralogic)"
    )


def _files(*parts: str) -> Tuple[str, str]:
    folder = datasets_folder().joinpath(*parts)
    examples, queries = folder / "examples.txt", folder / "queries.txt"
    for f in (examples, queries):
        if not f.is_file():
            raise FileNotFoundError(f"{f} is missing from the shared datasets")
    return str(examples), str(queries)


_XOR_TABLE = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]


def XOR():
    """XOR of two scalar facts `a`, `b` through eight tanh hidden neurons."""
    model = _model()
    # in the order of PyNeuraLogic's simple/xor/naive/template.txt: the weights are numbered
    # in the order written, so state_dict()["weights"][i] is its weight i
    hidden = [f"hidden{h} :- {{1}} a, {{1}} b. [activation=tanh]" for h in range(1, 9)]
    output = [f"{{1}} xor :- hidden{h}. [activation=tanh]" for h in range(1, 9)]
    text = hidden + output + ["xor / 0 [activation=tanh]"] + [f"hidden{h} / 0 [activation=tanh]" for h in range(1, 9)]
    model._entries.extend(_statements("\n".join(text)))
    from lrnn.core.atoms import R

    dataset = Dataset([Sample(R.xor[y], [R.a[a], R.b[b]]) for (a, b), y in _XOR_TABLE])
    return model, dataset


def XOR_Vectorized():
    """XOR of a vector fact `xy` through an 8x2 and a 1x8 weight."""
    model = _model()
    model._entries.extend(_statements("{1, 8} xor :- {8, 2} xy. [activation=tanh]\nxor / 0 [activation=tanh]"))
    from lrnn.core.atoms import R

    dataset = Dataset([Sample(R.xor[y], [R.xy[[float(a), float(b)]]]) for (a, b), y in _XOR_TABLE])
    return model, dataset


def Family():
    """Does a horse foal? Two rules with one weight each (shared family example)."""
    model = _model()
    model._entries.extend(_statements(
        "{1} foal(X) :- parent(X, Y), horse(Y).\n{1} foal(X) :- sibling(X, Y), horse(Y).\n{1} negFoal(X) :- foal(X)."
    ))
    examples, queries = _files("simple", "family")
    return model, FileDataset(examples_file=examples, queries_file=queries)


_TRAIN_ATTRIBUTES = {
    "shape": ("ellipse", "rectangle", "bucket", "hexagon", "u_shaped"),
    "length": ("short", "long"),
    "sides": ("not_double", "double"),
    "roof": ("jagged", "arc", "none", "flat", "peaked"),
    "wheels": ("2", "3"),
    "loadnum": ("0", "1", "2", "3"),
    "loadshape": ("hexagon", "triangle", "diamond", "rectangle", "circle"),
}


def Trains():
    """Michalski's east-west trains: car attributes -> car -> train -> direction (+1 / -1)."""
    model = _model()
    text = []
    for attribute, values in _TRAIN_ATTRIBUTES.items():
        for value in values:
            text.append(f"{attribute}(X, Y) :- {{1}} {attribute}(X, Y, {value}). [activation=tanh]")
        text.append(f"{attribute} / 2 [activation=tanh]")
    # the body in the order of PyNeuraLogic's simple/trains/template.txt (weights are numbered
    # in the order written, so state_dict()["weights"][i] is its weight i)
    body = ("shape", "length", "sides", "wheels", "loadnum", "loadshape", "roof")
    text.append("vagon(X, Y) :- " + ", ".join(f"{{1}} {a}(X, Y)" for a in body) + ". [activation=tanh]")
    text.append("vagon / 2 [activation=tanh]")
    for car in range(1, 5):
        text.append(f"train(X) :- {{1}} vagon(X, {car}). [activation=tanh]")
    text += ["train / 1 [activation=tanh]", "direction(X) :- {1} train(X). [activation=tanh]",
             "direction / 1 [activation=tanh]"]
    model._entries.extend(_statements("\n".join(text)))
    examples, queries = _files("simple", "trains")
    return model, FileDataset(examples_file=examples, queries_file=queries)


def Mutagenesis():
    """Molecules: atom-type and bond-type embeddings (3, with a learnable offset each), three
    message-passing layers over `bond(X, Y, B)`, and `predict` from the last layer: PyNeuraLogic's
    molecules/mutagenesis/templates/template.txt (with its embeddings.txt), line for line, so
    the weights are numbered as its (state_dict()["weights"][i] is its weight i)."""
    examples, queries = _files("molecules", "mutagenesis")
    text = [f"{{3, 1}} atom_embed(A) :- {t}(A). [activation=tanh]" for t in _MUTAGENESIS_ATOMS]
    text.append("atom_embed / 1 {3, 1}")
    text += [f"{{3, 1}} bond_embed(B) :- {t}(B). [activation=tanh]" for t in _MUTAGENESIS_BONDS]
    text += ["bond_embed / 1 {3, 1}", "bond_embed / 1 [activation=tanh]", "atom_embed / 1 [activation=tanh]"]
    previous = "atom_embed"
    for layer in (1, 2, 3):
        name = f"l{layer}_embed"
        text.append(f"{name}(X) :- {{3, 3}} {previous}(X), {{3, 3}} {previous}(Y), bond(X, Y, B), bond_embed(B). "
                    "[activation=tanh]")
        previous = name
    text += [f"l{layer}_embed / 1 [activation=tanh]" for layer in (1, 2, 3)]
    text += ["{1, 3} predict :- l3_embed(X). [activation=tanh]", "predict / 0 [activation=tanh]"]
    model = _model()
    model._entries.extend(_statements("\n".join(text)))
    return model, FileDataset(examples_file=examples, queries_file=queries)


# the atom and bond types of PyNeuraLogic's embeddings.txt, in its order
_MUTAGENESIS_ATOMS = ("c", "o", "br", "i", "f", "h", "n", "cl")
_MUTAGENESIS_BONDS = ("b_1", "b_2", "b_3", "b_4", "b_5", "b_7")


def Nations():
    """Knowledge-base completion on Nations: a learned 3-vector per nation, attribute and
    relation; predict(N, A) from the nation's and the attribute's embeddings, and
    predict(X, R, Y) from both nations' relational embeddings and the relation's."""
    examples, queries = _files("nations")
    text_of = Path(examples).read_text()
    nations = sorted(set(re.findall(r"\bnation\((\w+)\)", text_of)))
    attributes = sorted(set(re.findall(r"\batt\((\w+)\)", text_of)))
    relations = sorted(set(re.findall(r"\brel\((\w+)\)", text_of)))
    model = _model()
    text = [f"{{3}} embed_nation({n}) :- nation({n})." for n in nations]
    text += [f"{{3}} embed_att({a}) :- att({a})." for a in attributes]
    text += [f"{{3}} embed_rel({r}) :- rel({r})." for r in relations]
    text += [
        "{1, 3} predict(Nation, Attribute) :- {3, 3} embed_nation(Nation), {3, 3} embed_att(Attribute).",
        "embed_nat1(X) :- {3, 3} embed_rel(R), {3, 3} embed_nation(Y), r(X, R, Y).",
        "embed_nat2(Y) :- {3, 3} embed_nation(X), {3, 3} embed_rel(R), r(X, R, Y).",
        "{1, 3} predict(X, R, Y) :- {3, 3} embed_nat1(X), {3, 3} embed_nat2(Y), {3, 3} embed_rel(R).",
    ]
    model._entries.extend(_statements("\n".join(text)))
    return model, FileDataset(examples_file=examples, queries_file=queries)


def _statements(text: str) -> list:
    from lrnn.core.template import Template

    return list(Template.from_string(text)._entries)


__all__ = ["XOR", "XOR_Vectorized", "Family", "Trains", "Mutagenesis", "Nations", "datasets_folder"]
