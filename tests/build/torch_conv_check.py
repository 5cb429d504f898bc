#!/usr/bin/env python3
"""Checks the convolution ops of a PyTorch extension built from `kdlc emit --torch` output, without a GPU (run by
torch_ext.py --case conv with a Python that has torch):
  torch_conv_check.py --library X_torch.so --manifest manifest.json
loads the library and, for every conv op of manifest.json (docs/torch.md, "Convolution ops"):
  - the schema: the two inputs, `Tensor? residual` where the kernel has one, the epilogue's inputs, its params with
    their defaults, `int[2] stride` (the spec's fixed stride, else [1, 1]), `int[2] padding=[0, 0]`,
    `int[2] dilation=[1, 1]`, dgrad's `int[] input_size=[]` or wgrad's `int[] kernel_size=[]`, `int split_k=0` for
    serial split-K; it returns the output, then the extra and the amax outputs;
  - calls on meta tensors, channels_last and NCHW-contiguous (the op copies those), with padding, stride and
    dilation, return outputs of PyTorch's shapes (fprop (n, k, p, q), dgrad (n, c, h, w), wgrad (k, c, r, s)) in
    torch.channels_last (is_contiguous(memory_format=torch.channels_last)), the spec's dtypes, amax 0-D f32;
  - the same under FakeTensorMode on "cuda" (what torch.compile traces with);
  - bad dtypes, ranks, channels, filters, sizes, devices and geometry raise RuntimeError whose message starts
    "NS.KERNEL: " and names what is wrong.
Prints one line per problem and exits 1 when there is one."""
import argparse, json, sys

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
N, C, H, W_, K = 2, 24, 11, 13, 40  # odd sizes: nothing here is a multiple of a tile
PROBLEMS = []
CL = torch.channels_last


def problem(text):
    PROBLEMS.append(text)
    print("FAIL: " + text)


def out_size(i, pad, dil, f, stride):
    return (i + 2 * pad - dil * (f - 1) - 1) // stride + 1


class ConvOp:
    def __init__(self, namespace, kernel):
        self.ns, self.name = namespace, kernel["name"]
        self.qualified = f"{namespace}.{self.name}"
        self.kind = kernel["op"]  # conv2d_fprop | conv2d_dgrad | conv2d_wgrad
        params = kernel["parameters"]
        self.filter = params.get("filter") or None
        self.stride = params.get("stride") or None
        self.split_k = params["split_k"]["mode"] == "serial"
        self.args = kernel["arguments"]
        self.fn = getattr(getattr(torch.ops, namespace), self.name)
        self.inputs = [a for a in self.args if a["role"] == "input"]
        self.outputs = [a for a in self.args if a["role"] == "output"]
        self.params = [a for a in self.args if a["role"] == "param"]
        self.out_name = {"conv2d_fprop": "Y", "conv2d_dgrad": "X", "conv2d_wgrad": "W"}[self.kind]
        self.extra = {"conv2d_fprop": None, "conv2d_dgrad": "input_size", "conv2d_wgrad": "kernel_size"}[self.kind]

    def expected_schema(self):
        args = []
        for a in self.inputs:
            args.append(("Optional[Tensor]" if a["name"] == "residual" else "Tensor", a["name"], None))
        args += [("float", a["name"], float(a["default"])) for a in self.params]
        # str() of a schema argument's type: List[int] for int[2] and int[] alike (the string schema, with
        # its sizes, is manifest.json's and is compared below)
        args.append(("List[int]", "stride", list(self.stride) if self.stride else [1, 1]))
        args.append(("List[int]", "padding", [0, 0]))
        args.append(("List[int]", "dilation", [1, 1]))
        if self.extra:
            args.append(("List[int]", self.extra, []))
        if self.split_k:
            args.append(("int", "split_k", 0))
        return args, [a["name"] for a in self.outputs]

    def geometry(self, r, s, stride, pad, dil):
        p = out_size(H, pad[0], dil[0], r, stride[0])
        q = out_size(W_, pad[1], dil[1], s, stride[1])
        return {"X": (N, C, H, W_), "W": (K, C, r, s), "Y": (N, K, p, q)}

    def call(self, device="meta", nchw=False, change=None, r=None, s=None, stride=None, pad=(1, 2), dil=(1, 1),
             extra=None, residual=True, **kw):
        r = r or (self.filter[0] if self.filter else 3)
        s = s or (self.filter[1] if self.filter else 3)
        stride = stride or (tuple(self.stride) if self.stride else (1, 1))
        shapes = self.geometry(r, s, stride, pad, dil)
        out_ch = C if self.kind == "conv2d_dgrad" else K
        args = []
        for a in self.inputs:
            name, dt = a["name"], DTYPES[a["dtype"]]
            if a["kind"] == "device_scalar":
                t = torch.empty((), dtype=dt, device=device)
            elif a["kind"] == "vector":
                t = torch.empty((out_ch,), dtype=dt, device=device)
            else:
                shape = shapes[self.out_name] if name == "residual" else shapes[name]
                t = torch.empty(shape, dtype=dt, device=device)
                if not nchw:
                    t = t.contiguous(memory_format=CL)
                if name == "residual" and not residual:
                    t = None
            if change and name in change:
                t = change[name](t)
            args.append(t)
        kwargs = dict(stride=list(stride), padding=list(pad), dilation=list(dil))
        if kw.pop("as_ints", False):  # F.conv2d's spelling: one int for both dimensions
            assert stride[0] == stride[1] and pad[0] == pad[1] and dil[0] == dil[1]
            kwargs = dict(stride=stride[0], padding=pad[0], dilation=dil[0])
        if self.kind == "conv2d_dgrad":
            kwargs["input_size"] = [H, W_] if extra is None else extra
        elif self.kind == "conv2d_wgrad":
            kwargs["kernel_size"] = ([r, s] if not self.filter else []) if extra is None else extra
        kwargs.update(kw)
        return self.fn(*args, **kwargs), shapes

    def expected(self, arg, shapes):
        if arg["kind"] == "device_scalar":
            return (), torch.float32
        return shapes[self.out_name], DTYPES[arg["dtype"]]


def check_schema(op, manifest_schema):
    schema = op.fn.default._schema
    sized = ", ".join(["int[2] stride=", "int[2] padding=[0, 0]", "int[2] dilation=[1, 1]"])
    if "int[2] stride=[" not in manifest_schema or sized.split(", ", 1)[1] not in manifest_schema or \
            (op.extra and f"int[] {op.extra}=[]" not in manifest_schema):
        problem(f"{op.qualified}: manifest schema {manifest_schema!r} lacks the sized geometry arguments")
    args, returns = op.expected_schema()
    got = [(str(a.type), a.name, a.default_value) for a in schema.arguments]
    if got != args:
        problem(f"{op.qualified}: schema arguments {got}, expected {args} ({schema})")
    got_returns = [r.name for r in schema.returns]
    ok = (len(schema.returns) == 1 and len(returns) == 1) or got_returns == returns
    if not ok or any(str(r.type) != "Tensor" for r in schema.returns):
        problem(f"{op.qualified}: returns {got_returns}, expected {returns} ({schema})")


def check_outputs(op, result_shapes, device, what):
    result, shapes = result_shapes
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(op.outputs):
        problem(f"{op.qualified} ({what}): {len(results)} outputs, expected {len(op.outputs)}")
        return
    for arg, t in zip(op.outputs, results):
        shape, dtype = op.expected(arg, shapes)
        cl = t.dim() != 4 or t.is_contiguous(memory_format=CL)
        if tuple(t.shape) != shape or t.dtype != dtype or t.device.type != device or not cl:
            problem(f"{op.qualified} ({what}): output {arg['name']} is {tuple(t.shape)} strides {tuple(t.stride())} "
                    f"{t.dtype} on {t.device}, expected {shape} channels_last {dtype} on {device}")


def expect_error(op, what, words, **kw):
    try:
        op.call(**kw)
    except RuntimeError as e:
        text = str(e).splitlines()[0]
        if not text.startswith(op.qualified + ": ") or any(w not in text for w in words):
            problem(f"{op.qualified} ({what}): message {text!r} does not start with '{op.qualified}: ' or lacks {words}")
        return
    except Exception as e:  # noqa: BLE001 -- the wrong kind is the failure being reported
        problem(f"{op.qualified} ({what}): raised {type(e).__name__}, expected RuntimeError: {e}")
        return
    problem(f"{op.qualified} ({what}): no error, expected RuntimeError")


def check_errors(op):
    first, second = op.inputs[0], op.inputs[1]
    wrong = torch.float16 if first["dtype"] != "f16" else torch.bfloat16
    expect_error(op, "dtype", [f"{first['name']} must be {DTYPES[first['dtype']]} ({first['dtype']} in the spec), "
                               f"got {wrong}"], change={first["name"]: lambda t: t.to(wrong)})
    expect_error(op, "rank", [f"{second['name']} must be 4-D", "got 3-D"],
                 change={second["name"]: lambda t: t[0]})
    expect_error(op, "CPU tensors", [f"{first['name']} must be a CUDA tensor, got one on cpu"], device="cpu")
    expect_error(op, "another device", [f"{second['name']} must be on meta ({first['name']}'s device), got cpu"],
                 change={second["name"]: lambda t: torch.empty(t.shape, dtype=t.dtype)})
    expect_error(op, "a negative padding", ["padding must be at least 0, got (-1, 2)"], pad=(-1, 2))
    expect_error(op, "a zero dilation", ["dilation must be at least 1"], dil=(0, 1))
    if op.stride:
        other = [x + 1 for x in op.stride]
        expect_error(op, "another stride", [f"stride must be ({op.stride[0]}, {op.stride[1]}): the spec fixes"],
                     stride=tuple(other))
    if op.kind == "conv2d_fprop":
        expect_error(op, "channels of W", ["W must be (k, c, r, s) with c = 24"],
                     change={"W": lambda t: t[:, :-1]})
        if op.filter:
            expect_error(op, "the fixed filter", [f"W must be (k, c, {op.filter[0]}, {op.filter[1]}): the spec fixes"],
                         change={"W": lambda t: t[..., :-1]})
        else:
            expect_error(op, "a filter larger than the padded input", ["the filter (13 taps, dilation 1) does not fit h = 11 "
                                                                       "with padding 0"], pad=(0, 0), r=13, s=3)
    if op.kind == "conv2d_dgrad":
        expect_error(op, "k of W", ["W must be (k, c, r, s) with k = 40"], change={"W": lambda t: t[:-1]})
        expect_error(op, "input_size of the wrong length", ["input_size must be (h, w) or (n, c, h, w)"], extra=[H])
        expect_error(op, "input_size that does not give p, q", ["input_size (h, w) = (30, 13) gives p, q ="],
                     extra=[30, W_])
        expect_error(op, "input_size's n", ["input_size (n, c, h, w) must have n = 2 and c = 24"],
                     extra=[N + 1, C, H, W_])
    if op.kind == "conv2d_wgrad":
        expect_error(op, "n of X", ["X must be (n, c, h, w) with n = 2"], change={"X": lambda t: t[:1]})
        expect_error(op, "Y's p, q", ["Y must be (n, k, p, q) with p, q (the forward of X", "but Y is (n, k, p, q) ="], change={"Y": lambda t: t[:, :, :-1]})
        if op.filter:
            expect_error(op, "another kernel_size", [f"kernel_size must be ({op.filter[0]}, {op.filter[1]}): the spec "
                                                     "fixes"], extra=[op.filter[0] + 2, op.filter[1]])
        else:
            expect_error(op, "no kernel_size", ["kernel_size (r, s) must be given: the spec fixes no filter"], extra=[])
    if any(a["name"] == "residual" for a in op.inputs):
        expect_error(op, "shape of the residual", ["residual must be", "like the output"],
                     change={"residual": lambda t: t[:, :-1]})
    for x in op.inputs:
        if x["kind"] == "vector":
            expect_error(op, f"length of {x['name']}", [f"{x['name']} must be ("], change={x["name"]: lambda t: t[:-1]})
        if x["kind"] == "device_scalar":
            expect_error(op, f"size of {x['name']}", [f"{x['name']} must hold one element"],
                         change={x["name"]: lambda t: t.expand(2)})
    if op.split_k:
        expect_error(op, "split_k=-1", ["split_k (-1) must be in 0.."], split_k=-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--manifest", required=True)
    a = ap.parse_args()
    with open(a.manifest) as f:
        manifest = json.load(f)
    torch.ops.load_library(a.library)
    ns = manifest["torch"]["namespace"]
    from torch._subclasses.fake_tensor import FakeTensorMode
    count = 0
    for kernel in manifest["kernels"]:
        if not kernel["op"].startswith("conv2d_"):
            continue
        count += 1
        if not hasattr(getattr(torch.ops, ns), kernel["name"]):
            problem(f"torch.ops.{ns}.{kernel['name']} does not exist")
            continue
        op = ConvOp(ns, kernel)
        schemas = {o["name"]: o["schema"] for o in manifest["torch"]["ops"]}
        check_schema(op, schemas[op.name])
        check_outputs(op, op.call(), "meta", "meta, channels_last")
        check_outputs(op, op.call(nchw=True), "meta", "meta, NCHW-contiguous inputs")
        check_outputs(op, op.call(pad=(0, 0), dil=(2, 1)), "meta", "meta, dilation (2, 1)")
        check_outputs(op, op.call(pad=(1, 1), as_ints=True), "meta", "meta, stride, padding and dilation as ints")
        if not op.stride:
            check_outputs(op, op.call(stride=(2, 3)), "meta", "meta, stride (2, 3)")
        if any(x["name"] == "residual" for x in op.inputs):
            check_outputs(op, op.call(residual=False), "meta", "meta, residual None")
        with FakeTensorMode():
            check_outputs(op, op.call(device="cuda"), "cuda", "FakeTensorMode on cuda")
        check_errors(op)
        print(f"{'FAIL' if PROBLEMS else 'ok'}: torch.ops.{ns}.{op.name}")
    if count == 0:
        problem("the manifest has no convolution")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
