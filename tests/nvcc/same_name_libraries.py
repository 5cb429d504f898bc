#!/usr/bin/env python3
"""Two libraries built from different specs that share a kernel name can be loaded into one process.

  python3 tests/nvcc/same_name_libraries.py --kdlc build/kdlc --include include

Builds two small sm86 GEMM specs (one target: the fastest to compile) whose kernel is named `twin` (different tiles) with `kdlc build`, and reads
each library's dynamic symbols (nm -D). What the emitted code defines for the kernel lives in an anonymous
namespace (codegen/emit_kernel.cpp), so no symbol keyed on the kernel's own types may be exported by both: a
GNU unique symbol ('u', e.g. a template instance's function-local static such as a launch's one-time per-device
set-up) that both libraries export is bound to one of them process-wide, even with RTLD_LOCAL, and the other
library's kernel then launched without its shared-memory attribute (cudaErrorInvalidValue on the GPU;
docs/perf-notes.md v47). Also checks that both export kdl_twin_run. Exit 1 on a failure.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SPEC = """kernel twin {{
  op = gemm; arch = sm86;
  A : f16 row; B : f16 col; D : f16 row;
  tile = {tile}; stages = 3;
}}
"""


def dynamic_symbols(lib):
    """(type, mangled name) of the library's defined dynamic symbols."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms.append((parts[1], parts[2]))
    return syms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    a = ap.parse_args()
    if shutil.which("nm") is None:
        print("SKIP: nm (binutils) is not installed")
        return 0
    env = dict(os.environ, KDL_INCLUDE_DIR=os.path.abspath(a.include))
    work = tempfile.mkdtemp(prefix="kdl-twin-")
    try:
        libs = []
        for name, tile in (("one", "(128, 128, 32)"), ("two", "(64, 64, 32)")):
            spec = os.path.join(work, name + ".kdl")
            with open(spec, "w") as f:
                f.write(SPEC.format(tile=tile))
            out = os.path.join(work, "out_" + name)
            r = subprocess.run([a.kdlc, "build", spec, "-o", out, "-j", "2"], env=env, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL kdlc build {name}.kdl: {r.stdout[-2000:]}{r.stderr[-2000:]}")
                return 1
            libs.append(os.path.join(out, f"lib{name}.so"))
        syms = [dynamic_symbols(lib) for lib in libs]
        failed = 0
        for lib, s in zip(libs, syms):
            if ("T", "kdl_twin_run") not in s:
                print(f"FAIL {os.path.basename(lib)} does not export kdl_twin_run")
                failed += 1
        unique = [{n for t, n in s if t == "u" and "4twin" in n} for s in syms]
        shared = sorted(unique[0] & unique[1])
        for n in shared:
            print(f"FAIL both libraries export the unique symbol {n}")
        failed += len(shared)
        print(f"{'PASS' if not failed else 'FAIL'}: two libraries with a kernel `twin`: "
              f"{len(unique[0])} and {len(unique[1])} unique symbols of the kernel, {len(shared)} shared")
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
