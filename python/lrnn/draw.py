"""Pictures of templates, models and samples, with PyNeuraLogic's names and arguments
(`neuralogic.utils.visualize`): `draw_model`, `draw_sample`, `draw_grounding`,
`to_dot_source`, `template.draw()`, `model.draw()`, `built_dataset[k].draw()`.

The DOT text is written by the C++ engine (include/lrnn/draw.hpp) and laid out by
Graphviz's `dot` program (Debian package `graphviz`). DOT always works; SVG and PNG need
`dot` and raise LrnnError saying so when it is missing.

    svg = lrnn.draw.draw_model(model)              # SVG text (an SVG object in Jupyter)
    model.draw("template.png")                     # a file; the extension gives the format
    built = model.build_dataset(dataset)
    built[0].draw(value_detail=1)                  # the neural network of sample 0, values
    print(lrnn.draw.to_dot_source(built[0]))       # DOT text, no Graphviz needed
    built[0].draw(what="attention")                # heat maps of the attention weights (SVG)
"""

from __future__ import annotations

import os
from typing import Any, Optional, Union

IMG_TYPES = ("svg", "png", "dot")
WHAT = ("network", "ground", "attention")
DEFAULT_MAX_NODES = 200
DEFAULT_MAX_PER_GROUP = 4  # network pictures: neurons drawn per layer and predicate or rule


def _core():
    from lrnn import _core

    return _core


def _in_ipython() -> bool:
    try:
        shell = get_ipython()  # type: ignore[name-defined]  # noqa: F821
    except NameError:
        return False
    return shell is not None and type(shell).__name__ != "TerminalInteractiveShell"


def _check_detail(value_detail: int) -> int:
    if isinstance(value_detail, bool) or value_detail not in (0, 1, 2):
        raise ValueError(f"Invalid value_detail - {value_detail!r}. Expected 0, 1, or 2.")
    return int(value_detail)


# Templates (lrnn.core.template) and built samples (lrnn.engine.built) draw themselves by
# calling this module: it recognises them by the mark their classes carry (_draws_as), so
# it imports neither (issue 31's import cycle).
def _is_built_sample(obj: Any) -> bool:
    return getattr(obj, "_draws_as", None) == "built_sample"


def _template_dot(obj: Any) -> str:
    engine = getattr(obj, "_engine", None)
    if engine is not None:  # a built model: the template its engine holds
        return _core().template_dot(engine.template_text())
    if getattr(obj, "_draws_as", None) == "template":  # lrnn.core.template.Template
        return _core().template_dot(str(obj))
    raise TypeError(f"expected a Template or Model, got {type(obj).__name__}")


def _sample_dot(sample: Any, value_detail: int, what: str, gradients: bool, max_nodes: int,
                max_per_group: int = DEFAULT_MAX_PER_GROUP) -> str:
    if not _is_built_sample(sample):
        raise TypeError(
            f"expected a built sample (model.build_dataset(dataset)[k]), got {type(sample).__name__}"
        )
    if what not in WHAT:
        raise ValueError(f"what={what!r}: expected one of {', '.join(WHAT)}")
    for name, value in (("max_nodes", max_nodes), ("max_per_group", max_per_group)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    model = sample._dataset._model
    engine = model._require_built()
    parameters = [(name, [float(x) for x in value.reshape(-1)]) for name, value, _ in engine.parameters()]
    if sample._dataset._source is None:
        raise NotImplementedError(
            "drawing a sample of a dataset held in C++ (lrnn.datasets.TUDataset) is not supported yet; "
            "convert it with `lrnn convert tu` and build the dataset from the files to draw it"
        )
    examples_text, queries_text, examples_file, queries_file = sample._dataset._source
    return _core().sample_dot(
        engine.template_text(), parameters, model._config(None, None)["loss"],
        examples_text, queries_text, examples_file, queries_file, sample.index, what,
        True, bool(gradients), _check_detail(value_detail), int(max_nodes), int(max_per_group),
    )


def _output(dot: str, filename: Optional[Union[str, os.PathLike]], draw_ipython: bool, img_type: str,
            graphviz_path: Optional[str]) -> Any:
    """The picture into `filename` (format from its extension; returns None), else as SVG
    text, PNG bytes or DOT text; in Jupyter with draw_ipython, as a displayable object."""
    graphviz = os.fspath(graphviz_path) if graphviz_path is not None else ""
    if filename is not None:
        _core().save_picture(dot, os.fspath(filename), graphviz)
        return None
    kind = str(img_type).lower()
    if kind not in IMG_TYPES:
        raise ValueError(f"img_type={img_type!r}: expected one of {', '.join(IMG_TYPES)}")
    if kind == "dot":
        return dot
    data = _core().render_dot(dot, kind, graphviz)
    if kind == "svg":
        data = data.decode("utf-8")
    if draw_ipython and _in_ipython():
        from IPython.display import SVG, Image

        return SVG(data=data) if kind == "svg" else Image(data=data, format="png")
    return data


def draw_model(model: Any, filename: Optional[Union[str, os.PathLike]] = None, draw_ipython: bool = True,
               img_type: str = "svg", value_detail: int = 0, graphviz_path: Optional[str] = None) -> Any:
    """Draws the template of a model (or a Template): predicates as nodes, rules as edges
    labelled with weight shapes and functions. Into `filename` when given (returns None),
    else returns SVG text (PNG bytes for img_type="png", DOT text for "dot")."""
    _check_detail(value_detail)
    return _output(_template_dot(model), filename, draw_ipython, img_type, graphviz_path)


def draw_sample(sample: Any, filename: Optional[Union[str, os.PathLike]] = None, draw_ipython: bool = True,
                img_type: str = "svg", value_detail: int = 0, graphviz_path: Optional[str] = None, *,
                what: str = "network", gradients: bool = False, max_nodes: int = DEFAULT_MAX_NODES,
                max_per_group: int = DEFAULT_MAX_PER_GROUP) -> Any:
    """Draws the neural network of a built sample (`model.build_dataset(d)[k]`): fact, rule,
    aggregation and atom neurons by layer with their values (value_detail 0/1/2: 3, 6 or
    12 digits) and, with gradients=True, the gradients of the sample's loss. Each layer
    draws at most max_per_group neurons per predicate or rule and counts the rest in a
    "... N more" node; beyond max_nodes nodes whole layers are cut, the facts first (docs/pictures.md
    "Networks of real samples"). what="ground" draws the
    grounding (atoms and ground rules) instead, what="attention" the attention heat maps."""
    if what == "attention":
        return draw_attention(sample, filename, draw_ipython, img_type, value_detail)
    return _output(_sample_dot(sample, value_detail, what, gradients, max_nodes, max_per_group), filename, draw_ipython,
                   img_type, graphviz_path)


def _output_svg(svg: str, filename: Optional[Union[str, os.PathLike]], draw_ipython: bool, img_type: str) -> Any:
    """A picture that is SVG already (attention heat maps): into `filename` (.svg, written
    atomically), else the text (an SVG object in Jupyter)."""
    if str(img_type).lower() != "svg":
        raise ValueError(f"img_type={img_type!r}: the attention picture is SVG only")
    if filename is not None:
        path = os.fspath(filename)
        if _core().picture_format(path) != "svg":
            raise ValueError(f"{path}: the attention picture is SVG; name the file .svg")
        _core().write_text_atomically(path, svg)
        return None
    if draw_ipython and _in_ipython():
        from IPython.display import SVG

        return SVG(data=svg)
    return svg


def draw_attention(sample: Any, filename: Optional[Union[str, os.PathLike]] = None, draw_ipython: bool = True,
                   img_type: str = "svg", value_detail: int = 0) -> Any:
    """Draws the attention weights of a built sample as heat maps: one per rule normalised by
    softmax over a head variable (the zoo's attention), queries as rows, keys as columns;
    masked pairs are grey. SVG only (no Graphviz needed)."""
    return _output_svg(_sample_dot(sample, value_detail, "attention", False, DEFAULT_MAX_NODES), filename,
                       draw_ipython, img_type)


def draw_grounding(sample: Any, filename: Optional[Union[str, os.PathLike]] = None, draw_ipython: bool = True,
                   img_type: str = "svg", value_detail: int = 0, graphviz_path: Optional[str] = None) -> Any:
    """Draws the grounding of a built sample: its atoms and an edge per ground rule input."""
    return draw_sample(sample, filename, draw_ipython, img_type, value_detail, graphviz_path, what="ground")


def model_to_dot_source(model: Any) -> str:
    return _template_dot(model)


def sample_to_dot_source(sample: Any, value_detail: int = 0) -> str:
    return _sample_dot(sample, value_detail, "network", False, DEFAULT_MAX_NODES)


def to_dot_source(obj: Any, value_detail: int = 0) -> str:
    """DOT text of a Template/Model (its template) or of a built sample (its network)."""
    if _is_built_sample(obj):
        return sample_to_dot_source(obj, value_detail)
    _check_detail(value_detail)
    return model_to_dot_source(obj)


def repr_svg(obj: Any) -> Optional[str]:
    """Jupyter's _repr_svg_: the picture as SVG, or None (Jupyter then shows the text repr)
    when Graphviz is not installed or the object cannot be drawn."""
    if not _core().find_graphviz(""):
        return None
    from lrnn.errors import LrnnError

    try:
        dot = to_dot_source(obj)
    except (LrnnError, ValueError, TypeError):
        return None
    return _core().render_dot(dot, "svg", "").decode("utf-8")
