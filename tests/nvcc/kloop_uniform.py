#!/usr/bin/env python3
"""The sm90a consumers' k-loop runs its descriptor and stage arithmetic in uniform registers; every sm90a kernel
waits for the previous grid and leaves the next dependent launch to its exit.

ptxas keeps values it cannot prove warp-uniform in vector registers and copies them into uniform ones
(R2UR) before every wgmma; GemmSm90 broadcasts the warpgroup and warp indices from lane 0 so that it can
(docs/perf-notes.md v19: a pingpong 128x128 k-loop went from 78 instructions with 32 R2UR to 46 with none,
worth 1-6 % on the H100). Nothing else shows a regression there short of a GPU benchmark, so this test
reads the SASS: it emits every kernel of the spec with `kdlc emit`, compiles each to an sm_90a cubin with
the real nvcc, disassembles it with nvdisasm and finds the k-loop of its first GemmSm90 kernel function (from the full barrier's try_wait
before the first HGMMA to the wgmma wait after the last HGMMA of that run). The loop must hold HGMMAs and
no R2UR, except in the kernels named by --known-r2ur (known exceptions: they must still have R2UR, so that a
fixed one is taken off the list). Prints each loop's instruction count.
The same SASS also shows the programmatic dependent launch (docs/language.md section 8): every kernel function must
hold griddepcontrol.wait (ACQBULK: without it a kernel launched under the previous one's tail reads its inputs
before they are written) and no griddepcontrol.launch_dependents (PREEXIT: every explicit trigger measured slower on
the pingpong kernels, 0.4-17 % at the set-up and 1-10 % after the last load; docs/perf-notes.md v55, v56).
Usage: kloop_uniform.py --kdlc KDLC --include INCLUDE_DIR --spec SPEC [--venv VENV] [-j N] [--known-r2ur NAME...]
nvdisasm: $KDL_NVDISASM, PATH, the CUDA toolkit, or the nvidia-cuda-nvdisasm wheel in VENV (scripts/setup.sh
installs it). Exits 77 with "SKIP: ..." when nvcc or nvdisasm is missing.
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_emitted import find_nvcc  # noqa: E402


def find_nvdisasm(venv):
    wheel = sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "nvidia", "cu*", "bin", "nvdisasm"))) if venv else []
    for c in (os.environ.get("KDL_NVDISASM"), shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm", *wheel):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def opcodes(sass):
    """(opcode, text) of every instruction, predicates stripped."""
    out = []
    for line in sass.splitlines():
        m = INSTR.match(line)
        if not m:
            continue
        text = m.group(1)
        if text.startswith("@"):
            text = text.split(None, 1)[1] if " " in text else ""
        if text:
            out.append((text.split()[0], text))
    return out


def kloop(ops):
    """The first run of HGMMAs with the try_wait before it and the wgmma wait after it, or an error."""
    hg = [i for i, (op, _) in enumerate(ops) if op.startswith("HGMMA")]
    if not hg:
        return None, "no HGMMA in the kernel"
    last = hg[0]
    for i in hg[1:]:  # the first run: HGMMAs a few dozen instructions apart at most
        if i - last > 48:
            break
        last = i
    waits = [i for i in range(hg[0]) if ops[i][0].startswith("SYNCS.PHASECHK")]
    if not waits:
        return None, "no try_wait (SYNCS.PHASECHK) before the first HGMMA"
    ends = [i for i in range(last, len(ops)) if ops[i][0].startswith("WARPGROUP.DEPBAR")]
    if not ends:
        return None, "no wgmma wait (WARPGROUP.DEPBAR) after the HGMMAs"
    return ops[waits[-1]:ends[0] + 1], None


SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")


def functions(sass):
    """{kernel function: its SASS} from nvdisasm -c's .text sections."""
    funcs, cur = {}, None
    for line in sass.splitlines():
        m = SECTION.match(line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
        elif cur is not None:
            funcs[cur].append(line)
    return {f: "\n".join(lines) for f, lines in funcs.items()}


def launch_problems(sass):
    """What is wrong with each kernel function's dependent-launch instructions (empty: nothing), and the count."""
    funcs = {f: collections.Counter(op for op, _ in opcodes(body)) for f, body in functions(sass).items()}
    problems = []
    for f, c in funcs.items():
        if c["ACQBULK"] == 0:
            problems.append("%s: no griddepcontrol.wait (ACQBULK)" % f[-70:])
        if c["PREEXIT"]:
            problems.append("%s: %d griddepcontrol.launch_dependents (PREEXIT)" % (f[-70:], c["PREEXIT"]))
    if not funcs:
        problems.append("no kernel function found in the SASS")
    return problems, len(funcs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--venv", default="")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--known-r2ur", nargs="*", default=[])
    a = ap.parse_args()
    nvcc = find_nvcc()
    nvdisasm = find_nvdisasm(a.venv)
    if not nvcc:
        print("SKIP: no nvcc (set KDL_NVCC or CUDACXX, or put it on PATH)")
        return SKIP
    if not nvdisasm:
        print("SKIP: no nvdisasm (scripts/setup.sh installs the nvidia-cuda-nvdisasm wheel into .venv)")
        return SKIP
    r = subprocess.run([a.kdlc, "list", "--json", a.spec], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: kdlc list:\n" + r.stderr)
        return 1
    names = [k["name"] for k in json.loads(r.stdout)["kernels"]]
    if not names:
        print("FAIL: the spec has no kernels")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([a.kdlc, "emit", a.spec, "-o", tmp, "--color=never"], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: kdlc emit:\n" + r.stderr)
            return 1

        def one(name):
            cubin = os.path.join(tmp, name + ".cubin")
            c = subprocess.run([nvcc, "-cubin", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
                                "-I" + a.include, "-I" + tmp, "-o", cubin, os.path.join(tmp, name + ".cu")],
                               capture_output=True, text=True)
            if c.returncode != 0:
                return name, None, "nvcc failed:\n" + c.stderr[-2000:]
            d = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True)
            if d.returncode != 0:
                return name, None, "nvdisasm failed:\n" + d.stderr[-2000:]
            return name, d.stdout, None

        failures = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j)) as pool:
            for name, sass, err in pool.map(one, names):
                if err:
                    print("FAIL %s: %s" % (name, err))
                    failures += 1
                    continue
                problems, nfuncs = launch_problems(sass)
                if problems:
                    for p in problems:
                        print("FAIL %s: dependent launch: %s" % (name, p))
                    failures += 1
                    continue
                # GemmSm90's k-loop: the first of its kernel functions (a conv kernel's patch GEMM before its im2col
                # one). The swapped conv mainloop's kernel (kdl::sm90::ConvFpropSwap) is left out: its consumer copies
                # its descriptors with R2UR, the form that measured fastest for it (docs/perf-notes.md v60-v61).
                gemm = [body for f, body in functions(sass).items() if "gemm_sm90_kernel" in f]
                loop, why = kloop(opcodes(gemm[0] if gemm else sass))
                if loop is None:
                    print("FAIL %s: k-loop not found: %s" % (name, why))
                    failures += 1
                    continue
                count = collections.Counter(op.split(".")[0] for op, _ in loop)
                line = "%s: k-loop %d instructions, %d HGMMA, %d R2UR; %d kernel(s) wait, none triggers" % (
                    name, len(loop), count["HGMMA"], count["R2UR"], nfuncs)
                if name in a.known_r2ur:
                    if count["R2UR"]:
                        print("XFAIL " + line + " (a known exception)")
                    else:
                        print("FAIL " + line + ": now in uniform registers; take it off --known-r2ur")
                        failures += 1
                elif count["R2UR"]:
                    print("FAIL " + line + " (descriptor or stage arithmetic in vector registers)")
                    failures += 1
                else:
                    print("PASS " + line)
    unknown = [n for n in a.known_r2ur if n not in names]
    for n in unknown:
        print("FAIL --known-r2ur %s: no such kernel in the spec" % n)
    failures += len(unknown)
    print("%d kernels, %d failed" % (len(names), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
