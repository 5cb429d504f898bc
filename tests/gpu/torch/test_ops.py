#!/usr/bin/env python3
"""The PyTorch GPU tests (issue: emitted extensions and the `kdl` package; docs/torch.md).

Every op of the sample specs, the shared examples and tests/gpu/torch/ops.kdl, loaded with kdl.load()
and checked against PyTorch's own result (torch.matmul, F.linear, F.gelu, ...) computed in float64 from
the same inputs, on odd shapes, transposed and sliced views, batched inputs; bad inputs must raise
RuntimeError / ValueError with the op's message; torch.compile and CUDA-graph capture must work.

Outputs are poisoned: before each call the caching allocator is handed blocks filled with 0xff bytes
(NaN in every float type), so an element the kernel does not write shows as NaN.

Run on a GPU machine (tests/gpu/torch/run.sh sets the environment):
  KDLC=.../kdlc KDL_INCLUDE_DIR=include PYTHONPATH=python python3 tests/gpu/torch/test_ops.py -v
Plain unittest (the GPU machine has no pytest).
"""
import os
import sys
import time
import unittest

import torch
import torch.nn.functional as F

import kdl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLES = os.environ.get("KDL_EXAMPLES", os.path.join(os.path.dirname(ROOT), "shared", "spec", "examples"))
DEV = "cuda"

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

_modules = {}


def load(path):
    if path not in _modules:
        t0 = time.time()
        _modules[path] = kdl.load(path)
        print(f"  [kdl.load {os.path.relpath(path, ROOT)}: {time.time() - t0:.2f} s]", file=sys.stderr)
    return _modules[path]


def gen(seed):
    g = torch.Generator(device=DEV)
    g.manual_seed(seed)
    return g


def rand(g, shape, dtype, scale=1.0):
    x = torch.randn(shape, device=DEV, dtype=torch.float32, generator=g) * scale
    return x.to(dtype)


def poison(*numels_bytes):
    """Hand the caching allocator blocks of these byte sizes filled with 0xff, then free them."""
    blocks = [torch.full((n,), 255, dtype=torch.uint8, device=DEV) for n in numels_bytes]
    del blocks


def poison_like(*shapes_dtypes):
    sizes = []
    for shape, dtype in shapes_dtypes:
        n = 1
        for s in shape:
            n *= s
        sizes.append(n * torch.empty((), dtype=dtype).element_size())
    poison(*sizes)


def check(tc, out, ref, tol, what):
    """max |out - ref| <= tol * max(1, max |ref|), no NaN/Inf, same shape."""
    tc.assertEqual(tuple(out.shape), tuple(ref.shape), f"{what}: shape")
    o = out.double()
    tc.assertTrue(bool(torch.isfinite(o).all()), f"{what}: non-finite elements (unwritten or overflow): "
                  f"{int((~torch.isfinite(o)).sum())} of {o.numel()}")
    err = (o - ref).abs().max().item() if o.numel() else 0.0
    bound = tol * max(1.0, ref.abs().max().item() if ref.numel() else 0.0)
    tc.assertLessEqual(err, bound, f"{what}: max error {err:.4g} > {bound:.4g}")


def mm(a, b):
    return torch.matmul(a.double(), b.double())


class Samples(unittest.TestCase):
    """samples/kernels/transformer.kdl: the MLP block's fused GEMMs."""

    @classmethod
    def setUpClass(cls):
        cls.m = load(os.path.join(ROOT, "samples", "kernels", "transformer.kdl"))

    def test_module(self):
        self.assertEqual(sorted(self.m.kernels), ["mlp_f16_nn_relu", "mlp_up_bf16_bias_gelu"])
        self.assertTrue(os.path.isfile(self.m.library))

    def test_linear_bias_gelu_odd_shapes(self):
        g = gen(1)
        for (tokens, hidden, ffn) in [(1, 64, 128), (200, 136, 264), (333, 520, 1000), (1024, 1024, 4096)]:
            x = rand(g, (tokens, hidden), torch.bfloat16)
            w = rand(g, (ffn, hidden), torch.bfloat16, 0.1)  # nn.Linear's weight: out x in
            bias = rand(g, (ffn,), torch.float32)
            poison_like(((tokens, ffn), torch.bfloat16))
            y = self.m.mlp_up_bf16_bias_gelu(x, w.t(), bias)  # w.t() is B (k x n) column-major: no copy
            self.assertEqual(y.dtype, torch.bfloat16)
            self.assertTrue(y.is_contiguous())
            ref = F.gelu(F.linear(x.double(), w.double()) + bias.double())
            check(self, y, ref, 1e-2, f"mlp_up {tokens}x{ffn}x{hidden}")

    def test_batched_activations_shared_weight(self):
        g = gen(2)
        x = rand(g, (3, 77, 256), torch.bfloat16)  # (batch, seq, hidden)
        w = rand(g, (512, 256), torch.bfloat16, 0.1)
        bias = rand(g, (512,), torch.float32)
        y = self.m.mlp_up_bf16_bias_gelu(x, w.t(), bias)
        self.assertEqual(tuple(y.shape), (3, 77, 512))
        check(self, y, F.gelu(F.linear(x.double(), w.double()) + bias.double()), 1e-2, "batched mlp_up")

    def test_batched_both_operands(self):
        g = gen(3)
        a = rand(g, (4, 96, 160), torch.bfloat16)
        b = rand(g, (4, 200, 160), torch.bfloat16, 0.1).transpose(1, 2)  # (4, 160, 200) column-major
        bias = rand(g, (200,), torch.float32)
        y = self.m.mlp_up_bf16_bias_gelu(a, b, bias)
        check(self, y, F.gelu(mm(a, b) + bias.double()), 1e-2, "bmm mlp_up")

    def test_nn_relu_default_and_param(self):
        g = gen(4)
        a = rand(g, (130, 72), torch.float16)
        b = rand(g, (72, 184), torch.float16)
        check(self, self.m.mlp_f16_nn_relu(a, b), torch.relu(mm(a, b)), 1e-2, "nn_relu alpha default")
        check(self, self.m.mlp_f16_nn_relu(a, b, alpha=-0.5), torch.relu(-0.5 * mm(a, b)), 1e-2, "nn_relu alpha")

    def test_views(self):
        g = gen(5)
        # Sliced A: a row-major view with a leading dimension wider than k (no copy needed).
        big = rand(g, (150, 256), torch.float16)
        a = big[:, :96]
        self.assertEqual(a.stride(), (256, 1))
        b = rand(g, (96, 120), torch.float16)
        check(self, self.m.mlp_f16_nn_relu(a, b), torch.relu(mm(a, b)), 1e-2, "sliced A")
        # Transposed A (column-major) where the kernel declares row: copied into the declared layout.
        at = rand(g, (96, 150), torch.float16).t()
        check(self, self.m.mlp_f16_nn_relu(at, b), torch.relu(mm(at, b)), 1e-2, "transposed A (copied)")
        # B given row-major where the kernel declares col: copied.
        x = rand(g, (64, 128), torch.bfloat16)
        brow = rand(g, (128, 256), torch.bfloat16, 0.1)
        bias = rand(g, (256,), torch.float32)
        check(self, self.m.mlp_up_bf16_bias_gelu(x, brow, bias), F.gelu(mm(x, brow) + bias.double()), 1e-2,
              "row-major B (copied)")
        # A non-contiguous, non-transposed view (every other row): copied.
        every_other = rand(g, (128, 64), torch.float16)[::2]
        b2 = rand(g, (64, 64), torch.float16)
        check(self, self.m.mlp_f16_nn_relu(every_other, b2), torch.relu(mm(every_other, b2)), 1e-2, "strided rows")

    def test_bad_inputs_raise(self):
        g = gen(6)
        x = rand(g, (64, 128), torch.bfloat16)
        w = rand(g, (256, 128), torch.bfloat16).t()
        bias = rand(g, (256,), torch.float32)
        op = self.m.mlp_up_bf16_bias_gelu
        cases = [
            ("wrong dtype", lambda: op(x.half(), w, bias), "A"),
            ("wrong bias dtype", lambda: op(x, w, bias.half()), "bias"),
            ("cpu tensor", lambda: op(x.cpu(), w, bias), "A"),
            ("k mismatch", lambda: op(x[:, :64], w, bias), ""),
            ("bias length", lambda: op(x, w, bias[:100]), "bias"),
            ("rank", lambda: op(x[0], w, bias), "A"),
        ]
        # A misaligned view: the data pointer 2 bytes past a 16-byte boundary (the kernel needs 16).
        flat = rand(g, (64 * 128 + 8,), torch.bfloat16)
        mis = flat[1:1 + 64 * 128].view(64, 128)
        cases.append(("misaligned view", lambda: op(mis, w, bias), "align"))
        for what, call, word in cases:
            with self.assertRaises((RuntimeError, ValueError), msg=what) as cm:
                call()
            msg = str(cm.exception)
            self.assertIn("mlp_up_bf16_bias_gelu", msg, f"{what}: the message names the op: {msg}")
            if word:
                self.assertIn(word, msg, f"{what}: {msg}")
        # Nothing is broken afterwards.
        check(self, op(x, w, bias), F.gelu(mm(x, w) + bias.double()), 1e-2, "after errors")

    def test_torch_compile(self):
        g = gen(7)
        x = rand(g, (4, 50, 128), torch.bfloat16)
        w = rand(g, (256, 128), torch.bfloat16, 0.1)
        bias = rand(g, (256,), torch.float32)
        op = self.m.mlp_up_bf16_bias_gelu

        def block(x, w, bias):
            h = op(x, w.t(), bias)
            return (h * 2.0).sum(-1)

        eager = block(x, w, bias)
        compiled = torch.compile(block, fullgraph=True)
        out = compiled(x, w, bias)
        check(self, out, eager.double(), 1e-2, "torch.compile")

    def test_cuda_graph(self):
        g = gen(8)
        x = rand(g, (100, 128), torch.bfloat16)
        w = rand(g, (256, 128), torch.bfloat16, 0.1).t()
        bias = rand(g, (256,), torch.float32)
        op = self.m.mlp_up_bf16_bias_gelu
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            op(x, w, bias)  # warm-up on the side stream
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = op(x, w, bias)
        for seed in (9, 10):
            x.copy_(rand(gen(seed), x.shape, x.dtype))
            graph.replay()
            torch.cuda.synchronize()
            check(self, y, F.gelu(mm(x, w) + bias.double()), 1e-2, f"graph replay {seed}")

    def test_stream(self):
        # The op runs on the current stream: work queued on a side stream is ordered with it.
        g = gen(11)
        x = rand(g, (512, 256), torch.bfloat16)
        w = rand(g, (1024, 256), torch.bfloat16, 0.1).t()
        bias = rand(g, (1024,), torch.float32)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            x2 = x * 2
            y = self.m.mlp_up_bf16_bias_gelu(x2, w, bias)
            z = y.float().sum()
        s.synchronize()
        ref = F.gelu(mm(x * 2, w) + bias.double())
        check(self, y, ref, 1e-2, "side stream")
        self.assertLess(abs(z.item() - y.double().sum().item()), 1e-3 * max(1.0, abs(z.item())) + 1.0)


class SharedExamples(unittest.TestCase):
    """../shared/spec/examples: every example's ops (the GEMMs and conv_fprop.kdl)."""

    def test_gemm_basic(self):
        m = load(os.path.join(EXAMPLES, "gemm_basic.kdl"))
        g = gen(20)
        a = rand(g, (257, 136), torch.bfloat16)
        b = rand(g, (136, 200), torch.bfloat16).t().contiguous().t()
        c = rand(g, (257, 200), torch.bfloat16)
        check(self, m.gemm_bf16_tn(a, b, c), mm(a, b), 1e-2, "gemm_basic defaults (beta 0)")
        check(self, m.gemm_bf16_tn(a, b, c, alpha=0.5, beta=-2.0), 0.5 * mm(a, b) - 2.0 * c.double(), 1e-2,
              "gemm_basic alpha beta")

    def test_gemm_epilogues(self):
        m = load(os.path.join(EXAMPLES, "gemm_epilogues.kdl"))
        g = gen(21)
        a = rand(g, (190, 200), torch.float16)
        b = rand(g, (200, 264), torch.float16)
        bias = rand(g, (264,), torch.float32)
        check(self, m.gemm_f16_bias_relu(a, b, bias), torch.relu(mm(a, b) + bias.double()), 1e-2, "bias_relu")
        ac = rand(g, (200, 200), torch.float16).t()  # A col-major (m = 200: its ld, a multiple of 8)
        bc = rand(g, (264, 200), torch.float16).t()  # B col-major
        scale = rand(g, (200,), torch.float32)
        check(self, m.gemm_f16_scale_gelu(ac, bc, scale, alpha=0.7),
              F.gelu(0.7 * mm(ac, bc)) * scale.double()[:, None], 1e-2, "scale_gelu")
        a32 = rand(g, (130, 72), torch.float32)
        b32 = rand(g, (72, 96), torch.float32).t().contiguous().t()
        c32 = rand(g, (130, 96), torch.float32)
        d, z = m.gemm_f32_tf32_aux(a32, b32, c32, alpha=2.0, beta=0.25)
        # tf32 inputs: 10 mantissa bits
        check(self, z, mm(a32, b32), 5e-3, "tf32 aux Z")
        check(self, d, 2.0 * mm(a32, b32) + 0.25 * c32.double(), 5e-3, "tf32 aux D")

    def test_gemm_sweep(self):
        m = load(os.path.join(EXAMPLES, "gemm_sweep.kdl"))
        self.assertEqual(len(m.kernels), 12)
        g = gen(22)
        sa = torch.tensor([0.5], device=DEV)
        sb = torch.tensor([0.25], device=DEV)
        for name in sorted(m.kernels):
            dt = torch.bfloat16 if "_bf16_" in name else torch.float8_e4m3fn
            for (mm_, nn_, kk) in [(300, 264, 384), (129, 136, 144)]:  # fp8 rows: a multiple of 16 bytes
                a = rand(g, (mm_, kk), dt)
                b = rand(g, (nn_, kk), dt).t()
                poison_like(((mm_, nn_), torch.bfloat16))
                d = getattr(m, name)(a, b, sa, sb)
                check(self, d, 0.125 * mm(a.float(), b.float()), 1e-2, f"{name} {mm_}x{nn_}x{kk}")

    def test_conv_fprop(self):
        # conv_fprop_f16_relu: Y = relu(conv(X, W) + bias) in channels_last (docs/torch.md, "Convolution ops")
        m = load(os.path.join(EXAMPLES, "conv_fprop.kdl"))
        g = gen(23)
        x = rand(g, (3, 32, 13, 11), torch.float16).contiguous(memory_format=torch.channels_last)
        w = (rand(g, (48, 32, 3, 3), torch.float16) * 0.2).contiguous(memory_format=torch.channels_last)
        bias = rand(g, (48,), torch.float32)
        poison_like(((3, 48, 13, 11), torch.float16))
        y = m.conv_fprop_f16_relu(x, w, bias, padding=1)
        self.assertTrue(y.is_contiguous(memory_format=torch.channels_last), f"strides {y.stride()}")
        ref = torch.relu(F.conv2d(x.double(), w.double(), padding=1) + bias.double().view(1, -1, 1, 1))
        check(self, y, ref, 5e-3, "conv_fprop_f16_relu pad 1")
        y2 = m.conv_fprop_f16_relu(x.contiguous(), w, bias, stride=2)  # an NCHW-contiguous X: converted
        check(self, y2, torch.relu(F.conv2d(x.double(), w.double(), stride=2) + bias.double().view(1, -1, 1, 1)), 5e-3,
              "conv_fprop_f16_relu NCHW input, stride 2")


class Ops(unittest.TestCase):
    """tests/gpu/torch/ops.kdl: col-major outputs, extra outputs, amax, split-K, sm90a, fp8, fallback."""

    @classmethod
    def setUpClass(cls):
        cls.m = load(os.path.join(ROOT, "tests", "gpu", "torch", "ops.kdl"))

    def test_col_major_D_aux_amax(self):
        g = gen(30)
        for batch in (None, 3):
            lead = () if batch is None else (batch,)
            a = rand(g, lead + (136, 200), torch.bfloat16).transpose(-1, -2)  # A col-major, m x k = 200 x 136
            b = rand(g, lead + (136, 264), torch.bfloat16)  # B row-major, k x n
            bias = rand(g, (200,), torch.float32)  # [row]: one per row of D, shared across the batch
            poison_like((lead + (200, 264), torch.float32), (lead + (200, 264), torch.bfloat16))
            d, z, amax = self.m.t80_colD_rowbias_aux(a, b, bias)
            self.assertEqual(tuple(d.shape), lead + (200, 264))
            self.assertEqual(d.stride()[-2:], (1, 200), "D is column-major, as declared")
            self.assertTrue(z.is_contiguous(), "Z is row-major, as declared")
            self.assertEqual(amax.dim(), 0)
            acc = mm(a, b)
            check(self, z, acc, 1e-3, f"Z batch={batch}")
            check(self, d, torch.relu(acc + bias.double()[:, None]), 1e-2, f"col-major D batch={batch}")
            top = d.double().abs().max().item()
            self.assertLessEqual(abs(amax.item() - top), 1e-2 * top, f"amax batch={batch}")

    def test_split_k(self):
        g = gen(31)
        a = rand(g, (100, 1000), torch.float16)
        b = rand(g, (72, 1000), torch.float16).t()
        c = rand(g, (100, 72), torch.float32)
        for sk in (1, 2, 4):
            d = self.m.t80_splitk_f16(a, b, c, split_k=sk)
            check(self, d, mm(a, b) + 0.5 * c.double(), 1e-4, f"split_k={sk}")
        with self.assertRaises((RuntimeError, ValueError)) as cm:
            self.m.t80_splitk_f16(a, b, c, split_k=5)
        self.assertIn("split_k", str(cm.exception))

    def test_sm90a_device_scalar_batched(self):
        g = gen(32)
        s = torch.tensor([0.3], device=DEV)
        for shape in [(256, 256, 256), (1, 136, 72), (333, 200, 520)]:
            mm_, nn_, kk = shape
            a = rand(g, (2, mm_, kk), torch.bfloat16)
            b = rand(g, (2, nn_, kk), torch.bfloat16, 0.1).transpose(1, 2)
            poison_like(((2, mm_, nn_), torch.bfloat16))
            d = self.m.t90_bf16_silu(a, b, s)
            check(self, d, F.silu(0.3 * mm(a, b)), 1e-2, f"silu batched {shape}")
        with self.assertRaises((RuntimeError, ValueError)) as cm:  # a host scalar where a device one is declared
            self.m.t90_bf16_silu(a, b, s.cpu())
        self.assertIn("s", str(cm.exception))

    def test_sm90a_dependent_chain(self):
        """Eight sm90a ops, each one's output the next one's A, queued with no synchronization (the kernels launch as
        programmatic dependent launches, docs/language.md section 8; the caching allocator hands a freed
        intermediate's memory to a later output), bitwise equal to the same ops synchronized one by one. 256 rows
        and K = N = 4096: 64 tiles, so each next launch finds idle SMs while the one before still runs."""
        g = gen(34)
        x0 = rand(g, (256, 4096), torch.bfloat16)
        b = rand(g, (4096, 4096), torch.bfloat16, 2.0 / 64).t()  # B col-major; keeps the chain's values O(1)
        s = torch.tensor([1.0], device=DEV)

        def chain(sync):
            x = x0.clone()
            torch.cuda.synchronize()
            for _ in range(8):
                x = self.m.t90_bf16_silu(x, b, s)
                if sync:
                    torch.cuda.synchronize()
            torch.cuda.synchronize()
            return x

        apart, queued = chain(True), chain(False)
        self.assertTrue(bool(torch.isfinite(apart.float()).all()) and apart.abs().max().item() > 0, "chain output")
        self.assertTrue(torch.equal(apart.view(torch.int16), queued.view(torch.int16)),
                        "queued dependent launches differ from synchronized ones")

    def test_fallback_runs_where_tma_cannot(self):
        g = gen(33)
        w = rand(g, (264, 256), torch.bfloat16, 0.1)
        bias = rand(g, (264,), torch.float32)
        ref = lambda x: F.gelu(F.linear(x.double(), w.double()) + bias.double())
        # Batches that are not a stack of rows (130 of every 140 rows): the batch cannot fold into M,
        # so B is shared with batch stride 0, which TMA refuses: the sm80-path fallback runs.
        x = rand(g, (2, 140, 256), torch.bfloat16)[:, :130]
        check(self, self.m.t90_bf16_fallback(x, w.t(), bias), ref(x), 1e-2, "fallback (shared B)")
        # A stack of rows: folded into one GEMM of 2 x 130 rows on the sm90a kernel.
        xs = x.contiguous()
        check(self, self.m.t90_bf16_fallback(xs, w.t(), bias), ref(xs), 1e-2, "batch folded into M")
        check(self, self.m.t90_bf16_fallback(x[0], w.t(), bias), ref(x[0]), 1e-2, "sm90a 2-D")

    def test_batch_fold_sm90a_without_fallback(self):
        # t90_bf16_silu has no fallback: a 3-D A with a shared B runs only because the batch folds.
        g = gen(36)
        s = torch.tensor([0.5], device=DEV)
        x = rand(g, (3, 100, 192), torch.bfloat16)
        w = rand(g, (136, 192), torch.bfloat16, 0.1)
        check(self, self.m.t90_bf16_silu(x, w.t(), s), F.silu(0.5 * F.linear(x.double(), w.double())), 1e-2,
              "folded batch")
        with self.assertRaises(RuntimeError) as cm:  # not a stack of rows: TMA's refusal, verbatim
            self.m.t90_bf16_silu(rand(g, (3, 104, 192), torch.bfloat16)[:, :100], w.t(), s)
        self.assertIn("t90_bf16_silu", str(cm.exception))

    def test_fp8_per_tensor(self):
        g = gen(34)
        for (mm_, nn_, kk) in [(512, 512, 512), (200, 136, 272)]:  # k: rows of a multiple of 16 bytes
            a = rand(g, (mm_, kk), torch.float8_e4m3fn)
            b = rand(g, (nn_, kk), torch.float8_e4m3fn).t()
            sa = torch.tensor([1.5], device=DEV)
            sb = torch.tensor([0.125], device=DEV)
            d = self.m.t90_e4m3_scaled(a, b, sa, sb)
            check(self, d, 1.5 * 0.125 * mm(a.float(), b.float()), 1e-2, f"e4m3 {mm_}x{nn_}x{kk}")
        with self.assertRaises((RuntimeError, ValueError)) as cm:  # f32 where e4m3 is declared
            self.m.t90_e4m3_scaled(a.float(), b, sa, sb)
        self.assertIn("float8_e4m3fn", str(cm.exception))

    def test_fp8_block_scales(self):
        g = gen(35)
        mm_, nn_, kk = 256, 384, 512
        a = rand(g, (mm_, kk), torch.float8_e4m3fn)
        b = rand(g, (nn_, kk), torch.float8_e4m3fn).t()
        kb = kk // 128
        # One scale per block, shaped like the operand in blocks (docs/torch.md): scale_A (m, k/128) read
        # column-major (DeepGEMM's m-major layout: no copy), scale_B (k/128, n/128).
        sa = (torch.rand((kb, mm_), device=DEV, generator=g) + 0.5)
        sb = (torch.rand((kb, nn_ // 128), device=DEV, generator=g) + 0.5)
        d = self.m.t90_e4m3_block(a, sa.t(), b, sb)
        af = a.double().view(mm_, kb, 128) * sa.double().t()[:, :, None]
        bf = b.double().t().reshape(nn_ // 128, 128, kb, 128) * sb.double().t()[:, None, :, None]
        ref = torch.matmul(af.reshape(mm_, kk), bf.reshape(nn_, kk).t())
        check(self, d, ref, 1e-2, "block scales")


class Cache(unittest.TestCase):
    def test_second_load_in_a_new_process_is_a_hit(self):
        import subprocess
        spec = os.path.join(ROOT, "samples", "kernels", "transformer.kdl")
        load(spec)
        code = ("import sys, time, torch, kdl; t = time.time(); m = kdl.load(sys.argv[1]); "
                "print(f'{(time.time() - t) * 1000:.1f}')")  # torch imported before the clock starts
        r = subprocess.run([sys.executable, "-c", code, spec], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        ms = float(r.stdout.strip().splitlines()[-1])
        print(f"  [cache hit in a new process: {ms:.1f} ms]", file=sys.stderr)
        self.assertNotIn("building", r.stderr)
        self.assertLess(ms, 500)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        sys.exit(0)
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name()}", file=sys.stderr)
    unittest.main()
