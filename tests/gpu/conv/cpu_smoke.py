#!/usr/bin/env python3
"""CPU smoke test of the Python conv drivers (test_conv_cudnn.py, bench/conv_bench.py), without a GPU:
a fake kernel library (fake_conv_lib.c: the conv C ABI computing on host memory) stands in for the
libraries of `kdlc build`, PyTorch runs on the CPU (KDL_CONV_DEVICE=cpu), and the real kdlc writes the
`kdlc list --json` beside it as tests/gpu/build-kernels.sh does. Checks that
  - test_conv_cudnn.py passes every case of the correct fake kernels (fprop with a [channel] bias + relu,
    a fixed 3x3 stride 2 fprop, dgrad, serial split-K wgrad with an f32 output and an amax; the bench kernels);
  - it fails when the fake leaves an output channel unwritten (FAKE_CONV_BUG=1) or reads the wrong
    filter tap (FAKE_CONV_BUG=2);
  - conv_bench.py times them beside PyTorch's conv and writes its table.
usage: cpu_smoke.py KDLC     (prints SKIP: and exits 0 when this Python has no torch)

With `--kdl-gpu-test PATH [--cuda-include DIR]` it checks kdl_gpu_test's conv path instead (no torch needed):
fake_cuda.c, LD_PRELOADed, answers its CUDA runtime calls on host memory (one compute capability 9.0
device), so kdl_gpu_test runs every conv case, rejection and host-thread run of the fake kernels; it must
pass them all and fail the FAKE_CONV_BUG=1 / =2 fakes.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

FAKE_SPEC = """
template t(op_) { op = op_; arch = sm80; accum = f32; tile = (128, 128, 32); stages = 3; }
kernel fk_fprop_bias_relu = t(conv2d_fprop) {
  X : bf16 nhwc; W : bf16 krsc; Y : bf16 nhwc;
  epilogue { input bias : f32 [channel]; Y = relu(acc + bias); }
}
kernel fk_fprop_3x3_s2 = t(conv2d_fprop) { X : f16 nhwc; W : f16 krsc; Y : f16 nhwc; filter = (3, 3); stride = (2, 2); }
kernel fk_dgrad = t(conv2d_dgrad) { Y : f16 nhwc; W : f16 krsc; X : f16 nhwc; }
kernel fk_wgrad_splitk = t(conv2d_wgrad) {
  Y : bf16 nhwc; X : bf16 nhwc; W : f32 krsc;
  split_k = serial(4);
  epilogue { param alpha = 1.0; input bias : f32 [channel]; W = alpha * acc + bias; output amax : f32 = max(abs(W)); }
}
"""
FAKE_BENCH_SPEC = """
template t(op_) { op = op_; arch = sm80; accum = f32; tile = (128, 128, 32); stages = 3; stride = (1, 1); }
kernel fkb_fprop3x3 = t(conv2d_fprop) { X : bf16 nhwc; W : bf16 krsc; Y : bf16 nhwc; filter = (3, 3); }
kernel fkb_fprop1x1 = t(conv2d_fprop) { X : bf16 nhwc; W : bf16 krsc; Y : bf16 nhwc; filter = (1, 1); }
kernel fkb_dgrad3x3 = t(conv2d_dgrad) { Y : bf16 nhwc; W : bf16 krsc; X : bf16 nhwc; filter = (3, 3); }
kernel fkb_wgrad3x3_sk4 = t(conv2d_wgrad) { Y : bf16 nhwc; X : bf16 nhwc; W : bf16 krsc; filter = (3, 3); split_k = serial(4); }
"""

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def compile_lib(src, out, *flags):
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", *flags, src, "-o", out, "-lm"], capture_output=True, text=True)
    check(r.returncode == 0, f"{os.path.basename(src)} compiles {r.stderr.strip()[:400]}")
    return r.returncode == 0


def kdl_gpu_test_smoke(kdlc, exe, cuda_include):
    """kdl_gpu_test's conv path on the fake library, its CUDA calls answered by fake_cuda.c."""
    with tempfile.TemporaryDirectory() as tmp:
        lib, shim, spec = os.path.join(tmp, "libfake.so"), os.path.join(tmp, "fake_cuda.so"), os.path.join(tmp, "fake.kdl")
        if not (compile_lib(os.path.join(HERE, "fake_conv_lib.c"), lib, "-I", os.path.join(ROOT, "include")) and
                compile_lib(os.path.join(HERE, "fake_cuda.c"), shim, "-I", cuda_include)):
            return 1
        open(spec, "w").write(FAKE_SPEC)
        js = subprocess.run([kdlc, "check", spec], capture_output=True, text=True)
        check(js.returncode == 0, f"kdlc check of the fake spec {js.stderr.strip()[:300]}")

        def run(bug, *args):
            env = dict(os.environ, LD_PRELOAD=shim)
            if bug:
                env["FAKE_CONV_BUG"] = str(bug)
            p = subprocess.run([exe, "--seed", "5", *args, spec, lib], capture_output=True, text=True, env=env,
                               timeout=600)
            return p.returncode, p.stdout + p.stderr

        rc, out = run(None)
        last = [l for l in out.splitlines() if " passed, " in l]
        passed = int(last[-1].split()[0]) if last else 0
        check(rc == 0 and passed >= 100 and last[-1].endswith(" 0 failed"),
              f"kdl_gpu_test passes every case of the correct fake conv kernels: rc={rc} {last[-1] if last else out[-3000:]}")
        if rc:
            print("\n".join(l for l in out.splitlines() if l.startswith("FAIL"))[:6000])
        for bug, sign in ((1, "unwritten="), (2, "tolerance rel")):
            rc, out = run(bug, "--quick")
            check(rc == 1 and sign in out, f"kdl_gpu_test fails the fake with FAKE_CONV_BUG={bug} ({sign}): rc={rc}")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


def plot_bars_check():
    """bench/conv_plot.py's bars on rows made up to tell them apart: a sustained row with a higher ratio than the
    paired ones (not a bar), the non-chosen cuDNN algorithm before the anchor (the anchor is the hatched bar)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import conv_plot
    keys = ["case", "op", "impl", "kernel", "arch", "split", "ms", "tflops", "cudnn_ms", "ratio", "status"]
    made = [("c1", "fprop", "cuDNN", "cudnn (autotuned)", "", "", "0.2", "500.0", "", "", "ok"),
            ("c1", "fprop", "cuDNN", "cudnn (heuristic)", "", "", "0.1", "700.0", "", "", "ok (the anchor)"),
            ("c1", "fprop", "kdl", "k_big", "sm90a", "1", "0.104", "690.0", "0.100", "0.96", "ok"),
            ("c1", "fprop", "kdl", "k_small", "sm90a", "1", "0.2", "350.0", "0.1", "0.5", "ok"),
            ("c1", "fprop", "kdl sustained", "k_big", "sm90a", "1", "0.110", "650.0", "0.115", "1.04", "ok"),
            ("c1", "fprop", "kdl", "k_old", "sm80", "1", "0.2", "350.0", "0.1", "0.5", "ok")]
    cases, got = conv_plot.bars([dict(zip(keys, r)) for r in made])
    # main() end to end on those rows with a stand-in for matplotlib (CI has none): the plot step of
    # bench/conv_run.sh must not fail on a table the benchmark writes.
    import types

    class Stub:
        def __init__(self, n=0):
            self.n = n

        def __getattr__(self, name):
            if name in ("get_x", "get_width"):
                return lambda: 0.0
            return lambda *a, **k: Stub(len(a[0]) if name == "bar" and a else 0)

        def __iter__(self):
            return iter([Stub() for _ in range(self.n)])

    mpl, pyplot = types.ModuleType("matplotlib"), types.ModuleType("matplotlib.pyplot")
    mpl.use = lambda *a, **k: None
    mpl.pyplot = pyplot
    pyplot.subplots = lambda *a, **k: (Stub(), Stub())
    saved = {m: sys.modules.get(m) for m in ("matplotlib", "matplotlib.pyplot")}
    sys.modules.update({"matplotlib": mpl, "matplotlib.pyplot": pyplot})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(keys)
            w.writerows(made)
        try:
            rc, err = conv_plot.main(["conv_plot.py", path, os.path.join(tmp, "t.png")]), ""
        except Exception as e:  # noqa: BLE001 -- any failure of the plot step is the finding
            rc, err = None, repr(e)
    for m, mod in saved.items():
        if mod is None:
            sys.modules.pop(m, None)
        else:
            sys.modules[m] = mod
    check(rc == 0, f"conv_plot.py main() plots a benchmark table (matplotlib stubbed): rc={rc} {err}")
    want = {("c1", "KDL sm90a"): 690.0, ("c1", "KDL sm80"): 350.0, ("c1", "cuDNN alone"): 700.0,
            ("c1", "cuDNN (paired)"): 690.0 * 0.104 / 0.100}
    check(cases == ["c1"] and all(abs(got.get(k, -1) - v) < 1e-9 for k, v in want.items()),
          f"conv_plot.py's bars: each path's best paired kernel (not the sustained row), cuDNN's anchor alone: {got}")


def main(argv):
    if len(argv) >= 4 and argv[2] == "--kdl-gpu-test":
        inc = argv[argv.index("--cuda-include") + 1] if "--cuda-include" in argv else "/usr/local/cuda/include"
        return kdl_gpu_test_smoke(os.path.abspath(argv[1]), os.path.abspath(argv[3]), inc)
    if len(argv) != 2:
        print(__doc__)
        return 2
    plot_bars_check()
    try:
        import torch  # noqa: F401
    except ImportError:
        if failures:  # the plot's checks need no torch: their failure is not a skip
            print(f"{len(failures)} failed (the conv drivers not run: this Python has no torch)")
            return 1
        print("SKIP: this Python has no torch (scripts/setup.sh puts it in .venv)")
        return 0
    kdlc = os.path.abspath(argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        carry = os.path.join(tmp, "carry")
        for d in ("specs/matrix", "specs/bench", "libs/matrix", "libs/bench"):
            os.makedirs(os.path.join(carry, d))
        lib = os.path.join(carry, "libs/matrix/libfake.so")
        if not compile_lib(os.path.join(HERE, "fake_conv_lib.c"), lib, "-I", os.path.join(ROOT, "include")):
            return 1
        shutil.copy(lib, os.path.join(carry, "libs/bench/libfakebench.so"))
        for group, stem, text in (("matrix", "fake", FAKE_SPEC), ("bench", "fakebench", FAKE_BENCH_SPEC)):
            spec = os.path.join(carry, "specs", group, stem + ".kdl")
            open(spec, "w").write(text)
            js = subprocess.run([kdlc, "list", "--json", spec], capture_output=True, text=True)
            check(js.returncode == 0, f"kdlc list --json {stem}.kdl {js.stderr.strip()[:300]}")
            open(os.path.join(carry, "libs", group, stem + ".kernels.json"), "w").write(js.stdout)
        open(os.path.join(carry, "tests.list"), "w").write("specs/matrix/fake.kdl libs/matrix/libfake.so\n")
        open(os.path.join(carry, "bench.list"), "w").write("specs/bench/fakebench.kdl libs/bench/libfakebench.so\n")
        env = dict(os.environ, KDL_CONV_DEVICE="cpu", KDL_CONV_FAKE_CC="80")

        def run(script, *args, bug=None):
            e = dict(env)
            if bug:
                e["FAKE_CONV_BUG"] = str(bug)
            p = subprocess.run([sys.executable, script, "--carry", carry, *args], capture_output=True, text=True,
                               env=e, timeout=600)
            return p.returncode, p.stdout + p.stderr

        test = os.path.join(HERE, "test_conv_cudnn.py")
        rc, out = run(test, "--shrink", "4", "--seed", "7")
        last = [l for l in out.splitlines() if " passed, " in l]
        passed = int(last[-1].split()[0]) if last else 0
        check(rc == 0 and passed >= 30 and " 0 failed" in last[-1],
              f"test_conv_cudnn.py passes the correct fake kernels: rc={rc} {last[-1] if last else out[-3000:]}")
        if rc:
            print(out[-6000:])
        for bug, sign in ((1, "NON-FINITE"), (2, "tolerance")):
            rc, out = run(test, "--shrink", "4", "--quick", "--seed", "7", bug=bug)
            check(rc == 1 and sign in out, f"test_conv_cudnn.py fails the fake with FAKE_CONV_BUG={bug} ({sign}): rc={rc}")
        outdir = os.path.join(tmp, "out")
        rc, out = run(os.path.join(ROOT, "bench", "conv_bench.py"), "--out", outdir, "--shrink", "16", "--runs", "2",
                      "--iters", "1", "--warmup", "1", "--sustain", "0.05", "--sustain-arch", "sm80")
        md = os.path.join(outdir, "conv_bench.md")
        table = open(md).read() if os.path.exists(md) else ""
        check(rc == 0 and all(k in table for k in ("fkb_fprop3x3", "fkb_fprop1x1", "fkb_dgrad3x3", "fkb_wgrad3x3_sk4")),
              f"conv_bench.py times every fake bench kernel and writes its table: rc={rc}\n{table or out[-3000:]}")
        check("cuDNN's algorithm per case" in table and ("autotuned" in table or "heuristic" in table),
              f"conv_bench.py names cuDNN's algorithm choice (autotuned or heuristic) per case:\n{table[-1500:]}")
        sm80_rows = [line for line in table.splitlines() if " | sm80 | " in line]
        csv_path = os.path.join(outdir, "conv_bench.csv")
        check("Sustained:" in table and sm80_rows and all(not line.rstrip().endswith("| - |") for line in sm80_rows) and
              os.path.exists(csv_path) and "kdl sustained" in open(csv_path).read(),
              f"conv_bench.py --sustain runs the path's best kernel beside cuDNN back to back and reports it:\n{table[-2500:]}")
        check(os.path.exists(os.path.join(outdir, "conv_bench.csv")) and os.path.exists(os.path.join(outdir, "conv_bench.json")),
              "conv_bench.csv and conv_bench.json written")
        if os.path.exists(csv_path):
            # Every timed candidate ran in each of the default 3 rounds, and the table shows the rounds' range.
            timed = [r for r in csv.DictReader(open(csv_path)) if r["impl"] == "kdl" and r["ms"]]
            check(timed and all(len(r["rounds"].split()) == 3 for r in timed) and
                  all(re.search(r"\| \d+\.\d\d \(\d+\.\d\d-\d+\.\d\d\) \|", line) for line in sm80_rows),
                  "conv_bench.py times each candidate in 3 rounds and prints the rounds' range beside the ratio:\n" +
                  "\n".join(r["kernel"] + " " + r["rounds"] for r in timed[:6]) + "\n" + "\n".join(sm80_rows[:3]))
            # The plot's bars (bench/conv_plot.py, no matplotlib needed for them): each path's best kernel from the
            # paired rows only (a sustained row, whose ratio may be higher, is not a bar), cuDNN alone the anchor.
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            import conv_plot
            rows = list(csv.DictReader(open(csv_path)))
            cases, got = conv_plot.bars(rows)
            bad = []
            for c in cases:
                kdl = [r for r in rows if r["case"] == c and r["impl"] == "kdl" and r["status"] == "ok"]
                for arch in {r["arch"] for r in kdl}:
                    mine = [r for r in kdl if r["arch"] == arch]
                    want = float(max(mine, key=lambda r: (float(r["ratio"] or 0), float(r["tflops"])))["tflops"])
                    if got.get((c, f"KDL {arch}")) != want:
                        bad.append(f"{c} KDL {arch}: bar {got.get((c, f'KDL {arch}'))}, best paired row {want}")
                anchor = [r for r in rows if r["case"] == c and r["impl"] == "cuDNN" and "anchor" in r["status"]]
                if anchor and got.get((c, "cuDNN alone")) != float(anchor[0]["tflops"]):
                    bad.append(f"{c} cuDNN alone: bar {got.get((c, 'cuDNN alone'))}, anchor {anchor[0]['tflops']}")
            check(cases and not bad and "kdl sustained" in open(csv_path).read(),
                  "conv_plot.py's bars are the paired rows' best kernel per path and cuDNN's anchor:\n" + "\n".join(bad))
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
