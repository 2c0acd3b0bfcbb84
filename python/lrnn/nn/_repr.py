"""A readable repr for lrnn.nn modules, as torch prints its modules: the class name and the
constructor arguments the module keeps, defaults left out (`MultiheadAttention(embed_dim=8,
num_heads=2)`)."""

import inspect
from typing import Any


def constructor_repr(module: Any) -> str:
    try:
        parameters = inspect.signature(type(module).__init__).parameters
    except (TypeError, ValueError):
        return f"{type(module).__name__}()"
    fields = []
    for name, p in parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or not hasattr(module, name):
            continue
        value = getattr(module, name)
        if callable(value) and not isinstance(value, type):
            continue  # a method of the same name, not a kept argument
        if p.default is not inspect.Parameter.empty:
            try:
                if value == p.default:
                    continue
            except Exception:  # values without a plain == (arrays) are shown
                pass
        fields.append(f"{name}={value!r}")
    return f"{type(module).__name__}({', '.join(fields)})"
