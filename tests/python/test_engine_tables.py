"""The Python package reads the engine's own tables instead of repeating them: function names
(Transformation, Combination, Aggregation name exactly the engine's functions) and the
default settings (lrnn::Settings, the same for the CLI, C++ and Python)."""
from lrnn import _core
from lrnn.core.functions import Aggregation, Combination, Function, Transformation


def names_of(table):
    return {f.name for f in vars(table).values() if isinstance(f, Function)}


def test_python_tables_match_the_engine():
    engine = _core.function_names()
    assert names_of(Transformation) == set(engine["transformation"])
    assert names_of(Combination) == set(engine["combination"])
    assert names_of(Aggregation) == set(engine["aggregation"])


def test_engine_names_are_unique_per_class():
    for kind, names in _core.function_names().items():
        assert len(names) == len(set(names)), kind


def test_settings_defaults_come_from_the_engine():
    # One table of defaults (lrnn::Settings): the CLI's --help shows the same values.
    d = _core.default_settings()
    assert (d["epochs"], d["lr"], d["optimizer"], d["loss"], d["seed"]) == (100, 0.01, "adam", "mse", 1)
    assert d["max_ground_rules"] == 100_000_000
