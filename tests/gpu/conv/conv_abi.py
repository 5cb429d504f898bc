#!/usr/bin/env python3
"""ctypes access to the conv kernels of a `kdlc build` library (include/kdl/abi.h), shared by the cuDNN
comparison (tests/gpu/conv/test_conv_cudnn.py) and the conv benchmark (bench/conv_bench.py).

- The C ABI: kdl_arg, kdl_conv2d_shape, kdl_kernel_info as ctypes structures; ConvKernel wraps one kernel's
  four entry points (info, can_implement, workspace_size, run).
- Discovery: tests/gpu/build-kernels.sh writes, beside each library `libs/GROUP/libSTEM.so`, the spec's
  `kdlc list --json` as `libs/GROUP/STEM.kernels.json`; the conv kernels (op conv2d_*) of the libraries
  of tests.list / bench.list are found from it, with their fixed filter / stride, split-K and epilogue.
- Tensors: an NHWC activation (or KRSC filter) lives in a buffer of shape (N, H, W, Cpad) and is seen by
  PyTorch as the (N, C, H, W) view with channels_last strides (pixel stride Cpad >= C: padded channels),
  which is what torch.nn.functional.conv2d takes; its kdl_arg is (data, ld = Cpad, batch_stride = H*W*Cpad).
- The epilogue: the `value` strings of `kdlc list --json` evaluated with PyTorch (or `math`, for the CPU
  self-test) functions that follow include/kdl/activations.cuh.

`python3 tests/gpu/conv/conv_abi.py --self-test` checks, without a GPU or PyTorch, the structure layouts
against the C compiler's and the epilogue translation on scalars.
"""
import ctypes
import json
import math
import os
import re

ARG_TENSOR, ARG_VECTOR, ARG_DEVICE_SCALAR, ARG_PARAM = 0, 1, 2, 3
# "cuda" on the GPU machine; "cpu" only for tests/gpu/conv/cpu_smoke.py, which drives the scripts with a fake
# kernel library computing on host memory (KDL_CONV_FAKE_CC: the compute capability it pretends).
DEVICE = os.environ.get("KDL_CONV_DEVICE", "cuda")
KDL_OK, KDL_ERR_INVALID = 0, 1
CONV_OPS = ("conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad")
# The op's inputs and output (docs/language.md): fprop X, W -> Y; dgrad Y, W -> X; wgrad Y, X -> W.
OPERANDS = {"conv2d_fprop": ("X", "W", "Y"), "conv2d_dgrad": ("Y", "W", "X"), "conv2d_wgrad": ("Y", "X", "W")}


class KdlArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ld", ctypes.c_int64), ("batch_stride", ctypes.c_int64),
                ("value", ctypes.c_double)]


class ConvShape(ctypes.Structure):
    _fields_ = ([(f, ctypes.c_int64) for f in ("n", "h", "w", "c", "k", "r", "s", "p", "q")] +
                [(f, ctypes.c_int32) for f in ("pad_h", "pad_w", "stride_h", "stride_w", "dilation_h", "dilation_w",
                                               "split_k")])


class KernelInfo(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_int32), ("name", ctypes.c_char_p), ("op", ctypes.c_char_p),
                ("arch", ctypes.c_char_p), ("nargs", ctypes.c_int32),
                ("arg_names", ctypes.POINTER(ctypes.c_char_p)), ("arg_kinds", ctypes.POINTER(ctypes.c_int32)),
                ("arg_dtypes", ctypes.POINTER(ctypes.c_char_p)), ("arg_broadcasts", ctypes.POINTER(ctypes.c_char_p)),
                ("param_defaults", ctypes.POINTER(ctypes.c_double))]


def synchronize():
    import torch
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def stream_handle():
    """The cudaStream_t the kernels launch on: PyTorch's current stream (0 on the CPU)."""
    import torch
    return torch.cuda.current_stream().cuda_stream if DEVICE == "cuda" else 0


def device_capability():
    import torch
    if DEVICE == "cuda":
        major, minor = torch.cuda.get_device_capability()
        return major * 10 + minor
    return int(os.environ.get("KDL_CONV_FAKE_CC", "90"))


def device_name():
    import torch
    return torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (fake kernels)"


def measure_ms(fn):
    """Milliseconds that fn's work takes on the device: CUDA events around it on the current stream."""
    import time
    import torch
    if DEVICE != "cuda":
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _s(b):
    return b.decode() if b else ""


class Problem:
    """One conv problem (groups = 1). p, q derived as the kernels derive them."""

    def __init__(self, n, h, w, c, k, r, s, pad=(0, 0), stride=(1, 1), dil=(1, 1), split=1, label=""):
        self.n, self.h, self.w, self.c, self.k, self.r, self.s = n, h, w, c, k, r, s
        self.pad, self.stride, self.dil, self.split, self.label = tuple(pad), tuple(stride), tuple(dil), split, label

    @staticmethod
    def out_size(i, pad, dil, f, stride):
        span = dil * (f - 1) + 1
        return 0 if i + 2 * pad < span else (i + 2 * pad - span) // stride + 1

    @property
    def p(self):
        return self.out_size(self.h, self.pad[0], self.dil[0], self.r, self.stride[0])

    @property
    def q(self):
        return self.out_size(self.w, self.pad[1], self.dil[1], self.s, self.stride[1])

    def flops(self):  # the same multiply-adds for fprop, dgrad and wgrad
        return 2.0 * self.n * self.p * self.q * self.k * self.r * self.s * self.c

    def shape(self, split=None):
        return ConvShape(self.n, self.h, self.w, self.c, self.k, self.r, self.s, 0, 0, self.pad[0], self.pad[1],
                         self.stride[0], self.stride[1], self.dil[0], self.dil[1],
                         self.split if split is None else split)  # split 0: the kernel chooses

    def with_fixed(self, filt, stride):
        """The problem under a kernel's fixed filter / stride (None: run-time), padding clamped below the
        dilated filter (the kernels' rule), h / w grown until the output has a pixel."""
        r, s = (filt or (self.r, self.s))
        st = stride or self.stride
        pad = (min(self.pad[0], self.dil[0] * (r - 1)), min(self.pad[1], self.dil[1] * (s - 1)))
        q = Problem(self.n, self.h, self.w, self.c, self.k, r, s, pad, st, self.dil, self.split, self.label)
        while q.p < 1:
            q.h += 4
        while q.q < 1:
            q.w += 4
        return q

    def shrunk(self, f):
        """The same case divided by f (n, h, w, c, k; at least 1, 5, 5, 8, 8): the CPU smoke test's."""
        c, k = max(8, self.c // f // 8 * 8), max(8, self.k // f // 8 * 8)
        return Problem(max(1, self.n // f), max(5, self.h // f), max(5, self.w // f), c, k, self.r, self.s, self.pad,
                       self.stride, self.dil, self.split, self.label + f" / {f}")

    def text(self):
        return (f"n={self.n} c={self.c} {self.h}x{self.w} k={self.k} {self.r}x{self.s} pad={self.pad[0]},{self.pad[1]} "
                f"stride={self.stride[0]},{self.stride[1]} dil={self.dil[0]},{self.dil[1]}")

    # The logical (PyTorch) shapes of the three tensors.
    def tensor_dims(self, name):
        """(outer, channels, rows, cols) of X (n, c, h, w), Y (n, k, p, q) or W (k, c, r, s)."""
        return {"X": (self.n, self.c, self.h, self.w), "Y": (self.n, self.k, self.p, self.q),
                "W": (self.k, self.c, self.r, self.s)}[name]


def _fixed(field):
    v = field.get("value") if isinstance(field, dict) else None
    return tuple(v) if isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and x > 0 for x in v) else None


class ConvKernel:
    """One conv kernel of a library: its ABI entry points and what `kdlc list --json` says of it."""

    def __init__(self, lib, spec):
        self.spec = spec
        self.name = spec["name"]
        self.op = spec["op"]["value"]
        self.arch = spec["arch"]["value"]
        self.filter = _fixed(spec.get("filter", {}))
        self.stride = _fixed(spec.get("stride", {}))
        sk = spec.get("split_k", {})
        self.slices = sk.get("slices", 1) if sk.get("value") == "serial" else 1
        self.tile = spec["tile"]["value"]
        # The sm90a wgmma conv path (kdl::Conv2dSm90Fprop / Dgrad / Wgrad) and what it takes beyond the sm80
        # path: wgrad reads X's channels in blocks of 64 (one tap's per 64 columns of dW), dgrad runs at unit
        # stride (a strided one is the multistage schedule's); fprop takes any c and padded W taps.
        sched = spec.get("schedule", {}).get("value", "multistage")
        self.wgmma = self.arch == "sm90a" and sched not in ("multistage", "auto")
        self.pingpong = self.wgmma and sched == "pingpong"
        self.channels64 = self.wgmma and self.op == "conv2d_wgrad"
        self.unit_stride = self.wgmma and self.op == "conv2d_dgrad"
        self.operands = {o["name"]: o for o in spec["operands"]}
        self.in0, self.in1, self.out = OPERANDS[self.op]
        self.residual = "residual" in self.operands
        self.epilogue = spec["epilogue"]
        # The swapped patch mainloop beside the patch GEMM (kdl::Conv2dSm90Fprop::kSwap; `kdlc list --plan`'s "mainloop
        # swap"): pingpong 128 x 128 with the patch (a fixed filter of 2 taps or more, stride (1, 1), no cluster),
        # 16-bit X, W and Y, a pointwise epilogue (no residual, no [channel] input, Y its only output) and two slots
        # that leave 4 stages of W (kdl/gemm_sm90_smem.h's conv_swap_stages).
        epi = self.epilogue
        pointwise = (not epi["uses_source"] and len(epi["outputs"]) == 1 and
                     all(i["broadcast"] == "scalar" for i in epi["inputs"]))
        cluster = spec.get("cluster", {}).get("value", [1, 1, 1])
        r, s = self.filter or (0, 0)
        slot = (r + 1) * (s + 7) * 16 * 128
        swap_stages = min(6, (232448 - 1024 - 2 * slot - 16384 - 256) // 8192)
        self.swap = (self.pingpong and self.op == "conv2d_fprop" and list(self.tile[:2]) == [128, 128] and
                     r * s >= 2 and self.stride == (1, 1) and list(cluster) == [1, 1, 1] and pointwise and
                     swap_stages >= 4 and
                     all(self.operands[o]["dtype"] in ("f16", "bf16") for o in ("X", "W", "Y")))
        self.list_name = ""  # tests.list / bench.list: where discover() found it
        pre = "kdl_" + self.name + "_"
        self._info = getattr(lib, pre + "info")  # AttributeError when the library lacks the kernel
        self._info.restype = ctypes.POINTER(KernelInfo)
        self._info.argtypes = []
        self._can = getattr(lib, pre + "can_implement")
        self._can.restype = ctypes.c_char_p
        self._can.argtypes = [ctypes.POINTER(ConvShape), ctypes.POINTER(KdlArg), ctypes.c_int32]
        self._ws = getattr(lib, pre + "workspace_size")
        self._ws.restype = ctypes.c_size_t
        self._ws.argtypes = [ctypes.POINTER(ConvShape)]
        # A kernel with the patch mainloop beside im2col (kdl_NAME_path: which one runs); None for the others.
        self._path = getattr(lib, pre + "path", None)
        if self._path is not None:
            self._path.restype = ctypes.c_char_p
            self._path.argtypes = [ctypes.POINTER(ConvShape), ctypes.POINTER(KdlArg), ctypes.c_int32]
        self._run = getattr(lib, pre + "run")
        self._run.restype = ctypes.c_int
        self._run.argtypes = [ctypes.POINTER(ConvShape), ctypes.POINTER(KdlArg), ctypes.c_int32, ctypes.c_void_p,
                              ctypes.c_size_t, ctypes.c_void_p]
        info = self._info().contents
        self.info_op = _s(info.op)
        self.info_name = _s(info.name)
        self.abi_version = info.abi_version
        self.arg_names = [_s(info.arg_names[i]) for i in range(info.nargs)]
        self.arg_kinds = [info.arg_kinds[i] for i in range(info.nargs)]
        self.arg_dtypes = [_s(info.arg_dtypes[i]) for i in range(info.nargs)]
        self.arg_broadcasts = [_s(info.arg_broadcasts[i]) if info.arg_broadcasts else "" for i in range(info.nargs)]
        self.param_defaults = [info.param_defaults[i] if info.param_defaults else 0.0 for i in range(info.nargs)]

    def dtype(self, operand):
        return self.operands[operand]["dtype"]

    def info_problems(self):
        """What the exported info gets wrong against the spec ("" when nothing)."""
        p = []
        if self.info_op != self.op:
            p.append(f"op '{self.info_op}' (spec {self.op})")
        if self.info_name != self.name:
            p.append(f"name '{self.info_name}'")
        lead = [self.in0, self.in1] + (["residual"] if self.residual else []) + [self.out]
        if self.arg_names[:len(lead)] != lead:
            p.append(f"leading arguments {self.arg_names[:len(lead)]}, expected {lead}")
        return "; ".join(p)

    def path(self, shape, args):
        """The mainloop kdl_NAME_run takes ("swap" / "patch" / "im2col"); None for a kernel with one mainloop."""
        if self._path is None:
            return None
        m = self._path(ctypes.byref(shape), args, len(args))
        return None if m is None else m.decode(errors="replace")

    def can_implement(self, shape, args):
        m = self._can(ctypes.byref(shape), args, len(args))
        return None if m is None else m.decode(errors="replace")

    def workspace_size(self, shape):
        return int(self._ws(ctypes.byref(shape)))

    def run(self, shape, args, workspace_ptr, workspace_bytes, stream_ptr):
        return int(self._run(ctypes.byref(shape), args, len(args), ctypes.c_void_p(workspace_ptr or None),
                             workspace_bytes, ctypes.c_void_p(stream_ptr or None)))


class Tensor4:
    """An NHWC activation (KRSC filter) on the GPU: buffer (outer, rows, cols, cpad), PyTorch view (outer, ch,
    rows, cols) with channels_last strides; pixel (tap) stride cpad >= ch, image (filter) stride
    rows * cols * cpad. `gen` (a torch.Generator): random values in [-1, 1] rounded to `dtype`, never zero;
    without it the tensor is poisoned with NaN. The padding holds NaN either way."""

    def __init__(self, dims, dtype, cpad, gen=None, device=None):
        import torch
        device = device or DEVICE
        outer, ch, rows, cols = dims
        self.ch, self.cpad, self.rows, self.cols = ch, max(cpad, ch), rows, cols
        self.buf = torch.full((outer, rows, cols, self.cpad), float("nan"), dtype=dtype, device=device)
        if gen is not None:
            v = (torch.rand((outer, rows, cols, ch), generator=gen, device=device, dtype=torch.float32) * 2 - 1).to(dtype)
            self.buf[..., :ch] = torch.where(v == 0, torch.full_like(v, 0.5), v)
        self.view = self.buf[..., :ch].permute(0, 3, 1, 2)

    def arg(self):
        return KdlArg(self.buf.data_ptr(), self.cpad, self.rows * self.cols * self.cpad, 0.0)

    def padding_intact(self):
        import torch
        return self.cpad == self.ch or bool(torch.isnan(self.buf[..., self.ch:].float()).all())


def conv_reference(op, a, b, pr):
    """The op with PyTorch (cuDNN for 16-bit inputs) on logical NCHW / KCRS tensors: fprop (X, W), dgrad
    (dY, W), wgrad (dY, X)."""
    import torch
    import torch.nn.functional as F
    if op == "conv2d_fprop":
        return F.conv2d(a, b, None, pr.stride, pr.pad, pr.dil)
    if op == "conv2d_dgrad":
        return torch.nn.grad.conv2d_input((pr.n, pr.c, pr.h, pr.w), b, a, pr.stride, pr.pad, pr.dil)
    return torch.nn.grad.conv2d_weight(b, (pr.k, pr.c, pr.r, pr.s), a, pr.stride, pr.pad, pr.dil)


def ktiles(kernel, pr):
    """The GEMM's k-tiles (kdl::Conv2dSm80::gemm_ktiles): the most serial split-K slices the problem takes."""
    tk = kernel.tile[2]
    if kernel.op == "conv2d_fprop":
        return pr.r * pr.s * -(-pr.c // tk)
    if kernel.op == "conv2d_dgrad":
        ph = pr.stride[0] // math.gcd(pr.stride[0], pr.dil[0])
        pw = pr.stride[1] // math.gcd(pr.stride[1], pr.dil[1])
        return -(-pr.r // ph) * -(-pr.s // pw) * -(-pr.k // tk)
    return -(-(pr.n * pr.p * pr.q) // tk)


def read_list(carry, list_name):
    """(spec, lib) paths of tests.list / bench.list, absolute."""
    path = os.path.join(carry, list_name)
    out = []
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2:
                out.append((os.path.join(carry, parts[0]), os.path.join(carry, parts[1])))
    return out


def kernels_json_of(lib_path):
    d, f = os.path.split(lib_path)
    stem = f[3:-3] if f.startswith("lib") and f.endswith(".so") else f
    return os.path.join(d, stem + ".kernels.json")


def not_built(carry):
    """Kernel names listed in not-built.list / build-failed.list (refused or failed: not a missing symbol)."""
    names = set()
    for f in ("not-built.list", "build-failed.list"):
        p = os.path.join(carry, f)
        if os.path.exists(p):
            for line in open(p):
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2:
                    names.add(parts[1])
    return names


def discover(carry, lists, kernel_filter=None):
    """Every conv kernel of the listed libraries: (kernels, problems) where problems are strings for
    kernels their library lacks although kdlc built it, or a library without its kernels.json."""
    kernels, problems = [], []
    listed = not_built(carry)
    for list_name in lists:
        for spec_path, lib_path in read_list(carry, list_name):
            jpath = kernels_json_of(lib_path)
            if not os.path.exists(jpath):
                problems.append(f"{lib_path}: no {os.path.basename(jpath)} beside it (tests/gpu/build-kernels.sh writes it)")
                continue
            convs = [k for k in json.load(open(jpath)).get("kernels", []) if k["op"]["value"] in CONV_OPS]
            convs = [k for k in convs if not kernel_filter or k["name"] in kernel_filter]
            if not convs:
                continue
            lib = ctypes.CDLL(lib_path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
            for k in convs:
                try:
                    kernels.append(ConvKernel(lib, k))
                    kernels[-1].list_name = list_name
                except AttributeError as e:
                    if k["name"] not in listed and "*" not in listed:
                        problems.append(f"{k['name']}: the library {lib_path} lacks it ({e}) and it is not in not-built.list")
    return kernels, problems


# ---- the epilogue ----------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_]\w*)|(&&|\|\||==|!=|<=|>=|[-+*/<>!(),]))")
# Binary operators by precedence (C's, which kdlc's infix printing follows), loosest first.
_BINARY = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/")]


def parse_expression(text):
    """An epilogue value as `kdlc list --json` prints it, as a tree: ("num", v) | ("name", n) |
    ("call", f, [args]) | ("neg", x) | ("not", x) | (op, a, b)."""
    toks, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"epilogue value {text!r}: cannot read {text[pos:]!r}")
        pos = m.end()
        toks.append(("num", float(m.group(1))) if m.group(1) else ("name", m.group(2)) if m.group(2) else ("op", m.group(3)))
    i = 0

    def peek():
        return toks[i] if i < len(toks) else ("end", None)

    def take(op=None):
        nonlocal i
        t = peek()
        if op is not None and t != ("op", op):
            raise ValueError(f"epilogue value {text!r}: expected {op!r}, got {t[1]!r}")
        i += 1
        return t

    def binary(level):
        if level == len(_BINARY):
            return unary()
        a = binary(level + 1)
        while peek()[0] == "op" and peek()[1] in _BINARY[level]:
            op = take()[1]
            a = (op, a, binary(level + 1))
        return a

    def unary():
        if peek() == ("op", "-"):
            take()
            return ("neg", unary())
        if peek() == ("op", "!"):
            take()
            return ("not", unary())
        return primary()

    def primary():
        t = take()
        if t[0] == "num":
            return t
        if t == ("op", "("):
            e = binary(0)
            take(")")
            return e
        if t[0] == "name":
            if peek() == ("op", "("):
                take()
                args = []
                if peek() != ("op", ")"):
                    args.append(binary(0))
                    while peek() == ("op", ","):
                        take()
                        args.append(binary(0))
                take(")")
                return ("call", t[1], args)
            return t
        raise ValueError(f"epilogue value {text!r}: unexpected {t[1]!r}")

    tree = binary(0)
    if i != len(toks):
        raise ValueError(f"epilogue value {text!r}: trailing {toks[i][1]!r}")
    return tree


def evaluate(tree, fns, env):
    """The tree's value: names from env, calls and operators from fns (torch_functions / math_functions)."""
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "name":
        if tree[1] not in env:
            raise KeyError(f"epilogue name {tree[1]!r} unknown to the harness")
        return env[tree[1]]
    if kind == "call":
        if tree[1] == "cast":  # cast(dtype, x): the dtype is a word
            return fns["cast"](tree[2][0][1], evaluate(tree[2][1], fns, env))
        return fns[tree[1]](*[evaluate(a, fns, env) for a in tree[2]])
    if kind == "neg":
        return -evaluate(tree[1], fns, env)
    if kind == "not":
        return fns["not"](evaluate(tree[1], fns, env))
    a, b = evaluate(tree[1], fns, env), evaluate(tree[2], fns, env)
    return fns[kind](a, b)


_ARITHMETIC = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def torch_functions(torch, F, dtypes):
    """The epilogue's functions on tensors, as include/kdl/activations.cuh defines them."""
    def t(x, like=None):
        if isinstance(x, torch.Tensor):
            return x
        ref = like if isinstance(like, torch.Tensor) else None
        return torch.tensor(float(x), dtype=ref.dtype if ref is not None else torch.float64,
                            device=ref.device if ref is not None else DEVICE)

    return {
        "relu": lambda x: torch.clamp_min(t(x), 0), "gelu": lambda x: F.gelu(t(x)),
        "gelu_tanh": lambda x: F.gelu(t(x), approximate="tanh"), "silu": lambda x: F.silu(t(x)),
        "sigmoid": lambda x: torch.sigmoid(t(x)), "tanh": lambda x: torch.tanh(t(x)), "exp": lambda x: torch.exp(t(x)),
        "log": lambda x: torch.log(t(x)), "sqrt": lambda x: torch.sqrt(t(x)), "rsqrt": lambda x: torch.rsqrt(t(x)),
        "abs": lambda x: torch.abs(t(x)),
        "min": lambda a, b: torch.fmin(t(a, b), t(b, a)), "max": lambda a, b: torch.fmax(t(a, b), t(b, a)),
        "clamp": lambda x, lo, hi: torch.where(t(x) < lo, t(lo, x), torch.where(t(x) > hi, t(hi, x), t(x))),
        "leaky_relu": lambda x, s: torch.where(t(x) < 0, t(x) * s, t(x)),
        "select": lambda c, a, b: torch.where(t(c) != 0, t(a, b), t(b, a)),
        "cast": lambda dt, x: t(x).to(dtypes[dt]).to(t(x).dtype),
        "not": lambda x: torch.logical_not(t(x)), "&&": lambda a, b: torch.logical_and(t(a), t(b)),
        "||": lambda a, b: torch.logical_or(t(a), t(b)),
        **_ARITHMETIC,
    }


def math_functions():
    """The same on Python floats (the CPU self-test)."""
    gelu_k = math.sqrt(2.0 / math.pi)
    return {
        "relu": lambda x: max(x, 0.0), "gelu": lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))),
        "gelu_tanh": lambda x: 0.5 * x * (1 + math.tanh(gelu_k * (x + 0.044715 * x ** 3))),
        "silu": lambda x: x / (1 + math.exp(-x)), "sigmoid": lambda x: 1 / (1 + math.exp(-x)), "tanh": math.tanh,
        "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x), "abs": abs,
        "min": min, "max": max, "clamp": lambda x, lo, hi: lo if x < lo else (hi if x > hi else x),
        "leaky_relu": lambda x, s: x * s if x < 0 else x, "select": lambda c, a, b: a if c else b,
        "cast": lambda dt, x: x,  # (not exercised on floats)
        "not": lambda x: not x, "&&": lambda a, b: bool(a) and bool(b), "||": lambda a, b: bool(a) or bool(b),
        **_ARITHMETIC,
    }


def evaluate_epilogue(epilogue, functions, acc, names):
    """Every output of the epilogue: {name: value} for tensors (unrounded), and {name: value} for amax
    outputs (the operand of max(abs(...)); the caller reduces it). `names`: params, inputs (already
    broadcastable against acc) and the residual."""
    env = dict(names)
    env["acc"] = acc
    for let in epilogue.get("lets", []):
        env[let["name"]] = evaluate(parse_expression(let["value"]), functions, env)
    tensors, amax = {}, {}
    for out in epilogue["outputs"]:
        v = evaluate(parse_expression(out["value"]), functions, env)
        if out["kind"] == "amax":
            amax[out["name"]] = v
        else:
            tensors[out["name"]] = v
            env[out["name"]] = v
    return tensors, amax


# ---- the CPU self-test -------------------------------------------------------------------------------

_C_LAYOUT = r"""
#include <stddef.h>
#include <stdio.h>
#include "kdl/abi.h"
int main(void) {
  printf("%zu %zu %zu %zu\n", sizeof(kdl_arg), offsetof(kdl_arg, ld), offsetof(kdl_arg, batch_stride), offsetof(kdl_arg, value));
  printf("%zu %zu %zu %zu %zu\n", sizeof(kdl_conv2d_shape), offsetof(kdl_conv2d_shape, p), offsetof(kdl_conv2d_shape, pad_h),
         offsetof(kdl_conv2d_shape, dilation_w), offsetof(kdl_conv2d_shape, split_k));
  printf("%zu %zu %zu %zu\n", sizeof(kdl_kernel_info), offsetof(kdl_kernel_info, nargs), offsetof(kdl_kernel_info, arg_names),
         offsetof(kdl_kernel_info, param_defaults));
  return 0;
}
"""


def self_test():
    import subprocess
    import tempfile
    bad = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            bad.append(what)

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ours = [f"{ctypes.sizeof(KdlArg)} {KdlArg.ld.offset} {KdlArg.batch_stride.offset} {KdlArg.value.offset}",
            f"{ctypes.sizeof(ConvShape)} {ConvShape.p.offset} {ConvShape.pad_h.offset} {ConvShape.dilation_w.offset} "
            f"{ConvShape.split_k.offset}",
            f"{ctypes.sizeof(KernelInfo)} {KernelInfo.nargs.offset} {KernelInfo.arg_names.offset} "
            f"{KernelInfo.param_defaults.offset}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        open(src, "w").write(_C_LAYOUT)
        cc = os.environ.get("CC", "cc")
        r = subprocess.run([cc, "-I", os.path.join(root, "include"), src, "-o", exe], capture_output=True, text=True)
        check(r.returncode == 0, f"the C layout probe compiles ({r.stderr.strip()[:300]})")
        if r.returncode == 0:
            theirs = subprocess.run([exe], capture_output=True, text=True).stdout.split("\n")[:3]
            for name, a, b in zip(("kdl_arg", "kdl_conv2d_shape", "kdl_kernel_info"), ours, theirs):
                check(a == b.strip(), f"{name}: ctypes layout {a} == C layout {b.strip()}")

    pr = Problem(2, 17, 19, 16, 40, 7, 7, pad=(2, 2), dil=(2, 2))
    check((pr.p, pr.q) == (9, 11), f"output size of 7x7 dilation 2 pad 2 on 17x19: {pr.p}x{pr.q}")
    fx = Problem(1, 9, 9, 8, 8, 3, 3, pad=(2, 2)).with_fixed((1, 1), (2, 2))
    check((fx.r, fx.s, fx.pad, fx.stride, fx.p) == (1, 1, (0, 0), (2, 2), 5), "a fixed 1x1 stride 2 clamps the padding")

    epi = {"lets": [{"name": "t", "value": "acc + bias"}],
           "outputs": [{"name": "Y", "kind": "main", "value": "leaky_relu(t, 0.125) * scale"},
                       {"name": "Z", "kind": "tensor", "value": "select(acc < 0 && !(bias > 1), clamp(acc, -1.0, 1.0), gelu(acc))"},
                       {"name": "amax", "kind": "amax", "value": "Y"}]}
    tensors, amax = evaluate_epilogue(epi, math_functions(), -4.0, {"bias": 2.0, "scale": 3.0})
    check(tensors["Y"] == -0.75 and amax["amax"] == -0.75, f"epilogue with a let and leaky_relu: {tensors['Y']}")
    check(tensors["Z"] == 0.5 * -4 * (1 + math.erf(-4 / math.sqrt(2))), "&& and ! translated (bias > 1: the gelu branch)")
    tensors, _ = evaluate_epilogue(epi, math_functions(), -4.0, {"bias": 0.5, "scale": 1.0})
    check(tensors["Z"] == -1.0, "select / clamp on the other branch")
    fns = math_functions()
    for text, want in (("1 + 2 * 3 - 4 / 2", 5.0), ("-(1 - 3) * 2", 4.0), ("2 * -3 + 10", 4.0),
                       ("1 < 2 && 3 >= 4 || !(0 == 1)", True), ("max(1.5e1, min(2, 3))", 15.0)):
        got = evaluate(parse_expression(text), fns, {})
        check(got == want, f"precedence: {text} = {got} (want {want})")
    # Every epilogue value of the conv specs parses and names only what the harness binds.
    kdlc = os.environ.get("KDLC")
    if kdlc:
        for spec in ("tests/gpu/specs/conv.kdl", "bench/specs/conv.kdl"):
            r = subprocess.run([kdlc, "list", "--json", os.path.join(root, spec)], capture_output=True, text=True)
            check(r.returncode == 0, f"kdlc list --json {spec}")
            if r.returncode != 0:
                continue
            for k in json.loads(r.stdout)["kernels"]:
                epi = k["epilogue"]
                env = {p_["name"]: 1.0 for p_ in epi["params"]}
                env.update({i_["name"]: 0.5 for i_ in epi["inputs"]})
                env.update({"C": 0.25, "residual": 0.25})
                try:
                    evaluate_epilogue(epi, fns, 2.0, env)
                    check(True, f"{spec} {k['name']}: epilogue evaluates")
                except (ValueError, KeyError, TypeError) as e:
                    check(False, f"{spec} {k['name']}: epilogue does not evaluate: {e}")
    print(f"{len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    sys.exit(self_test() if "--self-test" in sys.argv else 2)
