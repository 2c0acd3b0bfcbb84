"""Losses, initialisers, optimizers and the evaluator helper, under `neuralogic.nn` names."""

from lrnn.nn.init import Constant, Glorot, He, Initializer, Normal, Uniform
from lrnn.nn.loss import MSE, CrossEntropy, ErrorFunction, SoftEntropy
from lrnn.optim import SGD, Adam, AdamW, Optimizer
# Attention and transformer layers and the sequence-to-sequence model of "Attention Is All
# You Need" as templates (the zoo, issues 5 and 35): every layer file of
# lrnn/nn/zoo/ (its __all__), so a new zoo module needs no line here.
from lrnn.nn.zoo import *  # noqa: F401,F403
from lrnn.nn.zoo import __all__ as _zoo_all


def get_evaluator(template, settings=None):
    """PyNeuraLogic's evaluator: `get_evaluator(template, settings).train(dataset)`."""
    from lrnn.model import Evaluator

    return Evaluator(template, settings)


__all__ = [
    "MSE", "CrossEntropy", "SoftEntropy", "ErrorFunction",
    "Initializer", "Uniform", "Normal", "Glorot", "He", "Constant",
    "Optimizer", "SGD", "Adam", "AdamW", "get_evaluator",
] + list(_zoo_all)
