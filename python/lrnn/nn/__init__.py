"""Losses, initialisers, optimizers and the evaluator helper, under `neuralogic.nn` names."""

from lrnn.nn.init import Constant, Glorot, He, Initializer, Normal, Uniform
from lrnn.nn.loss import MSE, CrossEntropy, ErrorFunction, SoftEntropy
from lrnn.optim import SGD, Adam, AdamW, Optimizer


def get_evaluator(template, settings=None):
    """PyNeuraLogic's evaluator: `get_evaluator(template, settings).train(dataset)`."""
    from lrnn.model import Evaluator

    return Evaluator(template, settings)


__all__ = [
    "MSE", "CrossEntropy", "SoftEntropy", "ErrorFunction",
    "Initializer", "Uniform", "Normal", "Glorot", "He", "Constant",
    "Optimizer", "SGD", "Adam", "AdamW", "get_evaluator",
]
