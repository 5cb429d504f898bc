#!/usr/bin/env python3
"""Shared memory, checked against the templates themselves. Every configuration of
tests/smem/sm80_configs.kdl that `kdlc check` accepts for one arch (all dtypes, layouts, tiles,
alignments and stages of the sm80 path) is emitted, and one .cu static_asserts for each kernel that
the template its .cu instantiates (its `using Gemm = ...;` line) launches with exactly manifest.json's
`smem_bytes`, that kdl::GemmSm80's launch (all GemmSm80Tma runs off Hopper) is `smem_bytes_without_tma`
where the manifest gives it, and that kdl/gemm_sm80_smem.h's figures are the template's own layout
(kMainloopSmem, kEpiSmem). nvcc compiles that file; a disagreement is a static_assert naming the kernel.
Usage: smem_agreement.py --kdlc KDLC --include INCLUDE_DIR --configs tests/smem/sm80_configs.kdl [--arch sm90a]
Exit 1 on any disagreement or failure; prints SKIP and exits 0 only when nvcc is absent."""
import argparse, json, os, re, shutil, subprocess, sys, tempfile, time

NAME = re.compile(r"^g_(sm\w+?)_(\w+?)_(row|col)_(row|col)_(\d+)x(\d+)x(\d+)_a(\d+)_s(auto|\d)$")


def find_nvcc():
    for c in [os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def accepted_kernels(kdlc, spec):
    """The names of the kernels `kdlc check` accepts (the spec has deliberate misfits): those it validates
    (--emit=specs) less those lowering refuses ([unsupported]: e.g. tiles whose registers ptxas would spill)."""
    r = subprocess.run([kdlc, "check", "--max-errors=100000", "--emit=specs", "--color=never", spec],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"kdlc check failed ({r.returncode}):\n{r.stderr[-4000:]}")
    refused = set(re.findall(r"error: kernel `([^`]+)`", r.stderr))
    return [l.split()[1] for l in r.stdout.splitlines() if l.startswith("kernel ") and l.split()[1] not in refused]


def flat_kernel(name):
    """The kernel `name` as a standalone definition (its name says its whole configuration)."""
    m = NAME.match(name)
    if not m:
        raise RuntimeError(f"unexpected kernel name {name}")
    arch, dt, la, lb, tm, tn, tk, al, st = m.groups()
    return (f"kernel {name} {{ op = gemm; arch = {arch}; schedule = multistage; A : {dt} {la} align {al}; "
            f"B : {dt} {lb} align {al}; D : f32 row; tile = ({tm}, {tn}, {tk}); stages = {st}; }}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--arch", default="sm90a", help="the arch whose configurations are compiled (sm90a has the "
                    "most shared memory, so its stage counts include every other arch's)")
    ap.add_argument("--keep", help="keep the generated files in this directory")
    a = ap.parse_args()
    nvcc = find_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found ($KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc)")
        return 0
    text, n = re.subn(r"^for ar in \[[^\]]*\]", f"for ar in [{a.arch}]", open(a.configs).read(), flags=re.M)
    if n != 1:
        print(f"error: {a.configs} has no `for ar in [...]` line to restrict to {a.arch}")
        return 1
    tmp = a.keep or tempfile.mkdtemp(prefix="kdl-smem-")
    os.makedirs(tmp, exist_ok=True)
    try:
        spec = os.path.join(tmp, "configs.kdl")
        open(spec, "w").write(text)
        names = accepted_kernels(a.kdlc, spec)
        if len(names) < 1000:
            print(f"error: only {len(names)} configurations accepted; expected thousands")
            return 1
        flat = os.path.join(tmp, "accepted.kdl")
        open(flat, "w").write("".join(flat_kernel(n) for n in names))
        out = os.path.join(tmp, "out")
        r = subprocess.run([a.kdlc, "emit", "--color=never", flat, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"error: kdlc emit of the accepted configurations failed:\n{r.stderr[-4000:]}")
            return 1
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        checks = ["#include <kdl/gemm_sm80_tma.cuh>",
                  "struct E { struct Params {}; };",
                  "template <class G> constexpr bool same_layout() {",
                  "  // kdl/gemm_sm80_smem.h's figures are this template's own layout",
                  "  return G::kSmemBytes == (G::kMainloopSmem > G::kEpiSmem ? G::kMainloopSmem : G::kEpiSmem);",
                  "}"]
        for k in manifest["kernels"]:
            cu = open(os.path.join(out, k["files"]["source"])).read()
            m = re.search(r"^\s*using Gemm = ((?:::)?kdl::GemmSm80(Tma)?<.*), Epilogue>;$", cu, re.M)
            if not m:
                print(f"error: {k['name']}: no `using Gemm = ...;` line in its .cu")
                return 1
            inst, tma = m.group(1) + ", E>", m.group(2) is not None
            if (k["path"] == "gemm_sm80_tma") != tma:
                print(f"error: {k['name']}: manifest path {k['path']} but the .cu instantiates {m.group(1)[:20]}...")
                return 1
            base = inst.replace("kdl::GemmSm80Tma<", "kdl::GemmSm80<")  # also matches ::kdl::
            checks.append(f'static_assert({inst}::kSmemBytes == {k["parameters"]["smem_bytes"]}, '
                          f'"{k["name"]}: manifest smem_bytes is not the launch");')
            checks.append(f'static_assert(same_layout<{base}>(), "{k["name"]}: header and template layout differ");')
            if "smem_bytes_without_tma" in k["parameters"]:
                checks.append(f'static_assert({base}::kSmemBytes == {k["parameters"]["smem_bytes_without_tma"]}, '
                              f'"{k["name"]}: manifest smem_bytes_without_tma is not GemmSm80\'s launch");')
            elif tma:
                print(f"error: {k['name']}: instantiates GemmSm80Tma but the manifest has no smem_bytes_without_tma")
                return 1
        src = os.path.join(tmp, "smem_agreement.cu")
        open(src, "w").write("\n".join(checks) + "\n")
        t0 = time.time()
        r = subprocess.run([nvcc, "-std=c++17", "-arch=sm_80", "-I" + a.include, "-c", src, "-o", src + ".o"],
                           capture_output=True, text=True)
        print(f"{len(manifest['kernels'])} kernels of {a.arch}: {len(checks) - 6} static_asserts, nvcc {time.time() - t0:.1f} s")
        if r.returncode != 0:
            errors = [l for l in r.stderr.splitlines() if "error" in l]
            print(f"FAIL: {len(errors)} errors; the first ones:\n" + "\n".join(errors[:20]))
            return 1
        print("PASS: every launch asks for the manifest's smem_bytes")
        return 0
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
