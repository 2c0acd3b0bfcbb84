"""What the neural-predicate examples share (docs/neurosymbolic.md): an epoch of -log p
training over batches in the data's order, and the command line and loop of their main()."""
from __future__ import annotations

import argparse
import time
from typing import Callable

import torch


def train_batches(batch_probability: Callable[[slice], torch.Tensor], rows: int, optimizer, batch_size: int) -> float:
    """One epoch: for each batch (a slice of the rows, in order) the loss -log p of
    batch_probability(batch), a backward pass and an optimizer step. Returns its seconds."""
    start = time.perf_counter()
    for s in range(0, rows, batch_size):
        p = batch_probability(slice(s, s + batch_size))
        loss = -torch.log(p.clamp_min(1e-12)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def parser(description: str, epochs: int) -> argparse.ArgumentParser:
    """The examples' common options (--epochs, --train, --test, --batch-size, --engine)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--train", type=int, default=700)
    p.add_argument("--test", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--engine", choices=["lrnn", "torch"], default="lrnn")
    return p


def run(args, net: torch.nn.Module, probability, train, train_epoch, accuracy: Callable[[], float], lr: float,
        what: str) -> None:
    """--epochs epochs of train_epoch with Adam, printing each one's seconds and accuracy()."""
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    for epoch in range(1, args.epochs + 1):
        seconds = train_epoch(net, probability, train, optimizer, args.batch_size)
        print(f"epoch {epoch}: {seconds:.3f} s, {what} {accuracy():.3f}")
