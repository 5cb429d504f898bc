#!/usr/bin/env python3
"""Every conv kernel kdlc built for the GPU suite (and the benchmark), on larger problems than
kdl_gpu_test's, against cuDNN through PyTorch and against an fp64 reference.

  python3 tests/gpu/conv/test_conv_cudnn.py [--carry .carry/gpu] [--lists tests.list,bench.list]
                                            [--kernel NAME]... [--quick] [--seed N]

Per kernel and problem (odd sizes, 1x1 to 7x7 filters, stride 2, dilation 2, padded channels; a spec's
fixed filter / stride replaces the problem's): random inputs in [-1, 1] rounded to the kernel's dtype (never
zero), outputs poisoned with NaN (padded pixel strides keep NaN in their padding, checked after), one launch
through kdl_NAME_run (ctypes, conv_abi.py) on PyTorch's stream; then
  - the fp64 reference: torch.nn.functional.conv2d (fprop), torch.nn.grad.conv2d_input (dgrad) and
    conv2d_weight (wgrad) on float64 copies of the same inputs, the spec's epilogue in fp64, rounded to the
    output's dtype;
  - cuDNN: the same op on channels_last bf16 / f16 copies (cuDNN's own kernels), its epilogue in fp32.
The kdl output must be finite, within the output dtype's tolerance of the fp64 reference (relative
Frobenius 1e-2 bf16, 2e-3 f16, 1e-4 f32; max error 2 ulps of the output at max|ref|), widened to 3x
cuDNN's own error where that is larger (a 16-bit wgrad of a long reduction). amax outputs within the same.
Kernels of bench.list (and all with --quick) run the first two problems only. Every fprop kernel whose output can
be its next input also runs a chain of dependent launches queued without a host synchronization, which must be
bitwise equal to the same launches synchronized one by one (chain_case: the sm90a kernels' programmatic dependent
launch). One line per case
(PASS / FAIL / SKIP), "N passed, M failed, S skipped" last; exit 1 on any failure.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_abi as ca  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DEV = ca.DEVICE
TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
EPS = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}
BASE_REL = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-4}

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

counts = {"passed": 0, "failed": 0, "skipped": 0}
failures = []


def report(ok, line):
    print(("PASS " if ok else "FAIL ") + line, flush=True)
    counts["passed" if ok else "failed"] += 1
    if not ok:
        failures.append(line)


def skip(line):
    print("SKIP " + line, flush=True)
    counts["skipped"] += 1


def vector_shape(kernel, pr):
    """How a [channel] vector broadcasts against the output: (1, C, 1, 1) activations, (K, 1, 1, 1) filters."""
    return (pr.k, 1, 1, 1) if kernel.op == "conv2d_wgrad" else (1, -1, 1, 1)


def out_channels(kernel, pr):
    return {"conv2d_fprop": pr.k, "conv2d_dgrad": pr.c, "conv2d_wgrad": pr.k}[kernel.op]


def frob(x):
    return float(torch.linalg.vector_norm(x.double().flatten()))


def run_case(kernel, pr, split, cpad_extra, seed, default_params):
    label = f"{kernel.name:34s} {kernel.op} {pr.text()} split={split}{' channels+pad' if cpad_extra else ''}"
    gen = torch.Generator(device=DEV)
    gen.manual_seed(seed)
    tdt = lambda operand: TORCH_DTYPES[kernel.dtype(operand)]  # noqa: E731
    wgrad = kernel.op == "conv2d_wgrad"
    # Padded channels on activations; a filter output (dW, its residual and extra outputs) keeps its taps packed.
    extra = 16 if cpad_extra else 0
    in0 = ca.Tensor4(pr.tensor_dims(kernel.in0), tdt(kernel.in0), pr.tensor_dims(kernel.in0)[1] + extra, gen)
    in1 = ca.Tensor4(pr.tensor_dims(kernel.in1), tdt(kernel.in1),
                     pr.tensor_dims(kernel.in1)[1] + extra, gen)
    out_dims = pr.tensor_dims(kernel.out)
    out_pad = out_dims[1] + (0 if wgrad else extra)
    residual = ca.Tensor4(out_dims, tdt("residual"), out_pad, gen) if kernel.residual else None
    epi = kernel.epilogue
    outputs, amax_bufs, vectors, params = {}, {}, {}, {}
    for o in epi["outputs"]:
        if o["kind"] == "amax":
            amax_bufs[o["name"]] = torch.full((1,), float("nan"), dtype=torch.float32, device=DEV)
        else:
            outputs[o["name"]] = ca.Tensor4(out_dims, TORCH_DTYPES[o["dtype"]], out_pad)
    for i in epi["inputs"]:
        n = out_channels(kernel, pr) if i["broadcast"] == "channel" else 1
        lo, hi = (-1.0, 1.0) if i["broadcast"] == "channel" else (0.5, 1.5)
        v = torch.rand((n,), generator=gen, device=DEV, dtype=torch.float32) * (hi - lo) + lo
        vectors[i["name"]] = v.to(TORCH_DTYPES[i["dtype"]])
    dyadic = [0.5, 1.5, 1.25, -0.75, 2.0, 0.75]
    for j, p in enumerate(epi["params"]):
        params[p["name"]] = p["default"] if default_params else (p["default"] * 1.25 if p["default"] else dyadic[(seed + j) % 6])

    args = []
    for name, kind in zip(kernel.arg_names, kernel.arg_kinds):
        if name == kernel.in0:
            args.append(in0.arg())
        elif name == kernel.in1:
            args.append(in1.arg())
        elif name == "residual" and residual is not None:
            args.append(residual.arg())
        elif name in outputs:
            args.append(outputs[name].arg())
        elif name in amax_bufs:
            args.append(ca.KdlArg(amax_bufs[name].data_ptr(), 0, 0, 0.0))
        elif name in vectors:
            args.append(ca.KdlArg(vectors[name].data_ptr(), 0, 0, 0.0))
        elif name in params and kind == ca.ARG_PARAM:
            args.append(ca.KdlArg(None, 0, 0, float(params[name])))
        else:
            report(False, f"{label}: argument '{name}' is unknown to the harness")
            return
    args_c = (ca.KdlArg * len(args))(*args)
    shape = pr.shape(split)
    msg = kernel.can_implement(shape, args_c)
    if msg is not None:
        report(False, f"{label}: can_implement rejected a valid problem: {msg}")
        return
    # A kernel with the patch mainloop beside im2col (kdl_NAME_path) takes it at dilation 1 (the harness's tensors
    # are all TMA-describable, their images back to back) where it pays (a pingpong tile, a tile of TileM >= 4 x
    # TileN, or c <= 64: Conv2dSm90Fprop::patch_pays) or KDL_CONV_MAINLOOP=patch forces it, never with
    # KDL_CONV_MAINLOOP=im2col; the label says which ran.
    # The swapped mainloop (kernel.swap: pingpong 128 x 128, 16-bit tensors, a pointwise epilogue) comes first where
    # it pays (n a multiple of 16, q of 8, p of 2, k of 64, c and k >= 128: Conv2dSm90Fprop::swap_pays) or
    # KDL_CONV_MAINLOOP=swap forces it (then the patch mainloop wherever the swapped one cannot run).
    path = kernel.path(shape, args_c)
    if path is not None:
        force = os.environ.get("KDL_CONV_MAINLOOP", "")
        pays = kernel.pingpong or kernel.tile[0] >= 4 * kernel.tile[1] or pr.c <= 64
        swap_pays = (pr.n % 16 == 0 and pr.q % 8 == 0 and pr.p % 2 == 0 and pr.k % 64 == 0 and pr.k >= 128 and
                     pr.c >= 128)
        want = ("patch" if pr.dil == (1, 1) and force != "im2col" and (force in ("patch", "swap") or pays)
                else "im2col")
        if kernel.swap and pr.dil == (1, 1) and (force == "swap" or (force == "" and swap_pays)):
            want = "swap"
        label += f" [{path}]"
        if path != want:
            report(False, f"{label}: kdl_{kernel.name}_path says {path}, expected {want}")
            return
    ws_bytes = kernel.workspace_size(shape)
    ws = torch.full((max(ws_bytes, 1),), 255, dtype=torch.uint8, device=DEV)
    rc = kernel.run(shape, args_c, ws.data_ptr() if ws_bytes else None, ws_bytes, ca.stream_handle())
    ca.synchronize()
    if rc != ca.KDL_OK:
        report(False, f"{label}: run returned {rc}")
        return

    # The fp64 reference and cuDNN's, each followed by the epilogue.
    def names(dtype):
        env = dict(params)
        for i in epi["inputs"]:
            v = vectors[i["name"]].to(dtype)
            env[i["name"]] = v.view(vector_shape(kernel, pr)) if i["broadcast"] == "channel" else v.view(1, 1, 1, 1)
        if residual is not None:
            env["residual"] = env["C"] = residual.view.to(dtype)
        return env

    dtypes = {k: v for k, v in TORCH_DTYPES.items()}
    fns = ca.torch_functions(torch, F, dtypes)
    acc64 = ca.conv_reference(kernel.op, in0.view.double(), in1.view.double(), pr)
    lp = lambda t: t.view.contiguous(memory_format=torch.channels_last)  # noqa: E731
    acc_cudnn = ca.conv_reference(kernel.op, lp(in0), lp(in1), pr).float()
    ref64, amax64 = ca.evaluate_epilogue(epi, fns, acc64, names(torch.float64))
    refc, _ = ca.evaluate_epilogue(epi, fns, acc_cudnn, names(torch.float32))
    acc_norm = frob(acc64)
    acc_max = float(acc64.abs().max())

    ok, text = True, []
    for o in epi["outputs"]:
        if o["kind"] == "amax":
            continue
        dt = o["dtype"]
        want = ref64[o["name"]].to(TORCH_DTYPES[dt]).double()
        cud = refc[o["name"]].to(TORCH_DTYPES[dt]).double()
        got = outputs[o["name"]].view.double()
        bad = int((~torch.isfinite(got) & torch.isfinite(want)).sum())
        norm = max(frob(want), 1e-3 * acc_norm, 1e-30)
        mx = max(float(want.abs().max()), 1e-3 * acc_max, 1e-30)
        diff = torch.nan_to_num(got - want, nan=0.0)
        rel, max_rel = frob(diff) / norm, float(diff.abs().max()) / mx
        rel_c, max_c = frob(cud - want) / norm, float((cud - want).abs().max()) / mx
        rel_vs = frob(torch.nan_to_num(got - cud, nan=0.0)) / norm
        tol, max_tol = max(BASE_REL[dt], 3 * rel_c), max(2.02 * EPS[dt] + 1e-4, 3 * max_c)
        good = bad == 0 and rel <= tol and max_rel <= max_tol and outputs[o["name"]].padding_intact()
        t = f"{o['name']} rel={rel:.2e} max={max_rel:.2e} (cuDNN rel={rel_c:.2e}, kdl vs cuDNN {rel_vs:.2e})"
        if bad:
            t += f" NON-FINITE={bad}"
        if not outputs[o["name"]].padding_intact():
            t += " PADDING WRITTEN"
        if rel > tol or max_rel > max_tol:
            t += f" (tolerance rel {tol:.1e}, max {max_tol:.1e})"
        ok &= good
        text.append(t)
    for name, buf in amax_bufs.items():
        got = float(buf.item())
        v = amax64[name]
        unrounded = float(v.abs().max()) if isinstance(v, torch.Tensor) else abs(float(v))
        main_dt = epi["outputs"][0]["dtype"]
        rounded = float(v.to(TORCH_DTYPES[main_dt]).double().abs().max()) if isinstance(v, torch.Tensor) else unrounded
        slack = (2.02 * EPS[main_dt] + 1e-4) * max(unrounded, 1e-3 * acc_max)
        good = got == got and (abs(got - unrounded) <= slack or abs(got - rounded) <= slack)
        ok &= good
        text.append(f"{name}={got:.6g} (want {unrounded:.6g}){'' if good else ' AMAX MISMATCH'}")
    report(ok, f"{label}: " + " ".join(text) + ("" if ok else f"  seed={seed}"))


CHAIN_LAUNCHES = 8


def chain_case(kernel, seed, shrink=1):
    """Dependent launches back to back: an fprop whose output is the next launch's input (c = k, stride 1, "same"
    padding), alternating between two buffers, so that each launch reads what the one before wrote and overwrites
    what the one before read. The sm90a kernels launch as programmatic dependent launches (GemmSm90::run): the next
    kernel's CTAs start as the previous kernel's leave, and must not touch memory before its writes are visible.
    CHAIN_LAUNCHES launches queued without a host synchronization must give bitwise the outputs of the same launches
    each followed by one."""
    dt = kernel.dtype(kernel.in0)
    r, s = kernel.filter or (3, 3)
    label = f"{kernel.name:34s} chain of {CHAIN_LAUNCHES} dependent launches"
    if kernel.op != "conv2d_fprop" or kernel.dtype(kernel.out) != dt or r % 2 == 0 or s % 2 == 0 or \
            (kernel.stride or (1, 1)) != (1, 1):
        return  # no chain: the output cannot be the next input
    # One image of 23 x 21 pixels, 1024 channels: few tiles (a grid on a fraction of the SMs, so that the next
    # launch finds free SMs at once) and a long k-loop (each launch runs long enough for the next to start early).
    ch = 1024 // shrink
    pr = ca.Problem(1, 23, 21, ch, ch, r, s, ((r - 1) // 2, (s - 1) // 2), (1, 1), (1, 1), label="chain")
    label += f" {pr.text()}"
    gen = torch.Generator(device=DEV)
    gen.manual_seed(seed)
    dims = pr.tensor_dims(kernel.in0)
    x0 = ca.Tensor4(dims, TORCH_DTYPES[dt], dims[1], gen)
    w = ca.Tensor4(pr.tensor_dims(kernel.in1), TORCH_DTYPES[kernel.dtype(kernel.in1)], pr.c, gen)
    w.buf.mul_((3.0 / (r * s * pr.c)) ** 0.5)  # outputs of the input's size: the chain neither grows nor fades
    epi = kernel.epilogue
    fixed = {}
    if kernel.residual:
        fixed["residual"] = ca.Tensor4(dims, TORCH_DTYPES[kernel.dtype("residual")], dims[1], gen)
    for i in epi["inputs"]:
        n = pr.k if i["broadcast"] == "channel" else 1
        fixed[i["name"]] = (torch.rand((n,), generator=gen, device=DEV) + 0.5).to(TORCH_DTYPES[i["dtype"]])

    def run(sync):
        bufs = [ca.Tensor4(dims, TORCH_DTYPES[dt], dims[1]), ca.Tensor4(dims, TORCH_DTYPES[dt], dims[1])]
        bufs[0].buf.copy_(x0.buf)
        extra = {o["name"]: (torch.full((1,), float("nan"), dtype=torch.float32, device=DEV) if o["kind"] == "amax"
                             else ca.Tensor4(dims, TORCH_DTYPES[o["dtype"]], dims[1]))
                 for o in epi["outputs"] if o["name"] != kernel.out}
        ws_bytes = kernel.workspace_size(pr.shape(1))
        ws = torch.zeros((max(ws_bytes, 1),), dtype=torch.uint8, device=DEV)
        # The two launches' arguments: X and Y swap buffers from one launch to the next.
        args_c = []
        for parity in (0, 1):
            args = []
            for name, kind, default in zip(kernel.arg_names, kernel.arg_kinds, kernel.param_defaults):
                t = {kernel.in0: bufs[parity], kernel.in1: w, kernel.out: bufs[1 - parity]}.get(name)
                t = t if t is not None else fixed.get(name, extra.get(name))
                if kind == ca.ARG_PARAM:
                    args.append(ca.KdlArg(None, 0, 0, default))
                elif isinstance(t, ca.Tensor4):
                    args.append(t.arg())
                elif t is not None:
                    args.append(ca.KdlArg(t.data_ptr(), 0, 0, 0.0))
                else:
                    return f"argument '{name}' is unknown to the harness"
            args_c.append((ca.KdlArg * len(args))(*args))
        why = kernel.can_implement(pr.shape(1), args_c[0])
        if why is not None:
            return f"can_implement: {why}"
        if sync:
            ca.synchronize()  # (queued: the first launch follows the copy of its input and the fills on the stream)
        for i in range(CHAIN_LAUNCHES):
            rc = kernel.run(pr.shape(1), args_c[i % 2], ws.data_ptr() if ws_bytes else None, ws_bytes,
                            ca.stream_handle())
            if rc != ca.KDL_OK:
                return f"launch {i} returned {rc}"
            if sync:
                ca.synchronize()
        ca.synchronize()
        return [b.buf for b in bufs] + [e.buf if isinstance(e, ca.Tensor4) else e for e in extra.values()]

    apart, queued = run(True), run(False)
    for got in (apart, queued):
        if isinstance(got, str):
            report(False, f"{label}: {got}")
            return
    last = apart[CHAIN_LAUNCHES % 2]
    if float(torch.isfinite(last.float()).float().mean()) < 0.5:
        skip(f"{label}: the chain's output is not finite (nothing compared)")
        return
    same = [torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(apart, queued)]
    report(all(same), f"{label}: queued launches {'bitwise equal to' if all(same) else 'DIFFER from'} synchronized "
                      f"ones ({sum(same)} of {len(same)} buffers equal)" + ("" if all(same) else f"  seed={seed}"))


PROBLEMS = [
    ca.Problem(8, 28, 28, 64, 128, 3, 3, (1, 1), (1, 1), (1, 1), label="3x3"),
    ca.Problem(4, 31, 29, 128, 96, 3, 3, (1, 1), (2, 2), (1, 1), label="3x3 stride 2"),
    ca.Problem(16, 14, 14, 256, 64, 1, 1, (0, 0), (1, 1), (1, 1), label="1x1"),
    ca.Problem(2, 56, 56, 64, 64, 7, 7, (3, 3), (2, 2), (1, 1), label="7x7 stride 2"),
    ca.Problem(4, 17, 19, 96, 160, 5, 5, (2, 2), (1, 1), (2, 2), label="5x5 dilation 2"),
    ca.Problem(3, 23, 21, 48, 72, 3, 3, (1, 1), (1, 1), (1, 1), label="padded channels"),
    # Whole units of the swapped mainloop (n a multiple of 16, q of 8, p of 2, k of 64, c and k >= 128): a kernel
    # with it takes it here by default (Conv2dSm90Fprop::swap_pays).
    ca.Problem(16, 12, 16, 128, 128, 3, 3, (1, 1), (1, 1), (1, 1), label="3x3 whole swap units"),
]


def test_kernel(kernel, quick, seed, cc, shrink=1):
    probs = kernel.info_problems()
    report(not probs, f"{kernel.name} info: " + (probs or f"{len(kernel.arg_names)} arguments, op {kernel.op}"))
    exact = kernel.arch in ("sm90a", "sm100a")
    need = {"sm80": 80, "sm86": 86, "sm89": 89, "sm90a": 90, "sm100a": 100}.get(kernel.arch, 80)
    if (exact and cc != need) or cc < need:
        skip(f"{kernel.name}: arch {kernel.arch} does not run on sm_{cc}")
        return
    # Bench kernels (bench.list) are checked against cuDNN again by the benchmark: the first two problems here.
    problems = PROBLEMS[:2] if quick or kernel.list_name == "bench.list" else PROBLEMS
    for i, base in enumerate(problems):
        pr = (base.shrunk(shrink) if shrink > 1 else base).with_fixed(kernel.filter, kernel.stride)
        if kernel.channels64:  # what the sm90a wgmma conv path takes (ConvKernel says what and why)
            pr.c = (pr.c + 63) // 64 * 64
        if kernel.unit_stride:
            pr.stride = (1, 1)
        padded = base.label.startswith("padded channels")
        splits = [1]
        if kernel.slices > 1:
            s = min(kernel.slices, ca.ktiles(kernel, pr))
            splits = [1, s, 0] if i == 0 else [s if i % 2 == 0 else 1]  # 0: the kernel's own choice
        for split in splits:
            run_case(kernel, pr, split, padded, seed + 1000 * i + split, default_params=(i == 0 and split == 1))
    chain_case(kernel, seed + 7, shrink)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--carry", default=".carry/gpu")
    ap.add_argument("--lists", default="tests.list,bench.list")
    ap.add_argument("--kernel", action="append", default=[])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--swap-only", action="store_true",
                    help="only the kernels with the swapped mainloop (with KDL_CONV_MAINLOOP=swap: tests/gpu/conv/run.sh)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--shrink", type=int, default=1, help="divide the problems' sizes (the CPU smoke test)")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time()) % 100000
    cc = ca.device_capability()
    print(f"test_conv_cudnn seed={seed} (replay with --seed {seed}); torch {torch.__version__}, cuDNN "
          f"{torch.backends.cudnn.version()}, {ca.device_name()} (sm_{cc})", flush=True)
    kernels, problems = ca.discover(a.carry, a.lists.split(","), set(a.kernel) or None)
    for p in problems:
        report(False, p)
    if a.swap_only:
        kernels = [k for k in kernels if k.swap]
        print(f"--swap-only: {len(kernels)} kernels with the swapped mainloop: {' '.join(k.name for k in kernels)}")
    nb = os.path.join(a.carry, "not-built.list")
    not_built = 0
    if os.path.exists(nb):
        for line in open(nb):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3 and "conv" in os.path.basename(parts[0]):
                print(f"NOT BUILT {parts[0]} {parts[1]}: {parts[2]}")
                not_built += 1
    print(f"conv kernels not built (refused by kdlc, listed above): {not_built}")
    if not kernels:
        print("no conv kernel in the built libraries (kdlc refuses the conv specs: NOT BUILT above)")
    t0 = time.time()
    for k in kernels:
        test_kernel(k, a.quick, seed, cc, a.shrink)
    print(f"conv kernels: {len(kernels)}, {time.time() - t0:.1f} s")
    if failures:
        print(f"\nfailures ({len(failures)}):")
        for f in failures[:60]:
            print("  FAIL " + f)
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
