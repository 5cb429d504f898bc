#!/usr/bin/env python3
"""The PyTorch GPU tests of the convolution ops (docs/torch.md, "Convolution ops").

Every op of tests/golden/torch/conv_ops.kdl (fprop, dgrad and wgrad on the sm80 path and the sm90a wgmma path),
loaded with kdl.load() and checked against PyTorch's own convolution (F.conv2d, torch.nn.grad.conv2d_input and
conv2d_weight) computed in float64 from the same inputs: odd sizes, padding, strides, dilations, a channel-sliced
view, NCHW-contiguous inputs (converted by the op), channels_last outputs, a residual given and None, split-K;
bad inputs raise RuntimeError with the op's message; torch.compile and a CUDA-graph capture work.

Outputs are poisoned (the caching allocator is handed 0xff blocks first), so an unwritten element shows as NaN.
Run on a GPU machine through tests/gpu/torch/run.sh (which sets KDLC, KDL_INCLUDE_DIR, PYTHONPATH).
"""
import os
import sys
import time
import unittest

import torch
import torch.nn.functional as F
from torch.nn.grad import conv2d_input, conv2d_weight

import kdl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_ops  # noqa: E402 -- the GEMM ops' helpers: gen, poison, check
from test_ops import gen  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPEC = os.path.join(ROOT, "tests", "golden", "torch", "conv_ops.kdl")
DEV = "cuda"
CL = torch.channels_last
torch.backends.cudnn.allow_tf32 = False

_module = []


def ops():
    if not _module:
        t0 = time.time()
        _module.append(kdl.load(SPEC))
        print(f"  [kdl.load {os.path.relpath(SPEC, ROOT)}: {time.time() - t0:.2f} s]", file=sys.stderr)
    return _module[0]


def rand(g, shape, dtype, scale=1.0, channels_last=True):
    x = (torch.randn(shape, device=DEV, dtype=torch.float32, generator=g) * scale).to(dtype)
    return x.contiguous(memory_format=CL) if channels_last and x.dim() == 4 else x


def poison(*numels):
    """test_ops.poison's 0xff blocks (NaN in every float type), sized for outputs of these element counts."""
    test_ops.poison(*(4 * n + 4096 for n in numels))


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def check(tc, out, ref, tol, what):
    """test_ops.check (shape, all finite, max |out - ref| <= tol * max(1, max |ref|)), and channels_last when 4-D."""
    if out.dim() == 4:
        tc.assertTrue(out.is_contiguous(memory_format=CL), f"{what}: output strides {out.stride()} are not channels_last")
    test_ops.check(tc, out, ref, tol, what)


def d(x):
    return x.double()


TOL = {torch.bfloat16: 2e-2, torch.float16: 4e-3, torch.float32: 1e-3}


class ConvOps(unittest.TestCase):
    def test_fprop_sm80_epilogue(self):
        """c_fprop: relu(alpha * conv + bias + residual), Z = conv (f32), amax; stride, dilation, padding."""
        m, g = ops(), gen(1)
        for (n, c, h, w, k), stride, pad, dil in [((3, 24, 13, 11, 40), (1, 1), (1, 1), (1, 1)),
                                                  ((2, 16, 17, 9, 72), (2, 1), (0, 2), (1, 2)),
                                                  ((1, 8, 5, 7, 24), (1, 3), (2, 1), (2, 1))]:
            X, W = rand(g, (n, c, h, w), torch.bfloat16), rand(g, (k, c, 3, 3), torch.bfloat16, 0.2)
            acc = F.conv2d(d(X), d(W), stride=stride, padding=pad, dilation=dil)
            R = rand(g, acc.shape, torch.bfloat16)
            bias = rand(g, (k,), torch.float32)
            poison(numel(acc.shape) * 3)
            Y, Z, amax = m.c_fprop(X, W, R, bias, 0.7, stride=list(stride), padding=list(pad), dilation=list(dil))
            ref = torch.relu(0.7 * acc + d(bias).view(1, -1, 1, 1) + d(R))
            what = f"c_fprop n{n} c{c} {h}x{w} k{k} stride {stride} pad {pad} dil {dil}"
            check(self, Y, ref, TOL[torch.bfloat16], what + ": Y")
            check(self, Z, acc, TOL[torch.float32], what + ": Z")
            self.assertEqual(amax.dim(), 0)
            self.assertAlmostEqual(amax.item(), Y.double().abs().max().item(), delta=1e-2 * max(1.0, amax.item()))
            # the residual None reads as 0; per-image bias (n, k)
            Y2, _, _ = m.c_fprop(X, W, None, bias, 0.7, stride=list(stride), padding=list(pad), dilation=list(dil))
            check(self, Y2, torch.relu(0.7 * acc + d(bias).view(1, -1, 1, 1)), TOL[torch.bfloat16], what + ": no residual")
            bias2 = rand(g, (n, k), torch.float32)
            Y3, _, _ = m.c_fprop(X, W, R, bias2, 0.7, stride=list(stride), padding=list(pad), dilation=list(dil))
            check(self, Y3, torch.relu(0.7 * acc + d(bias2).view(n, k, 1, 1) + d(R)), TOL[torch.bfloat16],
                  what + ": per-image bias")

    def test_fprop_layouts(self):
        """NCHW-contiguous inputs are converted; a channel slice of a wider channels_last tensor is taken as it is."""
        m, g = ops(), gen(2)
        n, c, h, w, k = 2, 24, 12, 10, 32
        X_nchw = rand(g, (n, c, h, w), torch.bfloat16, channels_last=False)
        self.assertFalse(X_nchw.is_contiguous(memory_format=CL))
        W_nchw = rand(g, (k, c, 3, 3), torch.bfloat16, 0.2, channels_last=False)
        bias = rand(g, (k,), torch.float32)
        acc = F.conv2d(d(X_nchw), d(W_nchw), padding=1)
        Y, Z, _ = m.c_fprop(X_nchw, W_nchw, None, bias, padding=[1, 1])
        check(self, Y, torch.relu(acc + d(bias).view(1, -1, 1, 1)), TOL[torch.bfloat16], "NCHW inputs: Y")
        check(self, Z, acc, TOL[torch.float32], "NCHW inputs: Z")
        wide = rand(g, (n, 40, h, w), torch.bfloat16)
        X = wide[:, 8:8 + c]  # pixel stride 40 elements, 16-byte aligned start
        self.assertEqual(X.stride(1), 1)
        _, Z2, _ = m.c_fprop(X, W_nchw, None, bias, padding=1)
        check(self, Z2, F.conv2d(d(X), d(W_nchw), padding=1), TOL[torch.float32], "channel slice: Z")

    def test_fprop_fixed_stride_f16(self):
        m, g = ops(), gen(3)
        X, W = rand(g, (3, 16, 19, 15), torch.float16), rand(g, (48, 16, 5, 5), torch.float16, 0.2)
        poison(3 * 48 * 10 * 8 * 2)
        Y = m.c_fprop_s2(X, W, 0.5, padding=2)  # stride (2, 2): the spec's
        check(self, Y, 0.5 * F.conv2d(d(X), d(W), stride=2, padding=2), TOL[torch.float16], "c_fprop_s2 5x5 stride 2")

    def test_fprop_sm90(self):
        m, g = ops(), gen(4)
        for (n, c, h, w, k), pad, dil in [((2, 72, 17, 19, 136), (1, 1), (1, 1)), ((3, 64, 9, 30, 64), (2, 0), (2, 1))]:
            X, W = rand(g, (n, c, h, w), torch.bfloat16), rand(g, (k, c, 3, 3), torch.bfloat16, 0.1)
            bias = rand(g, (k,), torch.float32)
            scale = torch.tensor(0.25, device=DEV)
            acc = F.conv2d(d(X), d(W), padding=pad, dilation=dil)
            poison(numel(acc.shape) * 2)
            Y = m.c_fprop_sm90(X, W, bias, scale, padding=list(pad), dilation=list(dil))
            check(self, Y, (acc + d(bias).view(1, -1, 1, 1)) * 0.25, TOL[torch.bfloat16],
                  f"c_fprop_sm90 n{n} c{c} {h}x{w} k{k} pad {pad} dil {dil}")

    def test_dgrad_sm80(self):
        m, g = ops(), gen(5)
        for (n, c, h, w, k), (r, s), stride, pad in [((2, 24, 13, 11, 40), (3, 3), (2, 2), (1, 1)),
                                                     ((3, 16, 9, 14, 32), (1, 3), (1, 2), (0, 1)),
                                                     ((2, 8, 10, 10, 24), (3, 3), (1, 1), (1, 1))]:
            p = (h + 2 * pad[0] - r) // stride[0] + 1
            q = (w + 2 * pad[1] - s) // stride[1] + 1
            dY, W = rand(g, (n, k, p, q), torch.float16), rand(g, (k, c, r, s), torch.float16, 0.2)
            R = rand(g, (n, c, h, w), torch.float16)
            ref = conv2d_input((n, c, h, w), d(W), d(dY), stride=stride, padding=pad) + d(R)
            poison(numel(ref.shape))
            dX = m.c_dgrad(dY, W, R, stride=list(stride), padding=list(pad), input_size=[h, w])
            check(self, dX, ref, TOL[torch.float16], f"c_dgrad n{n} c{c} {h}x{w} k{k} {r}x{s} stride {stride}")
            dX4 = m.c_dgrad(dY, W, R, stride=list(stride), padding=list(pad), input_size=[n, c, h, w])
            check(self, dX4, ref, TOL[torch.float16], "c_dgrad, input_size (n, c, h, w)")
        # without input_size: the smallest h, w whose forward gives p, q
        dY, W = rand(g, (2, 40, 7, 6), torch.float16), rand(g, (40, 24, 3, 3), torch.float16, 0.2)
        dX = m.c_dgrad(dY, W, None, stride=2, padding=1)
        self.assertEqual(tuple(dX.shape), (2, 24, 13, 11))
        check(self, dX, conv2d_input((2, 24, 13, 11), d(W), d(dY), stride=2, padding=1), TOL[torch.float16],
              "c_dgrad, derived input size")

    def test_dgrad_sm90(self):
        m, g = ops(), gen(6)
        n, c, h, w, k = 2, 72, 15, 13, 64
        dY, W = rand(g, (n, k, h, w), torch.bfloat16), rand(g, (k, c, 3, 3), torch.bfloat16, 0.1)
        poison(n * c * h * w * 2)
        dX = m.c_dgrad_sm90(dY, W, 1.5, padding=1)
        check(self, dX, 1.5 * conv2d_input((n, c, h, w), d(W), d(dY), padding=1), TOL[torch.bfloat16], "c_dgrad_sm90")

    def test_wgrad_sm80(self):
        m, g = ops(), gen(7)
        n, c, h, w, k = 4, 24, 14, 13, 40
        X, dY = rand(g, (n, c, h, w), torch.bfloat16), rand(g, (n, k, h, w), torch.bfloat16)
        ref = conv2d_weight(d(X), (k, c, 3, 3), d(dY), padding=1)
        for split in (0, 1, 3, 8):
            poison(k * c * 9 * 4)
            dW = m.c_wgrad(dY, X, padding=1, split_k=split)
            check(self, dW, ref, 2e-3, f"c_wgrad split_k={split}")
        dY2 = rand(g, (n, k, 7, 7), torch.bfloat16)
        dW2 = m.c_wgrad(dY2, X, 2.0, stride=2, padding=1)
        check(self, dW2, 2.0 * conv2d_weight(d(X), (k, c, 3, 3), d(dY2), stride=2, padding=1), 2e-3, "c_wgrad stride 2")

    def test_wgrad_sm90(self):
        m, g = ops(), gen(8)
        n, c, h, w, k = 2, 64, 12, 11, 48
        X, dY = rand(g, (n, c, h, w), torch.bfloat16), rand(g, (n, k, h, w), torch.bfloat16)
        for split in (0, 5):
            poison(k * c * 9 * 4)
            dW = m.c_wgrad_sm90(dY, X, padding=1, kernel_size=[3, 3], split_k=split)
            check(self, dW, conv2d_weight(d(X), (k, c, 3, 3), d(dY), padding=1), 2e-3, f"c_wgrad_sm90 split_k={split}")

    def test_errors(self):
        m, g = ops(), gen(9)
        X, W = rand(g, (2, 24, 8, 8), torch.bfloat16), rand(g, (16, 24, 3, 3), torch.bfloat16)
        bias = rand(g, (16,), torch.float32)
        cases = [
            ("dtype", lambda: m.c_fprop(X.half(), W, None, bias), "X must be torch.bfloat16 (bf16 in the spec)"),
            ("channels", lambda: m.c_fprop(X, W[:, :16], None, bias), "W must be (k, c, r, s) with c = 24"),
            ("fixed filter", lambda: m.c_fprop(X, rand(g, (16, 24, 5, 5), torch.bfloat16), None, bias),
             "the spec fixes filter = (3, 3)"),
            ("bias length", lambda: m.c_fprop(X, W, None, bias[:5]), "bias must be (k,) = (16,)"),
            ("CPU", lambda: m.c_fprop(X.cpu(), W.cpu(), None, bias.cpu()), "X must be a CUDA tensor"),
            # c = 21: not a multiple of the alignment (8 elements): the kernel's own can_implement says so
            ("alignment", lambda: m.c_fprop(rand(g, (2, 21, 8, 8), torch.bfloat16),
                                            rand(g, (16, 21, 3, 3), torch.bfloat16), None, bias), "kdl_conv_ops.c_fprop: "),
            ("kernel_size", lambda: m.c_wgrad_sm90(rand(g, (2, 16, 8, 8), torch.bfloat16), X, padding=1),
             "kernel_size (r, s) must be given"),
        ]
        for what, call, words in cases:
            with self.assertRaises(RuntimeError, msg=what) as cm:
                call()
            self.assertIn(words, str(cm.exception), what)
            self.assertTrue(str(cm.exception).startswith("kdl_conv_ops."), what)

    def test_compile_and_graph(self):
        m, g = ops(), gen(10)
        X, W = rand(g, (2, 16, 11, 9), torch.float16), rand(g, (32, 16, 3, 3), torch.float16, 0.2)

        def f(x, w):
            return torch.relu(m.c_fprop_s2(x, w, 1.0, padding=1)) * 2

        ref = torch.relu(F.conv2d(d(X), d(W), stride=2, padding=1)) * 2
        compiled = torch.compile(f)
        check(self, compiled(X, W), ref, TOL[torch.float16], "torch.compile")
        # a CUDA graph: captured once, replayed on new values written into the same input
        Xs = X.clone(memory_format=CL)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            m.c_fprop_s2(Xs, W, padding=1)  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            Yg = m.c_fprop_s2(Xs, W, padding=1)
        X2 = rand(g, X.shape, torch.float16)
        Xs.copy_(X2)
        graph.replay()
        torch.cuda.synchronize()
        check(self, Yg, F.conv2d(d(X2), d(W), stride=2, padding=1), TOL[torch.float16], "CUDA graph replay")


if __name__ == "__main__":
    unittest.main()
