#!/usr/bin/env python3
"""Benchmark bench/pyneuralogic_table: PyNeuraLogic's own benchmark table rerun here (its
docs/benchmarks.rst: GCN, GraphSAGE and GIN on MUTAG, NCI1 and PROTEINS, average time per
epoch and the dataset build time), with lrnn, PyNeuraLogic and PyTorch Geometric in the same
run, one thread each.

The models are those of its table (benchmarks/pyneuralogic_benchmark.py and pyg_benchmark.py
in its repository), width 10, binary graph classification from the node labels alone, Adam
(lr 1e-3), cross-entropy on a sigmoid output (with logits here), batches of one graph:

  lrnn          <build>/lrnn train T --dataset tu:DIR --batch-size 1 --optimizer adam --lr 0.001
                --loss crossentropy --json --dtype float32 | float64, where T is the template of
                PyNeuraLogic's table written in lrnn's language (lrnn_template below; the
                same function as PyNeuraLogic's, rule by rule)
  pyneuralogic  bench/peers/pyneuralogic_table.py (its templates in its DSL; float64, as its
                Java engine computes), with --pyneuralogic-python (the interpreter that has
                `neuralogic` 0.9.2 and Java 17); skipped with a message when the import fails
  pyg           bench/peers/pyg_pnl_table.py (its PyG models: GCNConv / SAGEConv without bias,
                GINConv with Linear-ReLU-Linear MLPs; float32)

PyNeuraLogic's PyG models differ from its templates where its own table's did (GIN's MLPs
have biases and read the node labels directly; the templates embed them first): the table
compares the engines as PyNeuraLogic published it. Each engine's epoch is the minimum over
--epochs epochs of one run; the build is lrnn's `timing.build_s` (parse, ground, neuralize,
plan) and PyNeuraLogic's model.build + build_dataset. Printed per cell: the three epochs,
PyNeuraLogic / lrnn float64 and PyG / lrnn float32 per epoch, PyNeuraLogic / lrnn build.
Writes bench/results/pyneuralogic_table.json.

  python3 bench/pyneuralogic_table.py --datasets MUTAG --models gcn
  python3 bench/pyneuralogic_table.py --pyneuralogic-python /path/to/venv/bin/python
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import _benchlib as benchlib

HERE = os.path.dirname(os.path.abspath(__file__))
PYG = os.path.join(HERE, "peers", "pyg_pnl_table.py")
PYNEURALOGIC = os.path.join(HERE, "peers", "pyneuralogic_table.py")
sys.path.insert(0, os.path.join(HERE, "peers"))
from tu_graphs import read_tu  # noqa: E402

MODELS = ("gcn", "gsage", "gin")


def lrnn_template(model: str, features: int, dim: int = 10) -> str:
    """PyNeuraLogic's table template `model` in lrnn's language (docs/language.md): the node
    labels x(i) embedded to `dim`, edges as the hidden literal *edge(Y, X), head weights where
    PyNeuraLogic puts the weight on the head, no offsets (its rules have none)."""
    lines = [f"% PyNeuraLogic's benchmark table, {model} (bench/pyneuralogic_table.py)",
             f"atom_embed(X) :- {{{dim},{features}}} x(X)."]
    if model in ("gcn", "gsage"):
        previous = "atom_embed"
        for layer in ("l1", "l2"):
            if model == "gcn":
                lines.append(f"{{{dim},{dim}}} {layer}(X) :- {previous}(Y), *edge(Y, X). [aggregation=sum]")
            else:
                lines.append(f"{{{dim},{dim}}} {layer}(X) :- {previous}(X).")
                lines.append(f"{{{dim},{dim}}} {layer}(X) :- {previous}(Y), *edge(Y, X). [aggregation=avg]")
            previous = layer
        lines.append("l1/1 [activation=relu]")
        lines.append(f"{{1,{dim}}} predict :- l2(X). [aggregation=avg]")
    elif model == "gin":
        previous = "atom_embed"
        for k in range(1, 6):
            lines.append(f"l{k}(X) :- {previous}(Y), *edge(Y, X). [aggregation=sum]")
            lines.append(f"l{k}(X) :- {previous}(X).")
            lines.append(f"{{{dim},{dim}}} l{k}_mlp(X) :- {{{dim},{dim}}} l{k}(X). [activation=relu]")
            lines.append(f"l{k}_mlp/1 [activation=relu]")
            lines.append(f"{{1,{dim}}} predict :- l{k}_mlp(X). [aggregation=avg]")
            previous = f"l{k}_mlp"
    else:
        raise ValueError(f"unknown model {model!r}: expected one of {', '.join(MODELS)}")
    lines.append("predict/0 {1}")
    return "\n".join(lines) + "\n"


def one_thread_env() -> dict:
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    return env


def run_lrnn(args, template: str, dataset: str, dtype: str) -> dict:
    cmd = [os.path.join(args.build, "lrnn"), "train", template, "--dataset", "tu:" + dataset, "--batch-size", "1",
           "--optimizer", "adam", "--lr", str(args.lr), "--loss", "crossentropy", "--epochs", str(args.epochs),
           "--seed", str(args.seed), "--json", "--dtype", dtype]
    return benchlib.run_lrnn_train(cmd, one_thread_env(), args.timeout)


def run_peer(args, python: str, script: str, dataset: str, model: str) -> dict:
    cmd = [python, script, "--dataset", dataset, "--model", model, "--epochs", str(args.epochs), "--lr", str(args.lr),
           "--seed", str(args.seed)]
    report, error, rss = benchlib.run_json(cmd, one_thread_env(), args.timeout)
    if report is None:
        return {"available": False, "reason": error}
    return {"available": True, "epoch_s": report["epoch_s"], "epoch_min_s": min(report["epoch_s"]),
            "build_s": report.get("build_s"), "loss": report["losses"][-1], "peak_rss_mb": rss}


def ms(result: dict) -> str:
    return f"{result['epoch_min_s'] * 1e3:9.2f} ms" if result.get("available") else "        n/a"


def cell(args, dataset: str, model: str, have_pyneuralogic: bool) -> dict:
    features = read_tu(dataset)[0].x.shape[1]
    with tempfile.TemporaryDirectory(prefix="lrnn_table_") as tmp:
        template = os.path.join(tmp, f"{model}.lrnn")
        with open(template, "w") as fp:
            fp.write(lrnn_template(model, features))
        row = {"dataset": os.path.basename(dataset), "model": model, "features": features,
               "lrnn_float32": run_lrnn(args, template, dataset, "float32"),
               "lrnn_float64": run_lrnn(args, template, dataset, "float64"),
               "pyg": run_peer(args, sys.executable, PYG, dataset, model)}
    if have_pyneuralogic:
        row["pyneuralogic"] = run_peer(args, args.pyneuralogic_python, PYNEURALOGIC, dataset, model)
    f32, f64, pyg, pnl = row["lrnn_float32"], row["lrnn_float64"], row["pyg"], row.get("pyneuralogic", {})
    if pyg.get("available") and f32.get("available"):
        row["pyg_over_lrnn_float32"] = pyg["epoch_min_s"] / f32["epoch_min_s"]
    if pnl.get("available") and f64.get("available"):
        row["pyneuralogic_over_lrnn_float64"] = pnl["epoch_min_s"] / f64["epoch_min_s"]
        row["pyneuralogic_over_lrnn_float32"] = pnl["epoch_min_s"] / f32["epoch_min_s"]
        row["build_pyneuralogic_over_lrnn"] = pnl["build_s"] / f64["build_s"]
    return row


def describe(row: dict) -> str:
    text = (f"{row['dataset']:>9} {row['model']:>6}: lrnn f32 {ms(row['lrnn_float32'])}  f64 {ms(row['lrnn_float64'])}"
            f"  pyg {ms(row['pyg'])}")
    if "pyneuralogic" in row:
        text += f"  pyneuralogic {ms(row['pyneuralogic'])}"
    for key, label in (("pyg_over_lrnn_float32", "pyg/lrnn32"), ("pyneuralogic_over_lrnn_float64", "pnl/lrnn64"),
                       ("build_pyneuralogic_over_lrnn", "build pnl/lrnn")):
        if key in row:
            text += f"  {label} {row[key]:.1f}x"
    for engine in ("lrnn_float32", "lrnn_float64", "pyg", "pyneuralogic"):
        if engine in row and not row[engine].get("available"):
            text += f"\n            {engine}: {row[engine].get('reason')}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--datasets", default="MUTAG,NCI1,PROTEINS", help="comma-separated TU folder names")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: gcn, gsage, gin")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--pyneuralogic-python", default=sys.executable,
                        help="the Python that has neuralogic 0.9.2 (and Java 17)")
    parser.add_argument("--output", default=os.path.join(benchlib.RESULTS, "pyneuralogic_table.json"))
    args = parser.parse_args()
    models = args.models.split(",")
    for model in models:
        if model not in MODELS:
            parser.error(f"--models: unknown model {model!r} (expected {', '.join(MODELS)})")
    warning = benchlib.load_warning()
    if warning:
        print(warning)
    probe = subprocess.run([args.pyneuralogic_python, "-c", "import neuralogic"], capture_output=True)
    have_pyneuralogic = probe.returncode == 0
    if not have_pyneuralogic:
        print(f"pyneuralogic: skipped ({args.pyneuralogic_python} cannot import neuralogic; "
              "pip install neuralogic==0.9.2, needs Java 17)")
    rows = []
    for name in args.datasets.split(","):
        dataset = os.path.join(benchlib.DATASETS, "tu", name)
        if not os.path.isdir(dataset):
            parser.error(f"--datasets: no TU folder {dataset}")
        for model in models:
            rows.append(cell(args, dataset, model, have_pyneuralogic))
            print(describe(rows[-1]), flush=True)
    result = {**benchlib.header(), "benchmark": "pyneuralogic_table", "threads": 1, "epochs": args.epochs,
              "lr": args.lr, "width": 10, "batch_size": 1, "rows": rows, "load_warning": warning}
    print(f"wrote {benchlib.write_result('pyneuralogic_table', result, args.output)}")
    return 0 if all(r["lrnn_float32"].get("available") and r["lrnn_float64"].get("available") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
