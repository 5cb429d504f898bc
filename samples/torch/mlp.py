#!/usr/bin/env python3
"""A transformer MLP block whose two GEMMs are KDL kernels, beside the same block in plain PyTorch.

    y = x + W2 gelu(W1 x + b1) + b2

mlp.kdl (next to this file) declares the two kernels with bias, GELU and the residual fused into the
GEMMs' epilogues. kdl.load() compiles them into a PyTorch extension the first time (about a minute;
later runs load it from the per-user cache in milliseconds) and returns a module whose attributes are
the ops, torch.ops.kdl_mlp.mlp_up and torch.ops.kdl_mlp.mlp_down.

Run on a machine with an NVIDIA GPU (sm80 or newer), PyTorch, nvcc and kdlc:
    pip install ./python            # the kdl package (once)
    KDLC=build/kdlc python samples/torch/mlp.py
"""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import kdl

ops = kdl.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp.kdl"))


class KdlMlp(nn.Module):
    """nn.Linear weights; the forward pass calls the two fused KDL ops."""

    def __init__(self, hidden, ffn, device="cuda", dtype=torch.bfloat16):
        super().__init__()
        self.up = nn.Linear(hidden, ffn, device=device, dtype=dtype)
        self.down = nn.Linear(ffn, hidden, device=device, dtype=dtype)

    def forward(self, x):
        # The kernels take their [col] bias inputs as f32; weight.t() is the column-major B (no copy).
        h = ops.mlp_up(x, self.up.weight.t(), self.up.bias.float())
        return ops.mlp_down(h, self.down.weight.t(), x, self.down.bias.float())

    def reference(self, x):
        return x + self.down(F.gelu(self.up(x)))


def timed(fn, x, reps=50):
    """Milliseconds per call: launched one by one from Python (eager), and replayed from a CUDA graph
    (the GPU's time alone, without Python's and the ops' host-side work)."""
    fn(x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn(x)
    end.record()
    torch.cuda.synchronize()
    eager = start.elapsed_time(end) / reps
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn(x)
    graph.replay()
    torch.cuda.synchronize()
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    return eager, start.elapsed_time(end) / reps


def main():
    torch.manual_seed(0)
    batch, seq, hidden, ffn = 4, 1000, 1024, 4096  # 1000 tokens: not a multiple of the tile
    model = KdlMlp(hidden, ffn)
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        y = model(x)
        ref = model.reference(x)
        # Compare with PyTorch in float64 of the same bf16 weights (bf16 rounding of h on both sides).
        err = (y.double() - ref.double()).abs().max().item()
        scale = ref.double().abs().max().item()
        print(f"y {tuple(y.shape)} {y.dtype}; max |kdl - pytorch| = {err:.4f} (max |y| = {scale:.2f})")
        ok = err <= 2e-2 * max(1.0, scale)
        t_kdl = timed(model, x)
        t_ref = timed(model.reference, x)
    print(f"time per block on {torch.cuda.get_device_name()}: kdl {t_kdl[0]:.3f} ms eager, {t_kdl[1]:.3f} ms in a "
          f"CUDA graph; pytorch {t_ref[0]:.3f} ms eager, {t_ref[1]:.3f} ms in a CUDA graph")
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
