"""lrnn: Lifted Relational Neural Networks on a C++ engine.

The builder DSL mirrors PyNeuraLogic's (`R`, `V`, `C`, `F`, `Transformation`,
`Aggregation`, `Combination`, `Template`, `Settings`, ...), so porting a PyNeuraLogic model
means changing its imports; grounding, execution and training run in C++ (`lrnn._core`).
"""

from lrnn.core import (
    C,
    Aggregation,
    Combination,
    Const,
    F,
    Metadata,
    R,
    Relation,
    Rule,
    Settings,
    Template,
    Transformation,
    V,
    Var,
    W,
)
from lrnn.core.template import set_model_factory
from lrnn.dataset import Dataset, FileDataset, Sample
from lrnn.nn.init import Constant, Glorot, He, Longtail, Normal, Torch, Uniform
from lrnn.nn.loss import MSE, CrossEntropy, SoftEntropy
from lrnn.optim import SGD, Adam, AdamW

__version__ = "0.1.0"


def _new_model():
    # Template.build's Model (lrnn.core.template.set_model_factory): the engine is loaded
    # on first use, as `lrnn.Model` is, so the DSL alone stays importable.
    from lrnn.model import Model

    return Model()


set_model_factory(_new_model)


def initialize(*args, **kwargs) -> None:
    """PyNeuraLogic starts its Java engine here; lrnn's engine is linked in and needs no
    start, so this only records that it was called (the arguments are Java's: ignored)."""
    global _initialized
    _initialized = True


def is_initialized() -> bool:
    """True: lrnn's engine is ready as soon as it is imported."""
    return True


_initialized = False


def manual_seed(seed: int) -> None:
    """The seed of every later build whose Settings give none (PyNeuraLogic's manual_seed)."""
    from lrnn.model import manual_seed as set_seed

    set_seed(seed)


def set_max_memory(size) -> None:
    """The process's memory budget (docs/cli.md "Memory budget"): "4G", "512M", "0.5T" or a
    number of bytes; None restores the default (80% of the memory available at start). A
    stage that would take lrnn's arrays past it raises an LrnnError of kind "limit" naming
    the rule, literal or file at fault. `Settings(max_memory=...)` sets the same budget."""
    from lrnn import _core
    from lrnn.core.settings import check_memory_size

    if size is not None:
        check_memory_size(size, "set_max_memory(...)")
    _core.set_max_memory(size)


def max_memory() -> int:
    """The memory budget in bytes (see set_max_memory)."""
    from lrnn import _core

    return _core.max_memory()


def __getattr__(name):
    # The parts that need the compiled extension load on first use.
    if name == "Model":
        from lrnn.model import Model

        return Model
    if name == "draw":  # pictures (lrnn.draw): needs the extension too
        import lrnn.draw

        return lrnn.draw
    if name in ("LrnnError", "UnderivableQueryWarning"):
        import lrnn.errors

        return getattr(lrnn.errors, name)
    raise AttributeError(f"module 'lrnn' has no attribute {name!r}")


__all__ = [
    "R", "Relation", "V", "Var", "C", "Const", "W", "F",
    "Transformation", "Combination", "Aggregation", "Metadata", "Rule",
    "Template", "Model", "Settings",
    "SGD", "Adam", "AdamW", "MSE", "CrossEntropy", "SoftEntropy",
    "Uniform", "Normal", "Glorot", "He", "Constant", "Longtail", "Torch",
    "initialize", "is_initialized", "manual_seed", "set_max_memory", "max_memory",
    "Dataset", "FileDataset", "Sample", "LrnnError", "UnderivableQueryWarning",
]
