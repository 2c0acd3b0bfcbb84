"""Attention that learns to compose kinship relations (issue 35): for a query pair (X, Z),
which of X's four grandparents is Z? Each answer is a composition of two facts through an
intermediate person Y:

    paternal grandfather = father o father    (Y = X's father, Z = Y's father)
    paternal grandmother = father o mother    (Y = X's father, Z = Y's mother)
    maternal grandfather = mother o father    (Y = X's mother, Z = Y's father)
    maternal grandmother = mother o mother    (Y = X's mother, Z = Y's mother)

Families are generated at random (seeded); every ordered pair of a family's members is a
fact pair(A, B) with value [1, 0] if B is A's father, [0, 1] if A's mother, else [0, 0]. The model
has no entity embeddings, so the held-out families (new people) test the rule, not memory.
Each attention head scores every member Y of the family for the query (X, Z) from pair(X, Y)
and pair(Y, Z), normalised by softmax over Y (docs/transformers.md: attention is a softmax
aggregation over a rule's groundings); the head's weight of Y is read back from the ground
network and compared with the Y the rule names. The value of Y is the composition of its
two links, pair(X, Y) pair(Y, Z)^T (zero unless Y links X to Z); docs/relations.md says why
and what a concatenated value made the heads learn instead.

    python3 examples/relations/kinship.py --out /tmp/relations
"""

import argparse
import random
import re
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from lrnn import Adam, CrossEntropy, FileDataset, Settings, Template

CLASSES = ["paternal_grandfather", "paternal_grandmother", "maternal_grandfather", "maternal_grandmother"]


class Result(NamedTuple):
    accuracy: float  # held-out accuracy
    on_rule: np.ndarray  # per head: fraction of held-out queries whose argmax Y is the rule's Y
    weight: np.ndarray  # per head: mean weight on the rule's Y over the held-out queries
    queries: int  # held-out queries
    scores: list  # per head: (u, v), the learned score weights of [father, mother] links X-Y and Y-Z


def template_text(heads):
    """The template: per head, a score of each Y softmax-normalised over Y, and the
    weighted sum of the compositions. ask(X, Z) is hidden (logic only): it restricts the
    grounding to the queried pairs, so a family of n people grounds n - 2 candidates per
    query instead of n^3 triples."""
    return "\n".join(
        [f"rel_w{h}(X, Z, Y) :- *ask(X, Z), $rel_u{h}={{1,2}} pair(X, Y), $rel_v{h}={{1,2}} pair(Y, Z). "
         f"[aggregation=softmax(Y)]" for h in range(heads)]
        + ["rel_e(X, Y, Z) :- *ask(X, Z), pair(X, Y), pair(Y, Z)^T. [combination=product, activation=reshape(4, 1)]"]
        + [f"rel_a{h}(X, Z) :- rel_w{h}(X, Z, Y), rel_e(X, Y, Z). [combination=product, aggregation=sum]"
           for h in range(heads)]
        + ["rel(X, Z) :- " + ", ".join(f"$rel_o{h}={{4,4}} rel_a{h}(X, Z)" for h in range(heads)) + ", $rel_b={4}."]
    ) + "\n"


def make_family(rng, fid):
    """One family of three generations: people as 'f<fid>_<i>', each with a sex and, below
    the first generation, a father and a mother. Returns (people, sex, father, mother)."""
    people, sex, father, mother = [], {}, {}, {}

    def person(s, dad=None, mum=None):
        name = f"f{fid}_{len(people)}"
        people.append(name)
        sex[name] = s
        if dad is not None:
            father[name], mother[name] = dad, mum
        return name

    couples = [(person("m"), person("f")) for _ in range(rng.randint(2, 3))]
    children = [[person(rng.choice("mf"), d, m) for _ in range(rng.randint(1, 3))] for d, m in couples]
    # Second-generation couples: a son and a daughter of different first-generation couples.
    parents2 = []
    for i in range(len(children)):
        for j in range(len(children)):
            if i == j:
                continue
            sons = [c for c in children[i] if sex[c] == "m" and not any(c == p[0] for p in parents2)]
            daughters = [c for c in children[j] if sex[c] == "f" and not any(c == p[1] for p in parents2)]
            if sons and daughters:
                parents2.append((sons[0], daughters[0]))
    if not parents2:  # no son/daughter pair across couples: marry in a son and a daughter
        first, second = children[0][0], children[1][0]
        sex[first], sex[second] = "m", "f"
        parents2.append((first, second))
    for dad, mum in parents2:
        for _ in range(rng.randint(1, 3)):
            person(rng.choice("mf"), dad, mum)
    return people, sex, father, mother


def grandparent_queries(people, father, mother):
    """(X, Z, class, Y): every grandchild X and grandparent Z, with the rule's intermediate Y."""
    out = []
    for x in people:
        for k, (first, second) in enumerate([(father, father), (father, mother), (mother, father), (mother, mother)]):
            y = first.get(x)
            if y is not None and y in second:
                out.append((x, second[y], k, y))
    return out


def write_split(families, path_stem):
    """Examples and queries files (docs/language.md): one example per family, its queries on
    the matching line."""
    examples, queries, truth = [], [], []
    for fid, (people, sex, father, mother) in families:
        facts = []
        for a in people:
            for b in people:
                if a != b:
                    facts.append(f"<[{int(father.get(a) == b)}, {int(mother.get(a) == b)}]> pair({a}, {b})")
        qs = grandparent_queries(people, father, mother)
        facts += [f"ask({x}, {z})" for x, z, _, _ in qs]
        examples.append(f"fam{fid} :- " + ", ".join(facts) + ".")
        targets = []
        for x, z, k, y in qs:
            onehot = ", ".join("1" if i == k else "0" for i in range(len(CLASSES)))
            targets.append(f"[{onehot}] rel({x}, {z})")
        queries.append(f"fam{fid} :- " + ", ".join(targets) + ".")
        truth.append(qs)
    Path(f"{path_stem}_examples.txt").write_text("\n".join(examples) + "\n")
    Path(f"{path_stem}_queries.txt").write_text("\n".join(queries) + "\n")
    return FileDataset(examples_file=f"{path_stem}_examples.txt", queries_file=f"{path_stem}_queries.txt"), truth


ATOM = re.compile(r"^rel_w(\d+)\((\w+), ?(\w+), ?(\w+)\)$")


def attention(model, dataset, sample):
    """{(head, X, Z): {Y: weight}} read from the ground network's rel_w atoms (each grounding
    of a softmax rule keeps its normalised weight as its atom's value)."""
    net = model.ground_network(dataset, sample)
    weights = {}
    for atom, value in zip(net.atoms, net.values):
        m = ATOM.match(atom.replace(" ", ""))
        if m:
            h, x, z, y = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            weights.setdefault((h, x, z), {})[y] = float(np.asarray(value).ravel()[0])
    return weights


def draw(weights, queries, people, heads, path):
    """A small SVG: one row per query (X, Z) and head, one column per family member Y; the
    cell's darkness is the weight (hover for the number), the rule's Y is outlined in red,
    X and Z themselves (no candidate) are grey."""
    cell, left, top = 22, 190, 60
    rows = [(x, z, k, y, h) for x, z, k, y in queries for h in range(heads)]
    width, height = left + cell * len(people) + 10, top + cell * len(rows) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           '<text x="4" y="14">rows: query (X, Z) by the rule that holds, and head; columns: Y; '
           'red outline: the rule\'s Y</text>']
    for j, p in enumerate(people):
        tx = left + j * cell + 4
        out.append(f'<text x="{tx}" y="{top - 6}" transform="rotate(-60 {tx} {top - 6})">{p}</text>')
    for i, (x, z, k, y, h) in enumerate(rows):
        ty = top + i * cell
        out.append(f'<text x="4" y="{ty + 15}">{CLASSES[k]} {x} h{h}</text>')
        for j, p in enumerate(people):
            w = weights.get((h, x, z), {}).get(p)
            fill, title = "#dddddd", ""
            if w is not None:
                shade = int(255 * (1 - w))
                fill, title = f"rgb({shade},{shade},255)", f"<title>({x}, {z}) head {h}: w({p}) = {w:.4f}</title>"
            stroke = ' stroke="red" stroke-width="2"' if p == y else ""
            out.append(f'<rect class="weight" x="{left + j * cell}" y="{ty}" width="{cell - 2}" '
                       f'height="{cell - 2}" fill="{fill}"{stroke}>{title}</rect>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


def run(out, train_families=24, test_families=12, epochs=100, seed=0, heads=2, lr=0.05):
    """Trains on train_families, evaluates on test_families (new people): a Result."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    families = [(i, make_family(rng, i)) for i in range(train_families + test_families)]
    train, _ = write_split(families[:train_families], out / "train")
    test, truth = write_split(families[train_families:], out / "test")
    text = template_text(heads)
    (out / "kinship.lrnn").write_text(text)
    model = Template.from_string(text).build(Settings(optimizer=Adam(lr=lr), epochs=epochs, seed=seed,
                                                      error_function=CrossEntropy()))
    model.train(train, progress=False)
    evaluation = model.test(test)
    hits = [np.argmax(o) == np.argmax(t) for o, t in zip(evaluation.outputs, evaluation.targets)]
    accuracy = float(np.mean(hits))
    on_rule, weight = np.zeros(heads), np.zeros(heads)
    for s, qs in enumerate(truth):
        weights = attention(model, test, s)
        for x, z, _, y in qs:
            for h in range(heads):
                w = weights[(h, x, z)]
                on_rule[h] += max(w, key=w.get) == y
                weight[h] += w[y]
    # The drawing: the first held-out family, one query per relation (its first in order).
    shown = [next(q for q in truth[0] if q[2] == k) for k in range(len(CLASSES)) if any(q[2] == k for q in truth[0])]
    draw(attention(model, test, 0), shown, families[train_families][1][0], heads, out / "attention.svg")
    # lrnn's own heat maps of the same family (docs/pictures.md), every query, without the rule.
    model.build_dataset(test)[0].draw(filename=str(out / "heatmaps.svg"), draw_ipython=False, what="attention")
    parameters = model.parameters()
    scores = [(np.asarray(parameters[f"$rel_u{h}"]).ravel(), np.asarray(parameters[f"$rel_v{h}"]).ravel())
              for h in range(heads)]
    return Result(accuracy, on_rule / len(hits), weight / len(hits), len(hits), scores)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True,
                        help="folder for the data files, the template, attention.svg and heatmaps.svg")
    parser.add_argument("--train-families", type=int, default=24)
    parser.add_argument("--test-families", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    r = run(args.out, args.train_families, args.test_families, args.epochs, args.seed, args.heads)
    print(f"held-out accuracy {r.accuracy:.3f} on {r.queries} queries")
    for h, (u, v) in enumerate(r.scores):
        print(f"head {h}: argmax Y is the rule's Y on {r.on_rule[h]:.3f} of held-out queries, "
              f"mean weight on it {r.weight[h]:.3f}; score of Y = "
              f"{u[0]:.2f} [Y is X's father] + {u[1]:.2f} [Y is X's mother] "
              f"+ {v[0]:.2f} [Z is Y's father] + {v[1]:.2f} [Z is Y's mother]")
    print(f"wrote {Path(args.out) / 'attention.svg'} and {Path(args.out) / 'heatmaps.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
