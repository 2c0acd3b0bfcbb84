"""Pictures from Python (lrnn.draw, template.draw(), model.draw(), built_dataset[k].draw())
and the training report: the DOT is parsed back and must hold the expected nodes and
edges of a known template and sample; SVG needs Graphviz (skipped with a message when it
is absent); the HTML report of `lrnn train --report` holds both curves, one point per
epoch."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import lrnn
from lrnn import Dataset, R, Settings, Template, V
from lrnn.draw import draw_model, draw_sample, to_dot_source

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("LRNN_CLI", ROOT / "build" / "lrnn"))
needs_cli = pytest.mark.skipif(not CLI.exists(), reason="the lrnn CLI is not built")
needs_graphviz = pytest.mark.skipif(shutil.which("dot") is None,
                                    reason="Graphviz's dot is not installed (apt-get install graphviz)")

TEMPLATE = (
    "hidden(X) :- {3,2} f(X), {3}. [activation=tanh]\n"
    "{1,3} out :- hidden(X). [aggregation=max]\n"
    "out/0 [activation=sigmoid]\n"
)
EXAMPLES = "<1> out :- <[0.5, -1]> f(a), <[1, 2]> f(b).\n<0> out :- <[-1, 0.3]> f(a).\n"

EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)"(?: \[label="((?:[^"\\]|\\.)*)")?', re.M)
NODE = re.compile(r'^\s*"([^"]+)" \[label="((?:[^"\\]|\\.)*)"', re.M)


def parse_dot(dot):
    visible = "\n".join(line for line in dot.splitlines() if "style=invis" not in line)  # layout only
    edges = [(a, b, label) for a, b, label in EDGE.findall(visible)]
    edge_lines = {m.start() for m in EDGE.finditer(visible)}
    nodes = {m.group(1): m.group(2) for m in NODE.finditer(visible) if m.start() not in edge_lines}
    return nodes, edges


def built(tmp_path):
    (tmp_path / "t.lrnn").write_text(TEMPLATE)
    (tmp_path / "e.txt").write_text(EXAMPLES)
    model = Template(template_file=str(tmp_path / "t.lrnn")).build(Settings(seed=1))
    data = model.build_dataset(lrnn.FileDataset(examples_file=str(tmp_path / "e.txt")))
    return model, data


def test_template_dot_has_the_predicates_and_rules(tmp_path):
    model, _ = built(tmp_path)
    nodes, edges = parse_dot(to_dot_source(model))
    assert nodes == {"f/1": r"f/1\nexample facts", "hidden/1": r"hidden/1\nidentity", "out/0": r"out/0\nsigmoid"}
    assert sorted(edges) == [("f/1", "hidden/1", r"r0 3x2\ntanh, avg\noffset 3x1"),
                             ("hidden/1", "out/0", r"r1\nidentity, max\nhead 1x3")]
    # The unbuilt template draws the same picture; img_type="dot" returns the text itself.
    template = Template(template_file=str(tmp_path / "t.lrnn"))
    assert template.draw(img_type="dot") == to_dot_source(model)


def test_dsl_template_draws(tmp_path):
    t = Template()
    t += R.h(V.X) <= R.e(V.X, V.Y)
    nodes, edges = parse_dot(draw_model(t, img_type="dot"))
    assert set(nodes) == {"h/1", "e/2"}
    assert [(a, b) for a, b, _ in edges] == [("e/2", "h/1")]


def test_sample_network_and_grounding(tmp_path):
    model, data = built(tmp_path)
    assert len(data) == 2
    sample = data[0]
    nodes, edges = parse_dot(sample.draw(img_type="dot", value_detail=2))
    by_label = {label.split("\\n")[0]: node for node, label in nodes.items()}
    atoms = {"f(a)", "f(b)", "hidden(a)", "hidden(b)", "out"}
    assert atoms <= set(by_label)
    assert sum(label.startswith("rule r") for label in nodes.values()) == 4
    assert sum(label.startswith("aggregate r") for label in nodes.values()) == 3
    assert len(edges) == 11
    # The value printed for `out` is the model's output for sample 0 (12 digits).
    out_label = nodes[by_label["out"]]
    value = float(re.search(r"value (\S+)", out_label).group(1))
    assert value == pytest.approx(float(np.ravel(model(data))[0]), abs=1e-11)
    # The grounding: atoms only, an edge per ground rule input.
    nodes, edges = parse_dot(draw_sample(sample, img_type="dot", what="ground"))
    ids = {label.split("\\n")[0]: node for node, label in nodes.items()}
    assert set(ids) == atoms
    assert sorted((a, b) for a, b, _ in edges) == sorted([
        (ids["f(a)"], ids["hidden(a)"]), (ids["f(b)"], ids["hidden(b)"]),
        (ids["hidden(a)"], ids["out"]), (ids["hidden(b)"], ids["out"])])
    # The second sample has one fact, and indices are checked.
    assert len(parse_dot(data[-1].draw(img_type="dot", what="ground"))[0]) == 3
    with pytest.raises(IndexError):
        data[2]


def test_training_changes_the_drawn_values(tmp_path):
    model, data = built(tmp_path)
    before = data[0].draw(img_type="dot")
    model.train(data, epochs=5)
    after = data[0].draw(img_type="dot")
    assert before != after  # the picture is of the model's current weights


def test_python_dataset_sample_draws(tmp_path):
    model = Template(template_file=_write(tmp_path, TEMPLATE)).build(Settings(seed=1))
    dataset = Dataset()
    dataset.add(R.out[1], [R.f("a")[[0.5, -1]], R.f("b")[[1, 2]]])
    nodes, _ = parse_dot(model.build_dataset(dataset)[0].draw(img_type="dot"))
    assert {label.split("\\n")[0] for label in nodes.values()} >= {"f(a)", "f(b)", "hidden(a)", "hidden(b)", "out"}


def _write(tmp_path, text):
    path = tmp_path / "template.lrnn"
    path.write_text(text)
    return str(path)


def test_bad_arguments_are_refused(tmp_path):
    model, data = built(tmp_path)
    with pytest.raises(ValueError, match="value_detail"):
        data[0].draw(img_type="dot", value_detail=3)
    with pytest.raises(ValueError, match="img_type"):
        model.draw(img_type="gif")
    with pytest.raises(lrnn.LrnnError, match=r"\.dot, \.svg or \.png"):
        model.draw(str(tmp_path / "x.pdf"))
    with pytest.raises(TypeError):
        draw_sample(model)
    with pytest.raises(lrnn.LrnnError, match="install graphviz"):
        model.draw(img_type="svg", graphviz_path="/nonexistent/dot")
    assert not (tmp_path / "x.pdf").exists()


@needs_graphviz
def test_svg_text_files_and_jupyter(tmp_path):
    model, data = built(tmp_path)
    svg = model.draw(draw_ipython=False)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for text in ("hidden/1", "out/0", "f/1"):
        assert f">{text}</text>" in svg
    assert model._repr_svg_() == svg
    assert "hidden(a)" in data[0]._repr_svg_()
    model.draw(str(tmp_path / "t.svg"))
    assert (tmp_path / "t.svg").read_text() == svg
    model.draw(str(tmp_path / "t.png"))
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert model.draw(img_type="png", draw_ipython=False)[:4] == b"\x89PNG"


def test_repr_svg_without_graphviz_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    model, _ = built(tmp_path)
    assert model._repr_svg_() is None  # Jupyter then shows the text repr


def test_settings_repr_is_readable():
    s = Settings(optimizer=lrnn.Adam(lr=0.1), epochs=20, seed=3)
    assert repr(s).startswith("Settings(") and "epochs=20" in repr(s) and "seed=3" in repr(s)


def test_history_plot(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib is not installed")
    model, data = built(tmp_path)
    history = model.train(data, epochs=7)
    fig = history.plot(tmp_path / "h.png")
    loss_ax, acc_ax = fig.axes
    assert len(loss_ax.lines[0].get_xdata()) == 7
    assert list(loss_ax.lines[0].get_ydata()) == history.train_losses
    assert (tmp_path / "h.png").read_bytes()[:4] == b"\x89PNG"
    plt.close(fig)


@needs_cli
def test_cli_report_has_both_curves(tmp_path):
    (tmp_path / "t.lrnn").write_text(TEMPLATE)
    (tmp_path / "e.txt").write_text(EXAMPLES)
    report = tmp_path / "report.html"
    run = subprocess.run([str(CLI), "train", str(tmp_path / "t.lrnn"), "-e", str(tmp_path / "e.txt"),
                          "--test-examples", str(tmp_path / "e.txt"), "--epochs", "12", "--lr", "0.1",
                          "--report", str(report), "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    history = result["history"]
    assert [e["epoch"] for e in history] == list(range(1, 13))
    assert all("test" in e for e in history)
    html = report.read_text()
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    lines = dict(re.findall(r'<polyline data-series="([^"]+)"[^>]*points="([^"]*)"', html))
    assert set(lines) == {"train loss", "test loss", "train accuracy", "test accuracy"}
    for name, points in lines.items():
        assert len(points.split()) == 12, name
    # The loss curve goes down as the history says: y grows downwards in SVG.
    ys = [float(p.split(",")[1]) for p in lines["train loss"].split()]
    losses = [e["train"]["loss"] for e in history]
    assert (ys[0] < ys[-1]) == (losses[0] > losses[-1])
    assert "Settings" in html and "adam" in html and "Outputs (train)" in html and "out" in html


ATTENTION = (
    "q(I) :- {2,2} x(I).\nk(I) :- {2,2} x(I).\n"
    "w(I, J) :- k(J)^T, q(I), @leq(J, I). [combination=product, aggregation=softmax(J)]\n"
    "a(I) :- w(I, J), x(J). [combination=product, aggregation=sum]\n"
)
CELL = re.compile(r'<rect class="weight"[^>]*><title>(\S+) \u2192 (\S+): ([-0-9.e]+)</title>')


def test_attention_heat_map_has_the_engines_weights(tmp_path):
    (tmp_path / "e.txt").write_text("s :- <[1, 2]> x(0), <[-1, 0.5]> x(1), <[0.3, 0.3]> x(2).\n")
    (tmp_path / "q.txt").write_text("s :- a(0), a(1), a(2).\n")
    model = Template(template_file=_write(tmp_path, ATTENTION)).build(Settings(seed=3))
    data = model.build_dataset(lrnn.FileDataset(examples_file=str(tmp_path / "e.txt"),
                                                queries_file=str(tmp_path / "q.txt")))
    svg = data[0].draw(what="attention")
    cells = {(i, j): float(w) for i, j, w in CELL.findall(svg)}
    assert sorted(cells) == [("0", "0"), ("1", "0"), ("1", "1"), ("2", "0"), ("2", "1"), ("2", "2")]
    for i in "012":
        assert sum(w for (q, _), w in cells.items() if q == i) == pytest.approx(1.0, abs=1e-5)
    assert cells[("0", "0")] == pytest.approx(1.0)
    # The same numbers as the atoms of the drawn network.
    assert 'label="... 2 more w/2"' in data[0].draw(img_type="dot")  # 4 of 6 drawn by default
    network = data[0].draw(img_type="dot", value_detail=2, max_per_group=6)  # all six w atoms
    for (i, j), w in cells.items():
        label = re.search(r'label="w\(%s, %s\)\\nvalue ([-0-9.e]+)' % (i, j), network)
        assert label and float(label.group(1)) == pytest.approx(w, abs=1e-5)
    out = tmp_path / "att.svg"
    assert lrnn.draw.draw_attention(data[0], str(out)) is None
    assert out.read_text() == svg
    with pytest.raises(ValueError, match="SVG"):
        data[0].draw(str(tmp_path / "att.png"), what="attention")
    with pytest.raises(ValueError, match="SVG only"):
        data[0].draw(what="attention", img_type="png")
    plain, plain_data = built(tmp_path)
    with pytest.raises(lrnn.LrnnError, match="no attention rule"):
        plain_data[0].draw(what="attention")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@needs_cli
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_report_in_a_real_browser_shows_both_curves(tmp_path):
    """The report opened by headless Chromium: the screenshot has the train curve's blue and
    the test curve's red in both charts (pixels of the page as a browser draws it)."""
    Image = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshot")
    (tmp_path / "t.lrnn").write_text(TEMPLATE)
    (tmp_path / "e.txt").write_text(EXAMPLES)
    report = tmp_path / "report.html"
    run = subprocess.run([str(CLI), "train", str(tmp_path / "t.lrnn"), "-e", str(tmp_path / "e.txt"),
                          "--test-examples", str(tmp_path / "e.txt"), "--epochs", "40", "--lr", "0.1",
                          "--report", str(report)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    shot = tmp_path / "report.png"
    browser = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                              "--window-size=1000,800", f"--screenshot={shot}", report.as_uri()],
                             capture_output=True, text=True, timeout=120)
    assert shot.exists(), browser.stderr[-2000:]
    image = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert image.shape[:2] == (800, 1000)

    def near(colour):  # pixels within a small distance of a curve's colour
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        return (np.abs(image - np.array([r, g, b])).sum(axis=2) < 60)

    blue, red = near("#1f77b4"), near("#d62728")
    # The two charts are stacked: the loss chart above the accuracy chart.
    rows_blue, rows_red = np.nonzero(blue.any(axis=1))[0], np.nonzero(red.any(axis=1))[0]
    assert blue.sum() > 300 and red.sum() > 300, (blue.sum(), red.sum())
    middle = 430  # between the charts at this window size
    assert (rows_blue < middle).any() and (rows_blue > middle).any()
    assert (rows_red < middle).any() and (rows_red > middle).any()


def test_rasp_objects_draw_inline_in_jupyter():
    """RASPy shows s-ops and selectors as pictures in Jupyter; lrnn's _repr_svg_ draws them on
    the display input ("hello" unless set), the same picture as lrnn.rasp.draw."""
    from lrnn import rasp

    reverse_sel = rasp.select(rasp.length - rasp.indices - 1, rasp.indices, "==")
    reverse = rasp.aggregate(reverse_sel, rasp.tokens).name("reverse")
    svg = reverse._repr_svg_()
    assert svg.startswith("<svg") and svg == rasp.draw(reverse, "hello")
    assert ">o<" in svg and ">h<" in svg  # the reversed values are drawn
    width_svg = reverse_sel._repr_svg_()
    assert width_svg.startswith("<svg") and width_svg == rasp.draw(rasp.selector_width(reverse_sel), "hello")
    program = rasp.parse("r = aggregate(select(indices, length - indices - 1, ==), tokens);")
    assert program._repr_svg_() == rasp.draw(program, "hello")
    numbers = rasp.tokens.map(lambda x: x + 1)  # cannot run on characters: shown as text
    assert numbers._repr_svg_() is None
    rasp.set_display_input([1, 2, 3])
    try:
        assert numbers._repr_svg_() == rasp.draw(numbers, [1, 2, 3])
    finally:
        rasp.set_display_input("hello")
