"""Train the DSL versions of the family and trains templates on NeuraLogic's text files
(FileDataset), and evaluate them.

    python examples/python/train_from_files.py
"""

from pathlib import Path

from lrnn import Adam, FileDataset, Settings
from lrnn.examples import family_template, trains_template

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "neuralogic" / "simple"

for name, template, epochs in [("family", family_template(), 150), ("trains", trains_template(), 100)]:
    dataset = FileDataset(examples_file=DATA / name / "examples.txt", queries_file=DATA / name / "queries.txt")
    model = template.build(Settings(optimizer=Adam(lr=0.05), epochs=epochs, seed=1))
    model.train(dataset, progress=False)
    evaluation = model.test(dataset)
    print(f"{name}: loss {evaluation.loss:.4f}, accuracy {evaluation.accuracy:.2f}")
    for query, output in list(zip(evaluation.queries, evaluation.outputs))[:4]:
        print(f"  {query} = {output:.3f}")
