"""What a model, a template and a built dataset say about themselves, and PyNeuraLogic's
`model(built, train=True)` refused with a pointer to `model.train` (issue 33)."""
import numpy as np
import pytest

from lrnn import Dataset, R, Settings, Template, V

# Two rules and a predicate declaration (a file is one entry of the template, three statements).
TEMPLATE_TEXT = """\
h/1 [activation=identity]
{2, 2} h(X) :- {2, 1} feat(X).
{1, 2} out(X) :- h(X).
"""


@pytest.fixture
def template_file(tmp_path):
    path = tmp_path / "two_rules.lrnn"
    path.write_text(TEMPLATE_TEXT)
    return path


def dataset():
    data = Dataset()
    data.add([R.out(0)[1.0]], [R.feat(0)[0.5]])
    data.add([R.out(1)[0.0]], [R.feat(1)[-1.0]])
    return data


def test_a_template_from_a_file_counts_its_statements(template_file):
    template = Template.from_file(template_file)
    model = template.build(Settings(seed=1))
    assert repr(model).splitlines()[0] == "<lrnn.Model (built, 2 rules, 1 predicate declaration)>"
    assert template._statement_summary() == "2 rules, 1 predicate declaration"


def test_a_template_built_in_python_counts_rules_and_facts():
    template = Template()
    template += R.h(V.X)[2, 1] <= R.feat(V.X)
    template += R.out(V.X)[1, 2] <= R.h(V.X)
    template += R.bias[0.5]
    assert template._statement_summary() == "2 rules, 1 fact"
    assert Template()._statement_summary() == "empty"


def test_a_built_dataset_says_its_samples_queries_and_batch_size(template_file):
    model = Template.from_file(template_file).build(Settings(seed=1))
    assert repr(model.build_dataset(dataset())) == "<lrnn.BuiltDataset (2 samples, 2 queries)>"
    assert repr(model.build_dataset(dataset(), batch_size=1)) == "<lrnn.BuiltDataset (2 samples, 2 queries, batch_size=1)>"


def test_calling_a_model_with_train_true_points_to_model_train(template_file):
    model = Template.from_file(template_file).build(Settings(seed=1))
    built = model.build_dataset(dataset())
    before = model.parameters()
    with pytest.raises(TypeError, match=r"model\.train\(dataset\)"):
        model(built, train=True)
    after = model.parameters()
    assert all(np.array_equal(np.asarray(before[k]), np.asarray(after[k])) for k in before)  # nothing trained
    np.testing.assert_array_equal(model(built, train=False), model(built))
