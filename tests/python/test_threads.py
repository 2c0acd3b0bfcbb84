"""Threads (include/lrnn/model.hpp "Threads", docs/semantics.md "Threads"). Issue 32: two
threads training one model crashed the process or gave a different model every run. One
model's calls are serialised, so two threads training it give the model that the same calls
made one after the other give; two models in two threads are independent and exact."""

import threading

import numpy as np

from lrnn import R, Settings
from lrnn.dataset import Dataset, Sample
from lrnn.examples import xor_template
from lrnn.nn.optim import Adam

XOR_ROWS = [((0, 0), 0), ((0, 1), 1), ((1, 0), 1), ((1, 1), 0)]


def dataset():
    """400 small samples: the XOR rows a hundred times."""
    return Dataset([Sample(R.xor[y], [R.a[a], R.b[b]]) for _ in range(100) for (a, b), y in XOR_ROWS])


def built(seed=3):
    model = xor_template().build(Settings(optimizer=Adam(lr=0.05), seed=seed, batch_size=16))
    return model, model.build_dataset(dataset())


def weights(model):
    return {name: np.array(value, copy=True) for name, value in model.state_dict()["weights"].items()}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def run_threads(*work):
    errors = []

    def guarded(fn):
        try:
            fn()
        except BaseException as e:  # reported to the test below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def train_five_times(model, data):
    for _ in range(5):
        model.train(data, epochs=4, progress=False)


def test_two_threads_training_one_model_equal_the_same_calls_in_sequence():
    model, data = built()
    for _ in range(10):
        model.train(data, epochs=4, progress=False)
    sequential = weights(model)
    for _ in range(3):
        shared, shared_data = built()
        run_threads(lambda: train_five_times(shared, shared_data), lambda: train_five_times(shared, shared_data))
        assert_same(weights(shared), sequential)


def test_a_training_callback_may_call_its_model_while_another_thread_waits():
    model, data = built()
    seen = []

    def with_callback():
        model.train(data, epochs=3, progress=False, callback=lambda report: seen.append(weights(model)) or True)

    run_threads(with_callback, lambda: model.train(data, epochs=3, progress=False))
    assert len(seen) == 3
    reference, reference_data = built()
    reference.train(reference_data, epochs=3, progress=False)
    reference.train(reference_data, epochs=3, progress=False)
    assert_same(weights(model), weights(reference))


def test_two_models_in_two_threads_are_independent_and_exact():
    alone = {}
    for seed in (3, 4):
        model, data = built(seed)
        train_five_times(model, data)
        alone[seed] = weights(model)
    (a, a_data), (b, b_data) = built(3), built(4)
    run_threads(lambda: train_five_times(a, a_data), lambda: train_five_times(b, b_data))
    assert_same(weights(a), alone[3])
    assert_same(weights(b), alone[4])
    assert not all(np.array_equal(alone[3][k], alone[4][k]) for k in alone[3])  # the seeds differ
