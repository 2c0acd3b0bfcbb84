"""A query that no rule or fact derives outputs 0 whatever the weights (docs/semantics.md
"Underivable queries"): building such a dataset warns, naming the queries."""
import warnings

import pytest

import lrnn
from lrnn import Dataset, R, Sample, Template, V


def _model():
    template = Template()
    template.add_rules([R.out(V.X)[1, ] <= R.inp(V.X)])
    return template.build(lrnn.Settings())


def test_underivable_query_warns_naming_it():
    model = _model()
    data = Dataset([Sample(R.out("a")[1.0], [R.inp("a")]), Sample(R.out("b")[1.0], [R.inp("a")])])
    with pytest.warns(lrnn.UnderivableQueryWarning, match=r"1 of 2 queries .* out\(b\) \(sample 1\)"):
        built = model.build_dataset(data)
    outputs = [float(v) for v in model.test(built)]
    assert outputs[1] == 0.0  # the underivable query's output, whatever the weight
    assert outputs[0] != 0.0


def test_derived_queries_do_not_warn():
    model = _model()
    data = Dataset([Sample(R.out("a")[1.0], [R.inp("a")])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.build_dataset(data)
