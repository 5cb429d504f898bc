#!/usr/bin/env python3
"""Checks a PyTorch extension built from `kdlc emit --torch` output, without a GPU (run by torch_ext.py
with a Python that has torch):
  torch_check.py --library X_torch.so --manifest manifest.json --spec-json list.json [--ops a,b]
loads the library and, for every op of manifest.json's "torch" object (or only --ops):
  - the op exists with the schema the contract gives (docs/torch.md), derived here from manifest.json's
    "arguments" and not from its "schema" string: the tensors in C ABI order, then the params with
    their defaults, then `int split_k=0` for serial split-K (0: the kernel chooses); returns D, the extra and the amax outputs;
  - calls on meta tensors (2-D, and batched: 3-D A beside a shared 2-D B, a (batch, len) vector) return
    outputs of the right shape, dtype and strides (row- and column-major outputs), amax 0-D f32;
  - the same under FakeTensorMode on "cuda" (what torch.compile traces with);
  - bad dtype, rank, sizes and devices raise RuntimeError whose message starts "NS.KERNEL: ".
Prints one line per problem and exits 1 when there is one."""
import argparse, json, sys

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "tf32": torch.float32,
          "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "s8": torch.int8, "u8": torch.uint8,
          "s32": torch.int32}
M, N, K, BATCH = 96, 80, 256, 3
PROBLEMS = []


def problem(text):
    PROBLEMS.append(text)
    print("FAIL: " + text)


class Op:
    """One kernel's op as the manifest and `kdlc list --json` describe it."""

    def __init__(self, namespace, kernel, spec):
        self.ns, self.name = namespace, kernel["name"]
        self.qualified = f"{namespace}.{self.name}"
        self.args = kernel["arguments"]
        self.split_k = kernel["parameters"]["split_k"]["mode"] == "serial"
        self.block = kernel["parameters"].get("block_scaling")  # [rows of A, columns of B, k] per scale
        self.layouts = {o["name"]: o["layout"] for o in spec["operands"]}
        self.layouts.update({o["name"]: o["layout"] for o in spec["epilogue"]["outputs"] if o["layout"]})
        self.fn = getattr(getattr(torch.ops, namespace), self.name)

    def inputs(self):
        return [a for a in self.args if a["role"] == "input"]

    def outputs(self):
        return [a for a in self.args if a["role"] == "output"]

    def expected_schema(self):
        args = [("Tensor", a["name"], None) for a in self.inputs()]
        args += [("float", a["name"], float(a["default"])) for a in self.args if a["role"] == "param"]
        if self.split_k:
            args.append(("int", "split_k", 0))
        return args, [a["name"] for a in self.outputs()]

    def tensor(self, arg, batched, device="meta", dtype=None):
        """A valid input for `arg`: in its declared layout (A and B), a (batch, len) vector when batched."""
        name, dt = arg["name"], dtype or DTYPES[arg["dtype"]]
        if arg["kind"] == "device_scalar":
            return torch.empty((), dtype=dt, device=device)
        if arg["kind"] == "vector":
            length = M if arg["broadcast"] == "row" else N
            return torch.empty((BATCH, length) if batched else (length,), dtype=dt, device=device)
        if name == "scale_A":
            shape = (-(-M // self.block[0]), -(-K // self.block[2]))
        elif name == "scale_B":
            shape = (-(-K // self.block[2]), -(-N // self.block[1]))
        else:
            shape = {"A": (M, K), "B": (K, N)}.get(name, (M, N))
        lead = (BATCH,) if batched and name != "B" else ()  # B stays 2-D: shared by the batch
        t = torch.empty(lead + shape, dtype=dt, device=device)
        if self.layouts.get(name) == "col":  # the declared layout: taken as it is, no copy
            t = torch.empty(lead + shape[::-1], dtype=dt, device=device).transpose(-1, -2)
        return t

    def call(self, batched, device="meta", change=None):
        args = []
        for a in self.inputs():
            t = self.tensor(a, batched, device)
            if change and a["name"] in change:
                t = change[a["name"]](t)
            args.append(t)
        return self.fn(*args)

    def expected_output(self, arg, batched):
        """(shape, strides, dtype) of an output."""
        if arg["kind"] == "device_scalar":
            return (), (), torch.float32
        lead = (BATCH,) if batched else ()
        if self.layouts.get(arg["name"], "row") == "col":
            strides = ((M * N,) if batched else ()) + (1, M)
        else:
            strides = ((M * N,) if batched else ()) + (N, 1)
        return lead + (M, N), strides, DTYPES[arg["dtype"]]


def check_schema(op):
    schema = op.fn.default._schema
    args, returns = op.expected_schema()
    got = [(str(a.type), a.name, a.default_value) for a in schema.arguments]
    want = [(t, n, d) for t, n, d in args]
    if got != want:
        problem(f"{op.qualified}: schema arguments {got}, expected {want} ({schema})")
    got_returns = [r.name for r in schema.returns]
    if len(returns) == 1:
        ok = len(schema.returns) == 1 and str(schema.returns[0].type) == "Tensor"
    else:
        ok = got_returns == returns and all(str(r.type) == "Tensor" for r in schema.returns)
    if not ok:
        problem(f"{op.qualified}: returns {got_returns}, expected {returns} ({schema})")


def check_outputs(op, result, batched, device, what):
    results = result if isinstance(result, tuple) else (result,)
    outs = op.outputs()
    if len(results) != len(outs):
        problem(f"{op.qualified} ({what}): {len(results)} outputs, expected {len(outs)}")
        return
    for arg, t in zip(outs, results):
        shape, strides, dtype = op.expected_output(arg, batched)
        if tuple(t.shape) != shape or tuple(t.stride()) != strides or t.dtype != dtype or t.device.type != device:
            problem(f"{op.qualified} ({what}): output {arg['name']} is {tuple(t.shape)} strides {tuple(t.stride())} "
                    f"{t.dtype} on {t.device}, expected {shape} strides {strides} {dtype} on {device}")


def expect_error(op, what, exc, words, **kw):
    try:
        op.call(**kw)
    except exc as e:
        text = str(e).splitlines()[0]
        if not text.startswith(op.qualified + ": ") or any(w not in text for w in words):
            problem(f"{op.qualified} ({what}): message {text!r} does not start with '{op.qualified}: ' or lacks {words}")
        return
    except Exception as e:  # noqa: BLE001 -- the wrong kind is the failure being reported
        problem(f"{op.qualified} ({what}): raised {type(e).__name__}, expected {exc.__name__}: {e}")
        return
    problem(f"{op.qualified} ({what}): no error, expected {exc.__name__}")


def check_errors(op):
    a = next(x for x in op.inputs() if x["name"] == "A")
    wrong = torch.float16 if a["dtype"] != "f16" else torch.bfloat16
    spelled = str(DTYPES[a["dtype"]])
    expect_error(op, "dtype of A", RuntimeError, [f"A must be {spelled} ({a['dtype']} in the spec), got {wrong}"],
                 batched=False, change={"A": lambda t: t.to(wrong)})
    expect_error(op, "rank of A", RuntimeError, ["A must be 2-D", "got 1-D"], batched=False,
                 change={"A": lambda t: t.reshape(-1)})
    expect_error(op, "k of B", RuntimeError, ["B must be (k, n) with k = 256"], batched=False,
                 change={"B": lambda t: t[:-1]})
    expect_error(op, "CPU tensors", RuntimeError, ["A must be a CUDA tensor, got one on cpu"], batched=False,
                 device="cpu")
    expect_error(op, "B on another device", RuntimeError, ["B must be on meta (A's device), got cpu"], batched=False,
                 change={"B": lambda t: torch.empty(t.shape, dtype=t.dtype)})
    for x in op.inputs():
        if x["kind"] == "vector":
            expect_error(op, f"length of {x['name']}", RuntimeError, [f"{x['name']} must be ("], batched=False,
                         change={x["name"]: lambda t: t[:-1]})
        if x["kind"] == "device_scalar":
            expect_error(op, f"size of {x['name']}", RuntimeError, [f"{x['name']} must hold one element"], batched=False,
                         change={x["name"]: lambda t: t.expand(2)})
        if x["name"] in ("C", "scale_A", "scale_B"):
            expect_error(op, f"shape of {x['name']}", RuntimeError, [f"{x['name']} must be ("], batched=False,
                         change={x["name"]: lambda t: t[..., :-1]})
    batched_arg = next((x for x in op.inputs() if x["name"] == "C"), None)
    if batched_arg:
        expect_error(op, "batch of C", RuntimeError, ["C has a batch of 2 but A has 3"], batched=True,
                     change={"C": lambda t: t[:2]})
    if op.split_k:
        try:
            op.fn(*[op.tensor(x, False) for x in op.inputs()], split_k=-1)
            problem(f"{op.qualified}: split_k=-1 accepted")
        except RuntimeError as e:
            if "split_k (-1) must be in 0.." not in str(e):
                problem(f"{op.qualified}: split_k=-1: {e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--spec-json", required=True, help="`kdlc list --json` of the spec")
    ap.add_argument("--ops", help="only these ops (comma-separated)")
    a = ap.parse_args()
    with open(a.manifest) as f:
        manifest = json.load(f)
    with open(a.spec_json) as f:
        specs = {k["name"]: k for k in json.load(f)["kernels"]}
    torch.ops.load_library(a.library)
    ns = manifest["torch"]["namespace"]
    wanted = a.ops.split(",") if a.ops else [o["name"] for o in manifest["torch"]["ops"]]
    from torch._subclasses.fake_tensor import FakeTensorMode
    for kernel in manifest["kernels"]:
        if kernel["name"] not in wanted:
            continue
        if not hasattr(getattr(torch.ops, ns), kernel["name"]):
            problem(f"torch.ops.{ns}.{kernel['name']} does not exist")
            continue
        op = Op(ns, kernel, specs[kernel["name"]])
        check_schema(op)
        for batched in (False, True):
            check_outputs(op, op.call(batched), batched, "meta", "meta, batched" if batched else "meta")
        with FakeTensorMode():
            check_outputs(op, op.call(True, device="cuda"), True, "cuda", "FakeTensorMode on cuda")
        # a view the op copies into the declared layout (A transposed twice into the other layout)
        other = op.call(False, change={"A": lambda t: t.transpose(-1, -2).contiguous().transpose(-1, -2)
                                       if t.stride(-1) == 1 else t.contiguous()})
        check_outputs(op, other, False, "meta", "meta, A in the other layout")
        check_errors(op)
        print(f"{'FAIL' if PROBLEMS else 'ok'}: torch.ops.{ns}.{op.name}")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
