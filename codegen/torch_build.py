#!/usr/bin/env python3
# kdlc writes this file as <stem>_torch_build.py beside a PyTorch extension (`kdlc emit --torch`),
# with the block below filled in; the rest is this template as it is (codegen/torch_build.py).
#@KDL_EMITTED@
"""Builds the PyTorch extension beside this script into <stem>_torch.so (docs/torch.md):

  python <stem>_torch_build.py [--kdl-include DIR] [--nvcc PATH] [--jobs N] [--kernels-lib LIB]
                               [--out FILE] [--verbose]

1. every kernel's NAME.cu with nvcc and the kernel's own -gencode flags (-std=c++17 -O3 -Xcompiler
   -fPIC, then the words of $KDL_NVCC_FLAGS), unless --kernels-lib names the static library
   `kdlc build` made of them (lib<stem>.a);
2. <stem>_torch.cpp with the host C++ compiler ($CXX, else c++) against PyTorch's headers and ABI
   (-std=c++17, or -std=c++20 for PyTorch 2.12 and newer, whose headers need it; then $CXXFLAGS);
3. a shared library linked with PyTorch's libraries and CUDA's runtime (never -lcuda: the kernels
   find the driver through the runtime).
Compiles run in parallel in a temporary directory; the library is written under a temporary name and
renamed into place. Needs only this directory, the kdl include directory (--kdl-include, else
$KDL_INCLUDE_DIR; `kdlc --include-dir` prints it), a CUDA toolkit (--nvcc, else $KDL_NVCC, $CUDACXX,
nvcc on PATH, /usr/local/cuda/bin/nvcc; with --kernels-lib only its headers and runtime, also found
through $CUDA_HOME) and PyTorch. Exit 0 on success; 1 with the failing command and the compiler's
output on stderr; 2 for a bad command line.

Load the result with torch.ops.load_library(path); the ops are torch.ops.<namespace>.<kernel>.
"""
import argparse
import concurrent.futures
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildError(Exception):
    pass


def fail(message):
    raise BuildError(message)


def find_kdl_include(option):
    path = option or os.environ.get("KDL_INCLUDE_DIR", "")
    if not path:
        fail("no kdl include directory: pass --kdl-include DIR or set $KDL_INCLUDE_DIR "
             "(`kdlc --include-dir` prints the one kdlc uses)")
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "kdl", "torch_ops.h")):
        fail(f"{path} is not a kdl include directory (it has no kdl/torch_ops.h)")
    return path


def find_nvcc(option):
    """nvcc's path, or None (tried: the option, $KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc)."""
    candidates = [option] if option else [os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), "nvcc",
                                          "/usr/local/cuda/bin/nvcc"]
    for c in candidates:
        path = shutil.which(c) if c else None
        if path:
            return os.path.abspath(path)
        if option:
            fail(f"--nvcc {option}: not an executable")
    return None


def find_cuda(nvcc):
    """CUDA's include and library directories: beside nvcc (<nvcc dir>/../include), else $CUDA_HOME."""
    roots = []
    if nvcc:
        roots += [os.path.dirname(os.path.dirname(nvcc)), os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))]
    if os.environ.get("CUDA_HOME"):
        roots.append(os.environ["CUDA_HOME"])
    for root in roots:
        include = os.path.join(root, "include")
        if os.path.isfile(os.path.join(include, "cuda_runtime_api.h")):
            libs = [os.path.join(root, d) for d in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"))]
            lib = next((d for d in libs if any(n.startswith("libcudart.so") for n in listdir(d))), None)
            return include, lib
    fail("cannot find CUDA's headers (cuda_runtime_api.h) " +
         (f"beside {nvcc} (<nvcc dir>/../include)" if nvcc else "(no nvcc found)") +
         "; pass --nvcc PATH or set $CUDA_HOME")


def listdir(d):
    try:
        return os.listdir(d)
    except OSError:
        return []


def torch_setup():
    """PyTorch's include and library directories, its C++ ABI and the C++ standard its headers need."""
    import logging
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found": no GPU here
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        fail(f"cannot import torch with {sys.executable}: {e}")
    # With no argument, both spellings (include_paths(cuda=False) before 2.6, include_paths(device_type="cpu")
    # since) give PyTorch's own directories; CUDA's come from find_cuda.
    includes = cpp_extension.include_paths()
    libs = cpp_extension.library_paths()
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    version = tuple(int(p) if p.isdigit() else 0 for p in torch.__version__.split("+")[0].split(".")[:2])
    std = "-std=c++20" if version >= (2, 12) else "-std=c++17"
    return includes, libs, abi, std


def run_step(what, argv, verbose):
    """Runs one compile or link; its output on failure (with the command)."""
    if verbose:
        print(" ".join(shlex.quote(a) for a in argv), flush=True)
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        fail(f"{what} failed: cannot run {argv[0]}: {e}\n{' '.join(shlex.quote(a) for a in argv)}")
    if r.returncode != 0:
        fail(f"{what} failed (exit {r.returncode}):\n{' '.join(shlex.quote(a) for a in argv)}\n{r.stdout.rstrip()}")
    if r.stdout.strip() and verbose:
        print(r.stdout.rstrip(), flush=True)
    return time.monotonic() - t0


def build(args):
    kdl_include = find_kdl_include(args.kdl_include)
    kernels_lib = os.path.abspath(args.kernels_lib) if args.kernels_lib else None
    if kernels_lib and not os.path.isfile(kernels_lib):
        fail(f"--kernels-lib {args.kernels_lib}: no such file")
    nvcc = find_nvcc(args.nvcc)
    if not nvcc and not args.kernels_lib:
        fail("cannot find nvcc (tried $KDL_NVCC, $CUDACXX, nvcc on PATH, /usr/local/cuda/bin/nvcc); pass --nvcc PATH")
    cuda_include, cuda_lib = find_cuda(nvcc)
    torch_includes, torch_libs, abi, std = torch_setup()
    out = os.path.abspath(args.out or os.path.join(HERE, LIBRARY))
    cxx = shlex.split(os.environ.get("CXX", "")) or ["c++"]

    with tempfile.TemporaryDirectory(prefix="kdl-torch-build-") as tmp:
        steps = []  # (what, argv)
        objects = []
        if not kernels_lib:
            nvcc_flags = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC"]
            extra = shlex.split(os.environ.get("KDL_NVCC_FLAGS", ""))
            for name, gencode in KERNELS:
                obj = os.path.join(tmp, name + ".o")
                steps.append((f"nvcc {name}.cu", [nvcc, *nvcc_flags, *gencode, *extra, "-I" + kdl_include, "-I" + HERE,
                                                  "-c", os.path.join(HERE, name + ".cu"), "-o", obj]))
                objects.append(obj)
        binding = os.path.join(tmp, STEM + "_torch.o")
        steps.append((f"{os.path.basename(cxx[0])} {SOURCE}",
                      [*cxx, std, "-O2", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                       *["-I" + d for d in torch_includes], "-I" + cuda_include, "-I" + kdl_include, "-I" + HERE,
                       *shlex.split(os.environ.get("CXXFLAGS", "")), "-c", os.path.join(HERE, SOURCE), "-o", binding]))
        total = len(steps) + 1
        done = 0
        jobs = max(1, args.jobs or os.cpu_count() or 1)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(run_step, what, argv, args.verbose): what for what, argv in steps}
            try:
                for f in concurrent.futures.as_completed(futures):
                    seconds = f.result()
                    done += 1
                    print(f"[{done}/{total}] {futures[f]} ({seconds:.1f} s)", flush=True)
            except BaseException:
                for other in futures:
                    other.cancel()
                raise

        tmp_out = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.{os.getpid()}.tmp")
        link = [*cxx, "-shared", "-o", tmp_out, binding, *objects]
        if kernels_lib:
            link.append(kernels_lib)
        for d in torch_libs:
            link += ["-L" + d, "-Wl,-rpath," + d]
        link += ["-lc10", "-ltorch", "-ltorch_cpu", "-lc10_cuda", "-ltorch_cuda"]
        if cuda_lib:
            link += ["-L" + cuda_lib, "-Wl,-rpath," + cuda_lib]
        link.append("-lcudart")
        try:
            seconds = run_step(f"link {os.path.basename(out)}", link, args.verbose)
            os.replace(tmp_out, out)
        finally:
            if os.path.exists(tmp_out):
                os.unlink(tmp_out)
        print(f"[{total}/{total}] link {os.path.basename(out)} ({seconds:.1f} s)", flush=True)
    print(f"built {out} (torch.ops.{NAMESPACE}: {', '.join(name for name, _ in KERNELS)})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=f"Builds {LIBRARY}, the PyTorch extension of {SPEC} (torch.ops.{NAMESPACE}).")
    ap.add_argument("--kdl-include", help="the kdl include directory (default: $KDL_INCLUDE_DIR)")
    ap.add_argument("--nvcc", help="the CUDA compiler (default: $KDL_NVCC, $CUDACXX, nvcc on PATH, /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--jobs", type=int, default=0, help="parallel compiles (default: the number of CPUs)")
    ap.add_argument("--kernels-lib", help=f"the kernels, already compiled: lib{STEM}.a of `kdlc build`")
    ap.add_argument("--out", help=f"the library to write (default: {LIBRARY} beside this script)")
    ap.add_argument("--verbose", action="store_true", help="print every command and the compilers' output")
    args = ap.parse_args()
    try:
        build(args)
    except BuildError as e:
        print(f"{os.path.basename(__file__)}: error: {e}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print(f"{os.path.basename(__file__)}: interrupted", file=sys.stderr, flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
