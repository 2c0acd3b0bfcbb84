"""The engine side of the package: what lrnn.Model (lrnn/model.py) builds, returns and
reads back, one concern a module: built datasets and samples (built), training and
evaluation results (results), weights by name and PyNeuraLogic index (parameters).
tests/python/test_import_layering.py checks which modules may import these."""
