"""PDDL (planning domains and problems) read into lrnn's relations and rules, as PyNeuraLogic's
`neuralogic.utils.pddl`: `parser` reads the text into nested lists, `domain` turns actions into
rules, `problem` turns the initial state into facts and the goal into queries. The dataset
built from them is `lrnn.dataset.PDDLDataset`."""

from lrnn.utils.pddl.domain import Action, DeleteEffect, PDDLDomain
from lrnn.utils.pddl.parser import PDDLReader, parse_sexpr, tokenize
from lrnn.utils.pddl.problem import PDDLProblem

__all__ = ["Action", "DeleteEffect", "PDDLDomain", "PDDLProblem", "PDDLReader", "parse_sexpr", "tokenize"]
