"""PyNeuraLogic's `PDDLDataset`: PDDL planning problems as logic samples."""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Union

from lrnn.dataset.samples import Dataset, Sample
from lrnn.dataset.base import ConvertibleDataset
from lrnn.utils.pddl.domain import DeleteEffect, PDDLDomain
from lrnn.utils.pddl.parser import PDDLReader
from lrnn.utils.pddl.problem import PDDLProblem


def _read(source: str) -> Any:
    """A path to a PDDL file, or the PDDL text itself."""
    return PDDLReader.read(source) if os.path.isfile(source) else PDDLReader.parse_string(source)


class PDDLDataset(ConvertibleDataset):
    """A PDDL domain and its problems (each a path or the PDDL text): one sample per problem,
    its example the initial state's facts followed (`include_actions`) by the domain's action
    rules `effect :- precondition.`, its query the goal's atoms, as PyNeuraLogic converts them.

    lrnn's engine grounds rules of the template only, so a dataset whose examples hold rules
    is refused when built. The action rules are the same for every problem, so in the template
    they mean the same: `PDDLDataset(domain, problems, include_actions=False)` and
    `template.add_rules(dataset.action_rules())`. Delete effects (`!*p(X) :- pre.`) cannot be
    rules in lrnn (no negated heads); `action_rules(delete_effects=False)` leaves them out."""

    def __init__(self, domain: str, problems: Union[str, Sequence[str]], include_actions: bool = True):
        self.domain_input = domain
        self.problem_inputs: List[str] = [problems] if isinstance(problems, str) else list(problems)
        self.include_actions = include_actions
        self.domain: Optional[PDDLDomain] = None
        self.problems: List[PDDLProblem] = []

    def _load(self) -> None:
        if self.domain is None:
            self.domain = PDDLDomain(_read(self.domain_input))
        if not self.problems:
            self.problems = [PDDLProblem(_read(p)) for p in self.problem_inputs]

    def action_rules(self, delete_effects: bool = True) -> List[Any]:
        """The domain's action rules, in order; without the delete effects if asked."""
        self._load()
        rules = self.domain.to_rules()
        return rules if delete_effects else [r for r in rules if not isinstance(r, DeleteEffect)]

    def to_dataset(self) -> Dataset:
        self._load()
        rules = self.domain.to_rules() if self.include_actions else []
        return Dataset([Sample(problem.goal, problem.init + rules) for problem in self.problems])

    def __str__(self) -> str:
        return f"PDDLDataset(n_problems={len(self.problem_inputs)})"
