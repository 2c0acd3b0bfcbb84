"""PyNeuraLogic's `neuralogic.utils.visualize` over lrnn's pictures (lrnn.draw): the same
argument order (`filename, show, img_type, value_detail, graphviz_path`) and default
(PNG). Without a filename the picture is returned: PNG bytes, SVG text or DOT text; in
Jupyter with show=True, a displayable image."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from lrnn import draw as _draw

PathLike = Optional[Union[str, os.PathLike]]


def draw_model(model: Any, filename: PathLike = None, show: bool = True, img_type: str = "png",
               value_detail: int = 0, graphviz_path: Optional[str] = None, *args: Any, **kwargs: Any) -> Any:
    """The template of a model as a picture (lrnn.draw.draw_model)."""
    _no_extra(args, kwargs, "draw_model")
    return _draw.draw_model(model, filename, show, img_type, value_detail, graphviz_path)


def draw_sample(sample: Any, filename: PathLike = None, show: bool = True, img_type: str = "png",
                value_detail: int = 0, graphviz_path: Optional[str] = None, *args: Any, **kwargs: Any) -> Any:
    """The neural network of a built sample (`model.build_dataset(d)[k]`) as a picture."""
    _no_extra(args, kwargs, "draw_sample")
    return _draw.draw_sample(sample, filename, show, img_type, value_detail, graphviz_path)


def _no_extra(args: tuple, kwargs: dict, name: str) -> None:
    # PyNeuraLogic passes extra arguments to its Java drawer; lrnn has none to pass them to.
    if args or kwargs:
        raise TypeError(f"{name} got arguments lrnn's drawing does not take: {args or ''} {sorted(kwargs) or ''}")


__all__ = ["draw_model", "draw_sample"]
