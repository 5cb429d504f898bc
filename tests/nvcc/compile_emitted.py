#!/usr/bin/env python3
"""Emits every kernel of the given specs that this version generates, then compiles each .cu with
nvcc for its own arch (the gencode flags of manifest.json, or --gencode for all), reporting the time
per nvcc run. Kernels `kdlc emit` refuses as [unsupported] are skipped, unless --require-all (then they
fail); --expect N fails unless exactly N kernels were compiled; --support-specs adds the spec of
`kdlc support --specs` (one sm90a kernel per line of the table that is on); --assert-smem compiles each
convolution (manifest path conv_sm80) through a wrapper that static_asserts that its template's launch
(Kernel::Conv::kSmemBytes) is manifest.json's smem_bytes. Skips (exit 0 with a message) only when nvcc
is absent.

Kernels are compiled --batch at a time (default 6) in one translation unit that includes their .cu files
(a unity build: the headers are parsed and the host code compiled once per batch, which more than halves
the time). In a batch, each kernel's sources include every header the kernels before it include, so no
kernel compiles thanks to a header only a neighbour includes; and a batch holds distinct kernel names. A
batch that fails is compiled again one kernel at a time, and the kernels that fail alone are named; if each compiles alone,
the batch's failure is reported as such (emitted kernels must also build together, e.g. under CMake's
UNITY_BUILD). --batch 1 compiles every kernel alone."""
import argparse, functools, json, os, re, shutil, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor


def find_nvcc():
    for c in [os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


@functools.lru_cache(maxsize=None)
def header_set(cu):
    """The system headers (<...>) a kernel's .cu includes, directly or through its own "NAME.h"."""
    seen, todo, found = set(), [cu], set()
    while todo:
        path = todo.pop()
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        for kind, name in INCLUDE.findall(open(path).read()):
            if kind == "<":
                found.add(name)
            else:
                todo.append(os.path.join(os.path.dirname(path), name))
    return frozenset(found)


def batches(jobs, size):
    """Groups of jobs (label, source, gencode, name, cu) that may share a translation unit: the same
    gencode, distinct kernel names, at most `size` each, and each kernel's headers include every header
    of the kernels before it (so none compiles thanks to a header only a neighbour includes)."""
    order = sorted(jobs, key=lambda j: (tuple(j[2]), len(header_set(j[4])), sorted(header_set(j[4]))))
    out = []  # [gencode, headers of the last member, members]
    for job in order:
        headers = header_set(job[4])
        home = next((b for b in out if b[0] == tuple(job[2]) and b[1] <= headers and len(b[2]) < size
                     and all(j[3] != job[3] for j in b[2])), None)
        if home is None:
            home = [tuple(job[2]), headers, []]
            out.append(home)
        home[1] = headers
        home[2].append(job)
    return [b[2] for b in out]


def smem_wrapper(out, k):
    """A .cu that compiles the kernel's source and asserts its template's launch bytes."""
    name, smem = k["name"], k["parameters"]["smem_bytes"]
    path = os.path.join(out, name + "_smem_check.cu")
    with open(path, "w") as f:
        f.write(f'#include "{k["files"]["source"]}"\n'
                f"static_assert(::kdl_kernels::{name}::detail::Kernel::Conv::kSmemBytes == {smem},\n"
                f'              "{name}: manifest.json smem_bytes ({smem}) is not the template\'s launch");\n')
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--specs", nargs="*", default=[], help="spec files or directories")
    ap.add_argument("--exclude", nargs="*", default=[], help="spec file names (basename) a directory's listing skips")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=6, help="kernels per nvcc run (one translation unit); 1: each alone")
    ap.add_argument("--gencode", help="one nvcc -gencode flag for every kernel instead of its own (a faster check)")
    ap.add_argument("--require-all", action="store_true", help="a kernel kdlc refuses as [unsupported] fails the test")
    ap.add_argument("--expect", type=int, help="the number of kernels that must be compiled")
    ap.add_argument("--support-specs", action="store_true", help="also the spec of `kdlc support --specs`")
    ap.add_argument("--assert-smem", action="store_true",
                    help="conv kernels: static_assert Kernel::Conv::kSmemBytes == the manifest's smem_bytes")
    a = ap.parse_args()
    nvcc = find_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found ($KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc); emitted code not compiled")
        return 0
    specs = []
    for s in a.specs:
        if os.path.isdir(s):
            specs += sorted(os.path.join(s, f) for f in os.listdir(s) if f.endswith(".kdl") and f not in a.exclude)
        elif os.path.isfile(s):
            specs.append(s)
    tmp = tempfile.mkdtemp(prefix="kdl-nvcc-")
    jobs, failures = [], []
    try:
        if a.support_specs:
            table = subprocess.run([a.kdlc, "support", "--specs"], capture_output=True, text=True)
            if table.returncode != 0:
                failures.append(f"kdlc support --specs failed:\n{table.stderr}")
            path = os.path.join(tmp, "sm90_table.kdl")
            with open(path, "w") as f:
                f.write(table.stdout)
            print(table.stdout)
            specs.append(path)
        for spec in specs:
            stem = os.path.splitext(os.path.basename(spec))[0]
            listed = subprocess.run([a.kdlc, "list", "--json", spec], capture_output=True, text=True)
            if listed.returncode != 0:
                failures.append(f"{spec}: kdlc list failed:\n{listed.stderr}")
                continue
            names = [k["name"] for k in json.loads(listed.stdout)["kernels"]]
            for name in names:
                out = os.path.join(tmp, stem, name)
                r = subprocess.run([a.kdlc, "emit", spec, "--kernel", name, "-o", out, "--color=never"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    if "[unsupported]" in r.stderr and not a.require_all:
                        print(f"skip {stem}/{name}: not generated by this version ({r.stderr.splitlines()[0].split(': error: ')[-1]})")
                        continue
                    failures.append(f"{spec} {name}: kdlc emit failed:\n{r.stderr}")
                    continue
                manifest = json.load(open(os.path.join(out, "manifest.json")))
                for k in manifest["kernels"]:
                    gencode = [a.gencode] if a.gencode else k["gencode"]
                    cu = os.path.join(out, k["files"]["source"])
                    source = cu
                    if a.assert_smem and k["path"] == "conv_sm80":
                        source = smem_wrapper(out, k)
                    jobs.append((f"{stem}/{k['name']}", source, gencode, k["name"], cu))

        def nvcc_run(src, gencode):
            cmd = [nvcc, "-std=c++17", "-O3", *gencode, "-I" + a.include, "-c", src, "-o", src + ".o"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            return r.returncode, " ".join(cmd) + "\n" + r.stdout + r.stderr

        groups = batches(jobs, max(1, a.batch))

        def compile_batch(index_group):
            index, group = index_group
            t0 = time.time()
            if len(group) == 1:
                src = group[0][1]
            else:
                src = os.path.join(tmp, f"batch{index}.cu")
                with open(src, "w") as f:
                    f.write("// compile_emitted.py: one translation unit for these kernels\n")
                    f.writelines(f'#include "{j[1]}"\n' for j in group)
            rc, log = nvcc_run(src, list(group[0][2]))
            failed = []
            if rc != 0:
                alone = [(j, *nvcc_run(j[1], list(j[2]))) for j in group] if len(group) > 1 else [(group[0], rc, log)]
                failed = [(j[0], jlog) for j, jrc, jlog in alone if jrc != 0]
                if not failed:
                    failed = [(" + ".join(j[0] for j in group) + " (each compiles alone; together they do not)", log)]
            return [j[0] for j in group], time.time() - t0, failed

        total = time.time()
        done = 0
        with ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
            for labels, secs, failed in ex.map(compile_batch, enumerate(groups)):
                done += len(labels)
                state = "FAILED" if failed else "ok"
                print(f"[{done}/{len(jobs)}] nvcc {', '.join(labels)} {state} ({secs:.1f} s)", flush=True)
                failures += [f"{label}: nvcc failed:\n{log}" for label, log in failed]
        print(f"{len(jobs)} kernels compiled in {len(groups)} nvcc runs, {time.time() - total:.1f} s wall")
        if a.expect is not None and len(jobs) != a.expect:
            failures.append(f"{len(jobs)} kernels emitted and compiled, expected {a.expect}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures or not jobs else 0


if __name__ == "__main__":
    sys.exit(main())
