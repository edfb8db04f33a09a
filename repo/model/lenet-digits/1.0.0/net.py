"""LeNet-style CNN for 8x8 grey digits: input float32 [N,1,8,8] (pixels scaled to 0..1), output logits [N,10].

``build()`` is the factory named in meta.json "architecture": the torch backend calls it and
loads lenet-digits.state_dict.pt into the module it returns. Torch only; no other imports.
"""
from torch import nn


class LeNetDigits(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),   # 8x8 keeps its size
            nn.ReLU(),
            nn.Conv2d(8, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),                              # -> 16x4x4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),                                 # channels-first order: c*16 + h*4 + w
            nn.Linear(16 * 4 * 4, 64),
            nn.ReLU(),
            nn.Linear(64, classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def build(classes: int = 10) -> LeNetDigits:
    return LeNetDigits(classes)
