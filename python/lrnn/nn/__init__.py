"""Losses, initialisers, optimizers and the evaluator helper, under `neuralogic.nn` names."""

from lrnn.nn.init import Constant, Glorot, He, Initializer, Normal, Uniform
from lrnn.nn.loss import MSE, CrossEntropy, ErrorFunction, SoftEntropy
from lrnn.optim import SGD, Adam, AdamW, Optimizer
# Attention and transformer layers as templates (the zoo, issue 5).
from lrnn.nn.transformer import (
    Attention, Mask, MultiheadAttention, RelationalAttention, TransformerDecoderLayer, TransformerEncoder, Transformer,
    TransformerEncoderLayer, positional_encoding,
)
# The sequence-to-sequence model of "Attention Is All You Need" (issue 35, docs/seq2seq.md).
from lrnn.nn.seq2seq import Seq2Seq


def get_evaluator(template, settings=None):
    """PyNeuraLogic's evaluator: `get_evaluator(template, settings).train(dataset)`."""
    from lrnn.model import Evaluator

    return Evaluator(template, settings)


__all__ = [
    "MSE", "CrossEntropy", "SoftEntropy", "ErrorFunction",
    "Initializer", "Uniform", "Normal", "Glorot", "He", "Constant",
    "Optimizer", "SGD", "Adam", "AdamW", "get_evaluator",
    "Attention", "Mask", "MultiheadAttention", "RelationalAttention", "Transformer", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer", "positional_encoding", "Seq2Seq",
]
