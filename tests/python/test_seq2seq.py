"""The sequence-to-sequence transformer of issue 35 (lrnn.nn.Seq2Seq, docs/seq2seq.md) against
the torch model of the same function (lrnn.nn.seq2seq_torch.TorchSeq2Seq), float64: the loss
with label smoothing and every weight's gradient over a batch of pairs of different lengths,
the noam schedule step by step against LambdaLR, and greedy generation token for token."""

import numpy as np
import pytest

from lrnn import Settings
from lrnn.nn import Seq2Seq

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
from lrnn.nn.seq2seq_torch import TorchSeq2Seq, batch_tensors  # noqa: E402

SIZES = dict(vocab_size=7, d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16,
             max_len=10)
PAIRS = [([3, 4, 5, 6], [6, 5, 4, 3]), ([4, 3], [3, 4]), ([5, 5, 6], [6, 5, 5])]
BOS, EOS = 1, 2


def torch_twin(tie_output: bool, seed: int = 0):
    torch.manual_seed(seed)
    theirs = TorchSeq2Seq(**SIZES, tie_output=tie_output)
    # Non-trivial layer norms: the trained model's are not 1 and 0.
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    ours = Seq2Seq(**SIZES, bos=BOS, eos=EOS, tie_output=tie_output).load_torch(theirs)
    return ours, theirs


def torch_loss(theirs, pairs, label_smoothing):
    src, tgt_in, tgt_out, src_pad, tgt_pad = batch_tensors(pairs, BOS, EOS)
    logits = theirs(src, tgt_in, src_pad, tgt_pad)
    return torch.nn.CrossEntropyLoss(label_smoothing=label_smoothing)(logits.reshape(-1, SIZES["vocab_size"]),
                                                                       tgt_out.reshape(-1))


@pytest.mark.parametrize("tie_output", [True, False])
def test_loss_and_gradients_match_torch_with_label_smoothing(tie_output):
    ours, theirs = torch_twin(tie_output)
    loss = torch_loss(theirs, PAIRS, 0.1)
    loss.backward()
    assert abs(ours.loss(PAIRS, label_smoothing=0.1) - loss.item()) < 1e-9
    # One full-batch SGD step of rate 1 moves every weight by minus its gradient.
    before = ours.torch_state()
    report = ours.fit(PAIRS, epochs=1, batch_size=len(PAIRS), optimizer="sgd", lr=1.0, label_smoothing=0.1,
                      shuffle=False)
    assert abs(report["history"][0]["train"]["loss"] - loss.item()) < 1e-9
    after = ours.torch_state()
    grads = {k: p.grad.numpy() for k, p in theirs.named_parameters()}
    assert set(grads) == set(before)
    for key, g in grads.items():
        np.testing.assert_allclose(before[key] - after[key], g, rtol=0, atol=1e-6, err_msg=key)
    assert max(np.abs(g).max() for g in grads.values()) > 1e-2  # the gradients are not all ~0


def test_noam_schedule_equals_lambdalr_step_by_step():
    ours, theirs = torch_twin(True, seed=1)
    d, warmup, base = SIZES["d_model"], 2, 0.5
    opt = torch.optim.SGD(theirs.parameters(), lr=base)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: d ** -0.5 * min((s + 1) ** -0.5, (s + 1) * warmup ** -1.5))
    rates = []
    for _ in range(2):  # two epochs, one pair per step
        for pair in PAIRS:
            opt.zero_grad()
            torch_loss(theirs, [pair], 0.0).backward()
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
    report = ours.fit(PAIRS, epochs=2, batch_size=1, optimizer="sgd", lr=base, schedule="noam", warmup=warmup,
                      shuffle=False)
    assert rates[1] > rates[0] and rates[-1] < max(rates)  # warm-up, then decay
    assert [h["lr"] for h in report["history"]] == pytest.approx([rates[2], rates[5]], abs=1e-15)
    after = ours.torch_state()
    for key, p in theirs.state_dict().items():
        np.testing.assert_allclose(after[key], p.numpy(), rtol=0, atol=1e-9, err_msg=key)


def test_greedy_and_beam_generation_equal_torch_token_for_token():
    ours, theirs = torch_twin(True, seed=2)
    # A little training, so that decoding follows a learned (not uniform) distribution.
    ours.fit(PAIRS, epochs=3, batch_size=1, optimizer="adam", lr=0.01, shuffle=False)
    with torch.no_grad():
        for key, value in ours.torch_state().items():
            theirs.state_dict()[key].copy_(torch.from_numpy(value))
    sources = [[3, 4, 5, 6], [4, 3], [6, 6, 5, 4, 3], [5], [3, 3, 3]]
    total = 0
    for src in sources:
        want = theirs.generate(src, 8, BOS, EOS)
        assert ours.generate(src, 8) == want, src
        total += len(want)
    assert total > len(sources)  # the decodes are not all empty
    beams = [ours.generate(src, 8, beam=3) for src in sources]
    assert beams == [theirs.generate(src, 8, BOS, EOS, beam=3) for src in sources]
    assert beams != [ours.generate(src, 8) for src in sources]  # the beam finds other sequences here


def test_settings_and_data_are_refused_with_the_input_at_fault():
    with pytest.raises(ValueError, match="label_smoothing"):
        Settings(label_smoothing=1.5)
    with pytest.raises(ValueError, match="label_smoothing"):
        Settings(label_smoothing="0.1")
    with pytest.raises(ValueError, match="warmup"):
        Settings(warmup=0)
    model = Seq2Seq(**SIZES, bos=BOS, eos=EOS)
    with pytest.raises(ValueError, match="token 9, outside the vocabulary"):
        model.fit([([3, 9], [4])], epochs=1)
    with pytest.raises(ValueError, match="max_len=10"):
        model.fit([([3] * 11, [4])], epochs=1)
    with pytest.raises(Exception, match="label_smoothing"):
        model.fit(PAIRS, epochs=1, label_smoothing=2.0)
    with pytest.raises(ValueError, match="bos=7"):
        Seq2Seq(**SIZES, bos=7)


def test_cli_trains_the_template_and_generates_as_python_does(tmp_path):
    import json
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cli = Path(os.environ.get("LRNN_CLI", root / "build" / "lrnn"))
    if not cli.exists():
        pytest.skip("build/lrnn is not built")
    ours, _ = torch_twin(True, seed=3)
    (tmp_path / "t.lrnn").write_text(ours.rules() + "\n")
    examples, queries = ours.examples_text(PAIRS * 4)
    (tmp_path / "e.txt").write_text(examples)
    (tmp_path / "q.txt").write_text(queries)
    run = subprocess.run([str(cli), "train", str(tmp_path / "t.lrnn"), "-e", str(tmp_path / "e.txt"), "-q",
                          str(tmp_path / "q.txt"), "--loss", "crossentropy", "--label-smoothing", "0.1", "--lr", "1",
                          "--schedule", "noam", "--warmup", "4", "--d-model", "8", "--batch-size", "3", "--epochs",
                          "3", "--save", str(tmp_path / "m.json")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    sources = [[3, 4, 5, 6], [4, 3], [6, 6, 5, 4, 3]]
    run = subprocess.run([str(cli), "generate", str(tmp_path / "m.json"), "--max-len", "8", "--bos", str(BOS),
                          "--eos", str(EOS)] + [a for s in sources for a in ("--input", " ".join(map(str, s)))],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    saved = {p["name"]: p["values"] for p in json.loads((tmp_path / "m.json").read_text())["parameters"]}
    for name in ours.parameters():
        ours.set_parameter(name, np.reshape(saved["$" + name], ours.parameters()[name].shape))
    assert lines == [" ".join(map(str, ours.generate(s, 8))) for s in sources]
    assert any(lines)
    run = subprocess.run([str(cli), "generate", str(tmp_path / "m.json"), "--max-len", "8", "--beam", "3"]
                         + [a for s in sources for a in ("--input", " ".join(map(str, s)))],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [" ".join(map(str, ours.generate(s, 8, beam=3))) for s in sources]
    bad = subprocess.run([str(cli), "generate", str(tmp_path / "m.json"), "--max-len", "3", "--input", "3 x"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "'x' is not a token in [0, 7)" in bad.stderr
    bad = subprocess.run([str(cli), "generate", str(tmp_path / "m.json"), "--max-len", "3", "--input",
                          " ".join(["3"] * 11)], capture_output=True, text=True)
    assert bad.returncode != 0 and "has 11 tokens; the model encodes 10 positions" in bad.stderr
    bad = subprocess.run([str(cli), "generate", str(tmp_path / "m.json"), "--max-len", "11", "--input", "3"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "the model encodes 10 (its max_len)" in bad.stderr


def test_public_settings_reach_the_engine_label_smoothing_and_noam(tmp_path):
    """Settings(label_smoothing=, schedule="noam", warmup=, d_model=) through lrnn's
    PyNeuraLogic-style Template.build and train: every epoch's loss and rate equal torch's
    (CrossEntropyLoss(label_smoothing=0.1), SGD under LambdaLR, full batch)."""
    from lrnn import FileDataset, SGD, Template
    from lrnn.nn import CrossEntropy

    (tmp_path / "e.txt").write_text("a :- <[1.0, -2.0]> f(x).\nb :- <[0.5, 3.0]> f(x).\nc :- <[-1.5, 0.25]> f(x).\n")
    (tmp_path / "q.txt").write_text("a :- 2 out(x).\nb :- 0 out(x).\nc :- 1 out(x).\n")
    settings = Settings(optimizer=SGD(lr=2.0), error_function=CrossEntropy(), epochs=4, batch_size=0, seed=3,
                        label_smoothing=0.1, schedule="noam", warmup=2, d_model=4)
    model = Template.from_string("out(X) :- $w={3,2} f(X).").build(settings)
    w = torch.tensor(np.array(model.parameters()["$w"]), dtype=torch.float64).reshape(3, 2).requires_grad_(True)
    history = model.train(FileDataset(tmp_path / "e.txt", tmp_path / "q.txt"), progress=False)
    x = torch.tensor([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], dtype=torch.float64)
    y = torch.tensor([2, 0, 1])
    opt = torch.optim.SGD([w], lr=2.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 4 ** -0.5 * min((s + 1) ** -0.5, (s + 1) * 2 ** -1.5))
    losses, rates = [], []
    for _ in range(4):
        opt.zero_grad()
        loss = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(x @ w.T, y)
        loss.backward()
        losses.append(loss.item())
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert history.train_losses == pytest.approx(losses, abs=1e-12)
    assert history.learning_rates == pytest.approx(rates, abs=1e-15)
