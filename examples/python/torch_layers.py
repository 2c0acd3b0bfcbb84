"""An lrnn GNN layer inside a torch model (docs/torch_layers.md).

The model is Linear -> ReLU -> GCNConv -> ReLU -> mean pool -> Linear on MUTAG, trained with
torch.optim.Adam on PyG's DataLoader batches. It is trained twice from the same start and
batches: with torch_geometric's GCNConv, and with lrnn's copy of it (GCNConv.from_torch),
whose output is a torch tensor and whose weights are Parameters of the model. The two runs
follow one trajectory, up to float32 rounding."""

from pathlib import Path

import torch
import torch_geometric.nn as pyg
from torch_geometric.loader import DataLoader

from lrnn.datasets import TUDataset, to_pyg
from lrnn.nn.module import GCNConv

TU = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "tu"


class Net(torch.nn.Module):
    def __init__(self, conv):
        super().__init__()
        self.embed, self.conv, self.classify = torch.nn.Linear(7, 32), conv, torch.nn.Linear(32, 2)

    def forward(self, data):
        h = torch.relu(self.conv(torch.relu(self.embed(data.x)), data.edge_index))
        return self.classify(pyg.global_mean_pool(h, data.batch, size=data.num_graphs))


def train(conv_of, graphs, epochs=10):
    torch.manual_seed(0)
    net = Net(conv_of(pyg.GCNConv(32, 32)))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    train_set, test_set = graphs[:150], graphs[150:]
    order = torch.Generator().manual_seed(1)  # the same batches for both runs
    for _ in range(epochs):
        for batch in DataLoader(train_set, batch_size=32, shuffle=True, generator=order):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(batch), batch.y)
            loss.backward()
            optimizer.step()
    test = next(iter(DataLoader(test_set, batch_size=len(test_set))))
    with torch.no_grad():
        accuracy = float((net(test).argmax(1) == test.y).float().mean())
    return net, float(loss.detach()), accuracy


def main():
    dataset = TUDataset(TU, "MUTAG")
    graphs = to_pyg(dataset)
    order = torch.randperm(len(graphs), generator=torch.Generator().manual_seed(0)).tolist()
    graphs = [graphs[i] for i in order]

    _, their_loss, their_accuracy = train(lambda conv: conv, graphs)
    print(f"PyG GCNConv:  last batch loss {their_loss:.4f}, test accuracy {their_accuracy:.3f}")
    net, loss, accuracy = train(GCNConv.from_torch, graphs)
    print(f"lrnn GCNConv: last batch loss {loss:.4f}, test accuracy {accuracy:.3f}")
    print(f"accuracy within 2 points of PyG's: {abs(accuracy - their_accuracy) <= 0.02}")
    print("lrnn's weights in the model:", [name for name, _ in net.named_parameters() if name.startswith("conv")])


if __name__ == "__main__":
    main()
