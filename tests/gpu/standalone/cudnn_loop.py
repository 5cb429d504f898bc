#!/usr/bin/env python3
"""cuDNN's conv fprop (through PyTorch, bf16 channels_last, every algorithm autotuned) launched back to back for 5 s:
the figure at the card's power cap, beside `bench_conv_sm80 L SHAPE` (docs/perf-notes.md v29).
  python3 cudnn_loop.py [0|2|3]   (0: N32 C256 56x56 K256 3x3, 2: N32 C512 28x28 K512 3x3, 3: the 1x1)"""
import sys
import time

import torch

shape = sys.argv[1] if len(sys.argv) > 1 else "0"
n, c, hw, k, f = {"2": (32, 512, 28, 512, 3), "3": (64, 128, 112, 128, 1)}.get(shape, (32, 256, 56, 256, 3))
pad = f // 2
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.benchmark_limit = 0
x = (torch.rand(n, c, hw, hw, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
w = (torch.rand(k, c, f, f, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
for _ in range(20):
    y = torch.nn.functional.conv2d(x, w, padding=pad)
torch.cuda.synchronize()
flop = 2.0 * n * hw * hw * k * c * f * f
a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
ms = []
t0 = time.time()
while time.time() - t0 < 5.0:
    a.record()
    for _ in range(10):
        y = torch.nn.functional.conv2d(x, w, padding=pad)
    b.record(); b.synchronize()
    ms.append(a.elapsed_time(b) / 10)
ms.sort()
m = ms[len(ms) // 2]
print("cudnn shape %s: %.4f ms %.1f TFLOP/s (median of %d batches)" % (shape, m, flop / m / 1e9, len(ms)))
