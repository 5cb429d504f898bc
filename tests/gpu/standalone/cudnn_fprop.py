#!/usr/bin/env python3
"""cuDNN's conv fprop (through PyTorch, bf16 channels_last, cudnn.benchmark) on the shape prof_conv_sm90 runs,
for Nsight Compute: 20 launches after the benchmark's search, the last five inside the NVTX range "prof".
  python3 cudnn_fprop.py [0|2|3]   (3: the 1x1, N64 C128 112x112 K128)"""
import sys

import torch

shape = sys.argv[1] if len(sys.argv) > 1 else "0"
n, c, hw, k, f = {"2": (32, 512, 28, 512, 3), "3": (64, 128, 112, 128, 1)}.get(shape, (32, 256, 56, 256, 3))
pad = f // 2
torch.backends.cudnn.benchmark = True
x = (torch.rand(n, c, hw, hw, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
w = (torch.rand(k, c, f, f, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
for _ in range(15):
    y = torch.nn.functional.conv2d(x, w, padding=pad)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("prof")
for _ in range(5):
    y = torch.nn.functional.conv2d(x, w, padding=pad)
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
print("cudnn_fprop: N%d C%d %dx%d K%d, %s" % (n, c, hw, hw, k, tuple(y.shape)))
