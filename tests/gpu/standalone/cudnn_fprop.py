#!/usr/bin/env python3
"""cuDNN's conv fprop (through PyTorch, bf16 channels_last, cudnn.benchmark) on the shape prof_conv_sm90 runs,
for Nsight Compute: 20 launches after the benchmark's search, the last five inside the NVTX range "prof".
  python3 cudnn_fprop.py [0|2]"""
import sys

import torch

n, c, hw, k = (32, 512, 28, 512) if len(sys.argv) > 1 and sys.argv[1] == "2" else (32, 256, 56, 256)
torch.backends.cudnn.benchmark = True
x = (torch.rand(n, c, hw, hw, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
w = (torch.rand(k, c, 3, 3, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
for _ in range(15):
    y = torch.nn.functional.conv2d(x, w, padding=1)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("prof")
for _ in range(5):
    y = torch.nn.functional.conv2d(x, w, padding=1)
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
print("cudnn_fprop: N%d C%d %dx%d K%d, %s" % (n, c, hw, hw, k, tuple(y.shape)))
