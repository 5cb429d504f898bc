#!/usr/bin/env python3
"""A ResNet block's 3x3 convolution with bias, skip connection and ReLU fused into one KDL kernel, beside the
same layer in plain PyTorch (cuDNN's convolution, then the bias, the add and the ReLU).

    y = relu(conv3x3(x, w, padding=1) + bias + skip)

conv.kdl (next to this file) declares the layer twice: conv_block_sm90 (Hopper: TMA im2col + wgmma) and
conv_block_sm80 (Ampere and newer). kdl.load() builds them into a PyTorch extension the first time (a minute or
two; later runs load it from the per-user cache in milliseconds). The ops take PyTorch's NCHW-shaped tensors in
torch.channels_last and return channels_last outputs; an NCHW-contiguous input is converted (a copy), so keep a
network in channels_last (model.to(memory_format=torch.channels_last)) to pass tensors as they are.

Run on a machine with an NVIDIA GPU (sm80 or newer), PyTorch, nvcc and kdlc:
    pip install ./python            # the kdl package (once)
    KDLC=build/kdlc python samples/torch/conv.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import kdl

ops = kdl.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv.kdl"))
CL = torch.channels_last


class KdlConvBlock(nn.Module):
    """An nn.Conv2d's weight and bias; the forward pass is one fused KDL op."""

    def __init__(self, channels, device="cuda", dtype=torch.bfloat16):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, device=device, dtype=dtype)
        self.conv.to(memory_format=CL)
        hopper = torch.cuda.get_device_capability() == (9, 0)
        self.name = "conv_block_sm90" if hopper else "conv_block_sm80"
        self.op = getattr(ops, self.name)

    def forward(self, x, skip):
        # The [channel] bias is f32 in the spec; padding as F.conv2d takes it.
        return self.op(x, self.conv.weight, skip, self.conv.bias.float(), padding=1)

    def reference(self, x, skip):
        return torch.relu(self.conv(x) + skip)


def timed(fn, reps=30):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main():
    if not torch.cuda.is_available():
        print("conv.py: needs a CUDA GPU", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    block = KdlConvBlock(256)
    for n, hw in [(8, 56), (3, 17)]:  # the second: sizes that are no multiple of any tile
        x = torch.randn(n, 256, hw, hw, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=CL)
        skip = torch.randn_like(x)
        with torch.no_grad():
            y = block(x, skip)
            ref = torch.relu(F.conv2d(x.double(), block.conv.weight.double(), block.conv.bias.double(), padding=1)
                             + skip.double())
            err = (y.double() - ref).abs().max().item() / max(1.0, ref.abs().max().item())
            print(f"conv block n={n} 256x{hw}x{hw} ({block.name}): "
                  f"max relative error {err:.2e}, output channels_last: {y.is_contiguous(memory_format=CL)}")
            if err > 2e-2 or not y.is_contiguous(memory_format=CL):
                print("conv.py: FAILED", file=sys.stderr)
                return 1
            flops = 2.0 * n * hw * hw * 256 * 256 * 9
            ours = timed(lambda: block(x, skip))
            theirs = timed(lambda: block.reference(x, skip))
            print(f"  kdl {ours * 1e3:.1f} us ({flops / ours / 1e9:.0f} TFLOP/s), "
                  f"PyTorch (cuDNN conv, then bias + add + relu) {theirs * 1e3:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
