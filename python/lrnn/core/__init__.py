"""The builder DSL, under PyNeuraLogic's `neuralogic.core` names."""

from lrnn.core.atoms import Atom, Predicate, PredicateDecl, PredicateMetadata, R, Relation
from lrnn.core.functions import Aggregation, Combination, F, Function, Transformation
from lrnn.core.rules import Metadata, Rule, RuleBody
from lrnn.core.settings import Settings
from lrnn.core.template import Template
from lrnn.core.terms import C, Const, Constant, Term, V, Var, Variable
from lrnn.core.values import W, Weight

from lrnn.core.constructs.relation import BaseRelation, WeightedRelation
from lrnn.core.containers import FContainer


def __getattr__(name):
    # Model lives in lrnn.model (it needs the C++ extension); import it lazily so the DSL
    # alone stays importable.
    if name == "Model":
        from lrnn.model import Model

        return Model
    raise AttributeError(name)


__all__ = [
    "R", "Relation", "V", "Var", "C", "Const", "W", "F",
    "Transformation", "Combination", "Aggregation", "Function", "Metadata",
    "Atom", "BaseRelation", "WeightedRelation", "Predicate", "PredicateDecl", "PredicateMetadata",
    "Rule", "RuleBody", "FContainer", "Term", "Variable", "Constant", "Weight",
    "Settings", "Template", "Model",
]
