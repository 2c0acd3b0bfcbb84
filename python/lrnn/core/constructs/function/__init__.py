"""Functions under PyNeuraLogic's module path."""

from lrnn.core.containers import FContainer
from lrnn.core.functions import Aggregation, Combination, F, Function, Transformation

__all__ = ["Aggregation", "Combination", "F", "FContainer", "Function", "Transformation"]
