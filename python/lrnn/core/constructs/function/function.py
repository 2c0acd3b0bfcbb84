"""PyNeuraLogic's `neuralogic.core.constructs.function.function` names: the function classes
(used in its type annotations, `activation: TransformationFunction`)."""

from lrnn.core.functions import Function

# lrnn has one Function class for all three kinds; PyNeuraLogic's names are aliases of it so
# annotations and isinstance checks written against them keep working.
TransformationFunction = Function
CombinationFunction = Function
AggregationFunction = Function

__all__ = ["AggregationFunction", "CombinationFunction", "Function", "TransformationFunction"]
