#!/usr/bin/env python3
"""The promise behind `kdlc check`, tested on many generated specs: every kernel (GEMM or convolution)
that passes `kdlc check` is accepted by `kdlc emit` and its emitted .cu compiles with nvcc (for its own
arch); with --gate, `kdlc build` builds it (ptxas's gate: no spills, its later tries included). `check` refuses what this version cannot generate ([unsupported]: the
sm90a table of codegen/support_sm90.cpp, split_k = stream_k), so nothing that passes it may fail later.

Random kernels over the whole space of dtypes, layouts (of A and B, and of C, D and Z), tiles, stages,
alignments, split-K and epilogues on the sm80 path, of types, tiles, schedules, clusters, raster,
split-K and `fallback = sm80` on the sm90a path, and convolutions (fprop, dgrad, wgrad; filter, stride,
residual, [channel] epilogues, extra outputs, amax; both paths) (many of them invalid or not generated on purpose) go
through `kdlc check` one by one; the valid ones are
emitted, and a sample of them (half sm90a when there are some) is compiled. Where `check` refuses a kernel's
tile and its note names the nearest tile that passes (codegen/suggest_tile.cpp), that tile must pass `check`,
and the kernel with it joins the valid ones. Usage:
  check_implies_compile.py --kdlc KDLC --include INCLUDE_DIR [--count N] [--compile N] [--seed S] [--nvcc NVCC]
                           [--gate]
It never passes without testing the promise: it fails when no random kernel passed `check` (or none
was compiled), and exits 77 (ctest's SKIP_RETURN_CODE) with "SKIP: ..." when nvcc is missing.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test
# The note on a refused tile (codegen/suggest_tile.cpp) and the spec line it replaces.
SUGGESTION = re.compile(r"note: `(tile = \(\d+, \d+, \d+\);)` passes `kdlc check` for kernel `[^`]+`")
TILE_LINE = re.compile(r"tile = \([^)]*\);")


def suggested_specs(src, check_output):
    """(the suggested tile line, src with it) for each tile note in `kdlc check`'s output on src."""
    return [(m.group(1), TILE_LINE.sub(m.group(1), src, count=1)) for m in SUGGESTION.finditer(check_output)]

DTYPES = ["f16", "bf16", "tf32", "f32", "s8", "u8"]
OUT_DTYPES = {"f16": ["f16", "f32", "bf16"], "bf16": ["bf16", "f32"], "tf32": ["f32", "bf16"],
              "f32": ["f32"], "s8": ["s8", "s32", "f32", "bf16"], "u8": ["s32", "s8", "f32"]}
EPILOGUES = [
    None,
    "input bias : f32 [col]; D = relu(acc + bias);",
    "param alpha = 1.0; input scale : f32 [row]; D = gelu(alpha * acc) * scale;",
    "param s = 0.1; D = leaky_relu(clamp(acc, -4.0, 4.0), s);",
    "D = select(acc > 0.0, silu(acc), gelu_tanh(acc)); output Z : f32 row = acc;",
    "input sa : f32 []; D = acc * sa; output amax : f32 = max(abs(D));",
]


def random_epilogue(rng, out, src, bcasts, out_layout):
    """A random epilogue: params, inputs of every broadcast and type, `let` intermediates, an expression tree over
    the language's functions (kept continuous and well-conditioned, so a right kernel never differs from the fp64
    reference by more than rounding: select only between branches that meet at 0, log and sqrt of 1 + |x|), extra
    outputs in random types and layouts, amax. `out` is the op's output (D, Y, X or W), `src` its source operand
    (C, residual) or None, `out_layout()` a layout for an extra output."""
    names, decls = ["acc", "acc"], []
    if src:
        names.append(src)
    for j in range(rng.choice([0, 1, 1, 2])):
        decls.append("param p%d = %s;" % (j, rng.choice(["0.5", "-1.25", "2.0", "0.125"])))
        names.append("p%d" % j)
    for j in range(rng.choice([0, 1, 1, 2])):
        b = rng.choice(bcasts)
        decls.append("input v%d : %s [%s];" % (j, rng.choice(["f32", "f32", "bf16", "f16"]), b))
        names.append("v%d" % j)
    zero_at_zero = ["relu(%s)", "silu(%s)", "tanh(%s)", "gelu(%s)", "gelu_tanh(%s)", "(%s * 0.25)",
                    "(sigmoid(%s) - 0.5)", "leaky_relu(%s, 0.1)"]

    def expr(depth):
        if depth == 0 or rng.random() < 0.25:
            return rng.choice(names + ["1.5", "0.25"])
        x = expr(depth - 1)
        r = rng.random()
        if r < 0.35:
            return rng.choice(zero_at_zero + ["abs(%s)", "(-%s)", "sigmoid(%s)", "exp(-abs(%s))",
                                              "log(1.0 + abs(%s))", "sqrt(1.0 + abs(%s))", "rsqrt(1.0 + %s * %s)",
                                              "clamp(%s, -2.0, 3.0)"]).replace("%s", x)
        if r < 0.45:
            return "select(%s > 0.0, %s, %s)" % (x, rng.choice(zero_at_zero) % x, rng.choice(zero_at_zero) % x)
        y = expr(depth - 1)
        return rng.choice(["(%s + %s)", "(%s - %s)", "(%s * %s)", "min(%s, %s)", "max(%s, %s)",
                           "(%s / (1.0 + abs(%s)))"]) % (x, y)

    for j in range(rng.choice([0, 0, 1, 2])):
        decls.append("let t%d = %s;" % (j, expr(2)))
        names.append("t%d" % j)
    decls.append("%s = %s;" % (out, expr(3)))
    names.append(out)
    for j in range(rng.choice([0, 0, 1, 2])):
        decls.append("output Z%d : %s %s = %s;" % (j, rng.choice(["f32", "bf16", "f16"]), out_layout(), expr(2)))
    if rng.random() < 0.2:
        decls.append("output amax : f32 = max(abs(%s));" % out)
    return " ".join(decls)


SM90_DTYPES = ["bf16", "f16", "bf16", "f16", "e4m3", "e5m2", "s8", "u8", "tf32"]


def matrix_layout(rng):
    """C, D and extra outputs: mostly row-major; a column-major D is computed as D^T = B^T A^T."""
    return "row" if rng.random() < 0.7 else "col"


def with_layouts(rng, epi):
    """The epilogue with its extra output Z in a random layout."""
    return epi.replace("output Z : f32 row", "output Z : f32 %s" % matrix_layout(rng)) if epi else epi


# B's type beside A's on sm90a: the same mostly; the other fp8 or 8-bit integer type now and then.
SM90_B_MIX = {"e4m3": "e5m2", "e5m2": "e4m3", "s8": "u8", "u8": "s8"}


def random_sm90_kernel(rng, i):
    """An sm90a GEMM on a wgmma schedule, mostly near what the table generates: every input type (mixed fp8
    and 8-bit integers too), fp8 promotion and block scales, split-K modes."""
    dt = rng.choice(SM90_DTYPES)
    dtb = SM90_B_MIX[dt] if dt in SM90_B_MIX and rng.random() < 0.3 else dt
    k = {"bf16": 64, "f16": 64, "tf32": 32}.get(dt, 128)
    tm, tn = rng.choice([64, 128, 128, 256]), rng.choice([64, 128, 256, 192])
    tk = k if rng.random() < 0.8 else rng.choice([32, 64, 128])
    fp8 = dt in ("e4m3", "e5m2")
    # fp8 block scales (the supported (1, 128) x (128, 128), now and then another block) or a promotion count.
    scales = fp8 and rng.random() < 0.25
    promotion = fp8 and not scales and rng.random() < 0.3
    if scales:
        tm, tn, tk = rng.choice([(128, 128, 128), (128, 128, 128), (64, 128, 128), (128, 64, 128), (128, 256, 128)])
    la, lb = ("row", "col") if rng.random() < 0.8 else (rng.choice(["row", "col"]), rng.choice(["row", "col"]))
    out = rng.choice(["bf16", "f16", "f32", "e4m3", "s8"])
    # `fallback = sm80` now and then, with A's alignment below TMA's 16 bytes (or an illegal one) at times.
    fallback = rng.random() < 0.2
    align_a = " align %d" % rng.choice([1, 2, 4]) if fallback and rng.random() < 0.5 else ""
    sa = sb = ""
    if scales:
        sa = " scale (1, 128)" if rng.random() < 0.9 else " scale (%d, %d)" % rng.choice([(1, 64), (128, 128)])
        sb = " scale (128, 128)" if rng.random() < 0.9 else " scale (%d, %d)" % rng.choice([(1, 128), (64, 128)])
    body = [
        "op = gemm;", "arch = sm90a;", "A : %s %s%s%s;" % (dt, la, align_a, sa), "B : %s %s%s;" % (dtb, lb, sb),
    ]
    if promotion:
        body.append("promotion = %s;" % rng.choice(["fast", 1, 2, 4]))
    if fallback:
        body.append("fallback = sm80;")
    if rng.random() < 0.3:
        body.append("C : %s %s;" % (out, matrix_layout(rng)))
    body += ["D : %s %s;" % (out, matrix_layout(rng)), "tile = (%d, %d, %d);" % (tm, tn, tk),
             "schedule = %s;" % rng.choice(["cooperative", "cooperative", "cooperative", "pingpong", "auto"]),
             "stages = %s;" % rng.choice(["auto", "auto", 2, 4, 6]),
             "cluster = %s;" % rng.choice(["(1, 1, 1)", "(1, 1, 1)", "(2, 1, 1)", "(2, 1, 1)", "(1, 2, 1)"]),
             "raster = %s;" % rng.choice(["auto", "auto", "along_n", "along_m"]),
             "split_k = %s;" % rng.choice(["1", "1", "1", "serial(2)", "serial(2)", "serial(8)", "parallel(2)",
                                           "stream_k"])]
    has_c = any(line.startswith("C :") for line in body)
    if rng.random() < 0.4:
        epi = random_epilogue(rng, "D", "C" if has_c else None, ["row", "col", ""], lambda: matrix_layout(rng))
    else:
        epi = with_layouts(rng, rng.choice(EPILOGUES))
    if epi:
        body.append("epilogue { %s }" % epi)
    return "kernel k%04d {\n  %s\n}\n" % (i, "\n  ".join(body))


# Convolution epilogues: {out} is the op's output tensor (Y, X or W), {lay} its layout; [channel] inputs,
# the residual, extra outputs of the output's shape, amax.
CONV_EPILOGUES = [
    None,
    "input bias : f32 [channel]; {out} = relu(acc + bias);",
    "input scale : f32 [channel]; input shift : f32 [channel]; {out} = acc * scale + shift;",
    "input bias : f32 [channel]; {out} = gelu(acc + bias) + residual; output Z : f32 {lay} = acc; "
    "output amax : f32 = max(abs({out}));",
    "param a = 0.5; {out} = silu(a * acc) + residual; output Z : bf16 {lay} = relu(acc);",
    "input sc : f32 []; input bias : bf16 [channel]; {out} = tanh(acc * sc + bias); output Z1 : f16 {lay} = acc; "
    "output Z2 : f32 {lay} = sigmoid(acc); output amax : f32 = max(abs({out}));",
]


def random_conv_kernel(rng, i):
    """A convolution (fprop, dgrad, wgrad) on the multistage path or on sm90a's wgmma schedules."""
    op = rng.choice(["conv2d_fprop", "conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad"])
    sm90 = rng.random() < 0.6
    dt = rng.choice(["bf16", "f16", "bf16", "f16", "f32", "e4m3"] if rng.random() < 0.2 else ["bf16", "f16"])
    names = {"conv2d_fprop": ("X", "W", "Y"), "conv2d_dgrad": ("Y", "W", "X"), "conv2d_wgrad": ("Y", "X", "W")}[op]
    layout = {"X": "nhwc", "Y": "nhwc", "W": "krsc"}
    out_name = names[2]
    out_dt = rng.choice([dt, dt, "f32", "bf16", "f16"]) if dt in ("bf16", "f16") else dt
    residual = rng.random() < 0.4
    body = ["op = %s;" % op, "arch = %s;" % ("sm90a" if sm90 else rng.choice(["sm80", "sm86", "sm89"]))]
    # `align` on the gathered inputs now and then (2, 4 or 8 elements; the default is 16 bytes' worth).
    align = " align %d" % rng.choice([2, 4, 8]) if rng.random() < 0.2 else ""
    body.append("%s : %s %s%s;" % (names[0], dt, layout[names[0]], align))
    body.append("%s : %s %s%s;" % (names[1], dt, layout[names[1]], align))
    if residual:
        body.append("residual : %s %s;" % (out_dt, layout[out_name]))
    body.append("%s : %s %s;" % (out_name, out_dt, layout[out_name]))
    if rng.random() < 0.6:
        body.append("filter = (%d, %d);" % rng.choice([(1, 1), (3, 3), (3, 3), (5, 5), (7, 7), (1, 3)]))
    if rng.random() < 0.4:
        body.append("stride = (%d, %d);" % rng.choice([(1, 1), (2, 2), (2, 2), (1, 2)]))
    if sm90:
        schedule = rng.choice(["cooperative", "cooperative", "pingpong", "auto", "multistage"])
        body.append("schedule = %s;" % schedule)
        if rng.random() < 0.7:
            tm, tn = rng.choice([(128, 256), (256, 128), (128, 128), (64, 256), (128, 64), (256, 64), (64, 128)])
            body.append("tile = (%d, %d, %d);" % (tm, tn, 64 if rng.random() < 0.85 else 32))
        if rng.random() < 0.3:
            body.append("cluster = %s;" % rng.choice(["(2, 1, 1)", "(1, 2, 1)", "(2, 2, 1)"]))
    elif rng.random() < 0.6:
        body.append("tile = (%d, %d, %d);" % (rng.choice([64, 128, 256]), rng.choice([64, 128, 256]), rng.choice([32, 64])))
    if rng.random() < 0.4:
        body.append("stages = %s;" % rng.choice(["auto", 2, 3, 4, 5]))
    if op == "conv2d_wgrad" and rng.random() < 0.6:
        body.append("split_k = serial(%d);" % rng.choice([2, 4, 8]))
    if rng.random() < 0.4:
        body.append("epilogue { %s }" % random_epilogue(rng, out_name, "residual" if residual else None,
                                                        ["channel", ""], lambda: layout[out_name]))
        return "kernel k%04d {\n  %s\n}\n" % (i, "\n  ".join(body))
    epi = rng.choice(CONV_EPILOGUES)
    if epi:
        if "residual" in epi and not residual:
            epi = epi.replace(" + residual", "")
        body.append("epilogue { %s }" % epi.format(out=out_name, lay=layout[out_name]))
    return "kernel k%04d {\n  %s\n}\n" % (i, "\n  ".join(body))


def random_kernel(rng, i):
    if rng.random() < 0.25:
        return random_conv_kernel(rng, i)
    if rng.random() < 0.35:
        return random_sm90_kernel(rng, i)
    return random_sm80_kernel(rng, i)


def random_sm80_kernel(rng, i):
    """A GEMM on the multistage path (sm80, sm86, sm89)."""
    dt = rng.choice(DTYPES)
    la, lb = rng.choice(["row", "col"]), rng.choice(["row", "col"])
    if dt in ("tf32", "f32", "s8", "u8") and rng.random() < 0.7:
        la, lb = "row", "col"  # mostly valid, sometimes not
    tm, tn = rng.choice([32, 64, 128, 256, 96]), rng.choice([32, 64, 128, 256, 48])
    tk = rng.choice([16, 32, 64, 128])
    stages = rng.choice(["auto", 2, 3, 4, 5, 6])
    out = rng.choice(OUT_DTYPES[dt])
    has_c = rng.random() < 0.4
    align = ""
    if rng.random() < 0.25:
        align = " align %d" % rng.choice([1, 2, 4, 8, 16])
    split = rng.choice(["1", "1", "serial(2)", "serial(4)", "serial(2)", "parallel(2)", "stream_k"])
    raster = rng.choice(["auto", "along_m", "along_n"])
    if rng.random() < 0.4:
        epi = random_epilogue(rng, "D", "C" if has_c else None, ["row", "col", ""], lambda: matrix_layout(rng))
    else:
        epi = with_layouts(rng, rng.choice(EPILOGUES))
    body = [
        "op = gemm;", "arch = %s;" % rng.choice(["sm80", "sm80", "sm86", "sm89"]),
        "A : %s %s%s;" % (dt, la, align), "B : %s %s;" % (dt, lb),
    ]
    if has_c:
        body.append("C : %s %s;" % (out, matrix_layout(rng)))
    body += ["D : %s %s;" % (out, matrix_layout(rng)), "tile = (%d, %d, %d);" % (tm, tn, tk), "stages = %s;" % stages,
             "split_k = %s;" % split, "raster = %s;" % raster]
    if epi:
        body.append("epilogue { %s }" % epi)
    return "kernel k%04d {\n  %s\n}\n" % (i, "\n  ".join(body))


# The functions whose inlined code costs the most registers (what the register rules of codegen/lower_*.cpp count).
HEAVY_MATH = re.compile(r"\b(gelu|gelu_tanh|log|tanh|exp|sigmoid|silu|rsqrt|sqrt)\(")
TILE_VALUES = re.compile(r"tile = \((\d+), (\d+), (\d+)\);")


def heavy_epilogue(rng, out, src, bcasts, out_layout):
    """A random epilogue with at least two of the costly functions (the first of 30 draws that has them)."""
    for _ in range(30):
        epi = random_epilogue(rng, out, src, bcasts, out_layout)
        if len(HEAVY_MATH.findall(epi)) >= 2:
            break
    return epi


def random_heavy_kernel(rng, i):
    """A kernel where `check`'s register rules are measured thresholds rather than a model: the generators' kernels
    moved to the tiles with the most accumulator registers per thread (multistage 128 x 256 / 256 x 128 / 128 x 128 /
    256 x 64 / 64 x 256; sm90a cooperative 128 x 256 / 256 x 128 / 128 x 128, pingpong 128 x 128) and, mostly, given
    an epilogue with at least two costly functions. Every gap between `check` and `kdlc build` found since v33 lay
    here (docs/perf-notes.md v33-v35)."""
    r = rng.random()
    if r < 0.35:
        src = random_conv_kernel(rng, i)
    elif r < 0.7:
        src = random_sm90_kernel(rng, i)
    else:
        src = random_sm80_kernel(rng, i)
    m = TILE_VALUES.search(src)
    tk = int(m.group(3)) if m else 64
    if "schedule = cooperative" in src or "schedule = pingpong" in src or "schedule = auto" in src:
        schedule, (tm, tn) = rng.choice([("cooperative", (128, 256)), ("cooperative", (256, 128)),
                                         ("pingpong", (128, 128)), ("cooperative", (128, 128))])
        src = re.sub(r"schedule = \w+;", "schedule = %s;" % schedule, src)
    else:
        tm, tn = rng.choice([(128, 256), (256, 128), (128, 128), (256, 64), (64, 256)])
    tile = "tile = (%d, %d, %d);" % (tm, tn, tk)
    src = TILE_VALUES.sub(tile, src) if m else src.replace("\n}", "\n  %s\n}" % tile, 1)
    if rng.random() < 0.8:
        conv = re.search(r"op = conv2d_(\w+);", src)
        if conv:
            out = {"fprop": "Y", "dgrad": "X", "wgrad": "W"}[conv.group(1)]
            epi = heavy_epilogue(rng, out, "residual" if "residual :" in src else None, ["channel", ""],
                                 lambda: "krsc" if out == "W" else "nhwc")
        else:
            epi = heavy_epilogue(rng, "D", "C" if "\n  C :" in src else None, ["row", "col", ""],
                                 lambda: matrix_layout(rng))
        src = re.sub(r"\n  epilogue \{.*\}", "", src)
        src = src.replace("\n}", "\n  epilogue { %s }\n}" % epi, 1)
    return src


def find_nvcc(option):
    if option:
        return option if os.path.isfile(option) and os.access(option, os.X_OK) else None
    for c in [os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--compile", type=int, default=4)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--nvcc", default=None, help="default: $KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc")
    ap.add_argument("--heavy", action="store_true",
                    help="draw every kernel where the register rules are thresholds: the largest tiles, epilogues "
                         "with two or more costly functions (use with --gate)")
    ap.add_argument("--gate", action="store_true",
                    help="compile the sample with `kdlc build` (ptxas's gate: no spills, its later tries included) "
                         "instead of plain nvcc")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print("seed %d (replay with --seed %d)" % (seed, seed))
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="kdl-check-emit-")
    failures = 0
    valid = []
    suggested = 0

    def emit(i, src, path, tag):
        out = os.path.join(work, "out%04d%s" % (i, tag))
        em = run([args.kdlc, "emit", path, "-o", out])
        if em.returncode != 0:
            print("FAIL k%04d%s: passes `kdlc check` but `kdlc emit` rejects it\n%s\n%s" % (i, tag, src, em.stdout))
            return 1
        valid.append((i, src, out, "arch = sm90a" in src, path))
        return 0

    for i in range(args.count):
        src = random_heavy_kernel(rng, i) if args.heavy else random_kernel(rng, i)
        path = os.path.join(work, "k%04d.kdl" % i)
        with open(path, "w") as f:
            f.write(src)
        chk = run([args.kdlc, "check", path])
        if chk.returncode >= 2:
            print("FAIL k%04d: kdlc check exited %d\n%s\n%s" % (i, chk.returncode, src, chk.stdout))
            failures += 1
            continue
        if chk.returncode == 1:
            # A refused tile's note names a tile that passes `check` for that kernel: it must (and then the
            # kernel joins the ones whose emit and compile are tested).
            for line, fixed in suggested_specs(src, chk.stdout):
                suggested += 1
                spath = os.path.join(work, "k%04ds.kdl" % i)
                with open(spath, "w") as f:
                    f.write(fixed)
                again = run([args.kdlc, "check", spath])
                if fixed == src or again.returncode != 0:
                    print("FAIL k%04d: `kdlc check` suggests `%s`, which it refuses in turn\n%s\n%s\n%s"
                          % (i, line, src, chk.stdout, again.stdout))
                    failures += 1
                    continue
                failures += emit(i, fixed, spath, "s")
            continue
        failures += emit(i, src, path, "")
    n_fixed = sum(v[4].endswith("s.kdl") for v in valid)
    print("%d of %d random kernels pass check (%d of them sm90a), and %d refused ones with the tile their refusal "
          "suggested (%d suggestions); all of them emit: %s"
          % (len(valid) - n_fixed, args.count, sum(v[3] for v in valid if not v[4].endswith("s.kdl")), n_fixed,
             suggested, failures == 0))
    verdict = finish(args, rng, valid, failures)
    shutil.rmtree(work, ignore_errors=True)
    return verdict


def finish(args, rng, valid, failures):
    """Compiles a sample of the valid kernels; the exit status: 0 only when something was tested."""
    if failures:
        print("FAIL: %d kernel(s) break the promise of `kdlc check` (see above)" % failures)
        return 1
    if not valid:
        print("FAIL: none of the %d random kernels passed `kdlc check`, so nothing was tested "
              "(is kdlc check rejecting everything?)" % args.count)
        return 1
    nvcc = find_nvcc(args.nvcc)
    if nvcc is None:
        print("SKIP: nvcc not found (%s); %d kernels passed check and emit, none was compiled"
              % (args.nvcc or "$KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc", len(valid)))
        return SKIP
    # A fifth of the sample from the kernels with a suggested tile (at most), the rest as before: half sm90a.
    fixed = [v for v in valid if v[4].endswith("s.kdl")]
    n_fixed = min(len(fixed), args.compile // 5)
    sample = rng.sample(fixed, n_fixed)
    sm90 = [v for v in valid if v[3] and v not in fixed]
    others = [v for v in valid if not v[3] and v not in fixed]
    n90 = min(len(sm90), (args.compile - n_fixed) // 2)
    sample += rng.sample(sm90, n90) + rng.sample(others, min(len(others), args.compile - n_fixed - n90))
    if not sample:
        print("FAIL: --compile %d: no kernel compiled, so the compile half of the promise is untested" % args.compile)
        return 1
    compile_failures = 0
    for i, src, out, is_sm90, path in sample:
        cu = os.path.join(out, "k%04d.cu" % i)
        t0 = time.time()
        if args.gate:
            # `kdlc build` finds nvcc as a user's build would ($KDL_NVCC, $CUDACXX, PATH); point it at this one.
            env = dict(os.environ, KDL_NVCC=nvcc)
            cc = run([args.kdlc, "build", path, "-o", out + "-lib",
                      "--no-cache"], env=env)
            if cc.returncode != 0:
                print("FAIL k%04d: passes check, but `kdlc build` fails (ptxas's gate)\n%s\n%s"
                      % (i, src, cc.stdout[-4000:]))
                compile_failures += 1
            else:
                print("ok k%04d builds (%.1f s)" % (i, time.time() - t0))
            continue
        # sm_80 for the sm80 path (the flags of every arch are covered elsewhere); sm_90a for kdl::GemmSm90
        gencode = "-gencode=arch=compute_90a,code=sm_90a" if is_sm90 else "-gencode=arch=compute_80,code=sm_80"
        cc = run([nvcc, "-std=c++17", "-O3", gencode, "-I" + args.include,
                  "-I" + out, "-c", cu, "-o", os.path.join(out, "k.o")])
        if cc.returncode != 0:
            print("FAIL k%04d: passes check, emitted, but nvcc fails\n%s\n%s" % (i, src, cc.stdout[-4000:]))
            compile_failures += 1
        else:
            print("ok k%04d compiles (%.1f s)" % (i, time.time() - t0))
    print("%d of %d sampled kernels compile" % (len(sample) - compile_failures, len(sample)))
    return 1 if compile_failures else 0

if __name__ == "__main__":
    sys.exit(main())
