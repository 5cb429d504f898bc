#!/usr/bin/env python3
"""Tests of the PyTorch extension `kdlc emit --torch` writes, with a Python that has torch (issue 9):
  torch_ext.py --kdlc build/kdlc --python .venv/bin/python --case ops|build|conv
  ops    the extension of tests/golden/torch/ops.kdl, its kernels replaced by stubs (host C++ only, so
         every kernel, sm90a ones included, costs no nvcc): built by the emitted build script from
         another directory with --kernels-lib; then torch_check.py checks every op's schema, its meta
         and FakeTensorMode calls and its error messages; and a host compile error is reported with
         the command and the compiler's output
  build  real nvcc: `kdlc build --torch` of the spec's small sm80 kernel t_bias_relu, then the emitted
         build script alone (only the emitted directory, the include directory and PyTorch; nvcc from
         $KDL_NVCC) run from another directory; both libraries load, have the op, and never link libcuda
  conv   the extension of tests/golden/torch/conv_ops.kdl (convolution ops) against stub kernels; then
         torch_conv_check.py checks every op's schema, its meta and FakeTensorMode calls (channels_last and
         NCHW inputs, channels_last outputs) and its error messages
Prints SKIP: (exit 0) when the Python is missing or has no torch ($KDL_TORCH_PYTHON or the CMake cache
variable KDL_TORCH_PYTHON name it; scripts/setup.sh makes .venv), or when there is no CUDA toolkit."""
import argparse, json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SPEC = os.path.join(SOURCE, "tests", "golden", "torch", "ops.kdl")
CONV_SPEC = os.path.join(SOURCE, "tests", "golden", "torch", "conv_ops.kdl")
INCLUDE = os.path.join(SOURCE, "include")


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, what, detail=""):
    if not cond:
        raise Failure(what + (("\n" + detail) if detail else ""))


def run(argv, what, env=None, cwd=None, ok=True, timeout=900):
    r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if ok:
        check(r.returncode == 0, f"{what}: exit {r.returncode}\n{' '.join(argv)}", (r.stdout + r.stderr)[-20000:])
    return r


def find_nvcc():
    for c in (os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise Skip("SKIP: no nvcc (no CUDA toolkit: the extension needs its headers and runtime)")


def find_python(option):
    py = os.environ.get("KDL_TORCH_PYTHON") or option
    if not py or not os.access(py, os.X_OK):
        raise Skip(f"SKIP: no Python with torch at {py} (scripts/setup.sh creates .venv; or set KDL_TORCH_PYTHON)")
    r = subprocess.run([py, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip(f"SKIP: {py} cannot import torch (scripts/setup.sh installs it into .venv)")
    return py, r.stdout.strip()


def spec_json(kdlc, tmp):
    path = os.path.join(tmp, "list.json")
    with open(path, "w") as f:
        f.write(run([kdlc, "list", "--json", SPEC], "kdlc list --json").stdout)
    return path


def needed_libraries(so):
    r = run(["readelf", "-d", so], "readelf -d")
    return [l.split("[")[1].split("]")[0] for l in r.stdout.splitlines() if "(NEEDED)" in l]


STUB = """#include "{name}.h"
namespace kdl_kernels::{name} {{
const char* can_implement(const Arguments&) {{ return "a stub of {name} (tests/build/torch_ext.py)"; }}
::size_t workspace_size(const Arguments&) {{ return 0; }}
::cudaError_t run(const Arguments&, void*, ::cudaStream_t) {{ return cudaErrorNotSupported; }}
}}
"""


def emit_with_stubs(kdlc, nvcc, spec, tmp):
    """`kdlc emit --torch` of `spec` into tmp/ext, and a library of stub kernels for it (host C++ only): (ext, lib)."""
    cuda_include = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include")
    ext = os.path.join(tmp, "ext")
    run([kdlc, "emit", "--torch", spec, "-o", ext], "kdlc emit --torch")
    with open(os.path.join(ext, "manifest.json")) as f:
        manifest = json.load(f)
    stubs = os.path.join(tmp, "stubs.cpp")
    with open(stubs, "w") as f:
        f.write("".join(STUB.format(name=k["name"]) for k in manifest["kernels"]))
    cxx = os.environ.get("CXX", "c++")
    run([cxx, "-std=c++17", "-fPIC", "-I" + ext, "-I" + cuda_include, "-c", stubs, "-o", stubs + ".o"], "the stubs")
    lib = os.path.join(tmp, "libstubs.a")
    run(["ar", "rcs", lib, stubs + ".o"], "ar")
    return ext, lib


def case_ops(kdlc, py, tmp):
    nvcc = find_nvcc()
    print(f"torch {py[1]} ({py[0]}), {nvcc}")
    py = py[0]
    ext, lib = emit_with_stubs(kdlc, nvcc, SPEC, tmp)
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere)
    script = os.path.join(ext, "ops_torch_build.py")

    # a host compile error: exit 1, the command and the compiler's words
    env = dict(os.environ, CXXFLAGS="-include kdl_no_such_header.h")
    r = run([py, script, "--kdl-include", INCLUDE, "--nvcc", nvcc, "--kernels-lib", lib, "--jobs", "2"], "broken",
            env=env, cwd=elsewhere, ok=False)
    check(r.returncode == 1 and "ops_torch_build.py: error: " in r.stderr and "ops_torch.cpp failed (exit" in r.stderr
          and "-include kdl_no_such_header.h" in r.stderr and "kdl_no_such_header.h: No such file" in r.stderr
          and not os.path.exists(os.path.join(ext, "ops_torch.so")),
          f"a failing host compile: exit {r.returncode}", r.stdout + r.stderr)

    env = dict(os.environ, CXX="kdl-no-such-compiler")
    r = run([py, script, "--kdl-include", INCLUDE, "--nvcc", nvcc, "--kernels-lib", lib], "no compiler", env=env,
            cwd=elsewhere, ok=False)
    check(r.returncode == 1 and "failed: cannot run kdl-no-such-compiler" in r.stderr,
          f"$CXX that does not exist: exit {r.returncode}", r.stdout + r.stderr)

    r = run([py, script, "--kdl-include", INCLUDE, "--nvcc", nvcc, "--kernels-lib", lib, "--jobs", "2"],
            "the build script with the stubs", cwd=elsewhere)
    so = os.path.join(ext, "ops_torch.so")
    check(os.path.isfile(so) and "[1/2] c++ ops_torch.cpp" in r.stdout and "[2/2] link ops_torch.so" in r.stdout,
          "the build script's library or progress lines", r.stdout + r.stderr)
    check(not [n for n in os.listdir(ext) if n.startswith(".")], "the build script left temporary files",
          str(os.listdir(ext)))
    check(not any(n.startswith("libcuda.so") for n in needed_libraries(so)), "the extension links libcuda",
          str(needed_libraries(so)))
    r = run([py, os.path.join(HERE, "torch_check.py"), "--library", so, "--manifest", os.path.join(ext, "manifest.json"),
             "--spec-json", spec_json(kdlc, tmp)], "torch_check.py", ok=False)
    print(r.stdout)
    check(r.returncode == 0, "torch_check.py found problems", r.stderr[-5000:])


def case_build(kdlc, py, tmp):
    nvcc = find_nvcc()
    print(f"torch {py[1]} ({py[0]}), {nvcc}")
    py = py[0]
    env = dict(os.environ, KDL_CACHE_DIR=os.path.join(tmp, "cache"))
    env.pop("KDL_INCLUDE_DIR", None)
    out = os.path.join(tmp, "built")
    r = run([kdlc, "build", "--torch", SPEC, "--kernel", "t_bias_relu", "-o", out, "--nvcc", nvcc, "--python", py,
             "-j2"], "kdlc build --torch", env=env)
    print(r.stderr)
    so = os.path.join(out, "ops_torch.so")
    check(os.path.isfile(so) and "kdlc: built " + so in r.stderr, "kdlc build --torch did not build ops_torch.so",
          r.stderr)

    # the build script alone: the emitted directory, the include directory, PyTorch; nvcc from $KDL_NVCC
    alone = os.path.join(tmp, "alone")
    run([kdlc, "emit", "--torch", SPEC, "--kernel", "t_bias_relu", "-o", alone], "kdlc emit --torch")
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere)
    env2 = dict(env, KDL_NVCC=nvcc)
    r = run([py, os.path.join(alone, "ops_torch_build.py"), "--kdl-include", INCLUDE, "--jobs", "2"],
            "the build script alone", env=env2, cwd=elsewhere)
    print(r.stdout)
    so2 = os.path.join(alone, "ops_torch.so")
    check(os.path.isfile(so2) and "nvcc t_bias_relu.cu" in r.stdout, "the build script did not compile the kernel",
          r.stdout + r.stderr)
    check(not os.listdir(elsewhere), "the build script wrote into the current directory", str(os.listdir(elsewhere)))
    for lib in (so, so2):
        needed = needed_libraries(lib)
        check(not any(n.startswith("libcuda.so") for n in needed) and any(n.startswith("libcudart") for n in needed),
              f"{lib}: links libcuda or not the CUDA runtime", str(needed))
        r = run([py, os.path.join(HERE, "torch_check.py"), "--library", lib, "--manifest",
                 os.path.join(alone, "manifest.json"), "--spec-json", spec_json(kdlc, tmp), "--ops", "t_bias_relu"],
                "torch_check.py", ok=False)
        print(r.stdout)
        check(r.returncode == 0, f"torch_check.py found problems in {lib}", r.stderr[-5000:])


def case_conv(kdlc, py, tmp):
    """The convolution ops of tests/golden/torch/conv_ops.kdl against stub kernels: built by the emitted script,
    then torch_conv_check.py (schemas, meta and FakeTensorMode calls in channels_last, error messages)."""
    nvcc = find_nvcc()
    print(f"torch {py[1]} ({py[0]}), {nvcc}")
    py = py[0]
    ext, lib = emit_with_stubs(kdlc, nvcc, CONV_SPEC, tmp)
    r = run([py, os.path.join(ext, "conv_ops_torch_build.py"), "--kdl-include", INCLUDE, "--nvcc", nvcc,
             "--kernels-lib", lib, "--jobs", "2"], "the build script with the stubs", cwd=tmp)
    so = os.path.join(ext, "conv_ops_torch.so")
    check(os.path.isfile(so), "the build script wrote no library", r.stdout + r.stderr)
    check(not any(n.startswith("libcuda.so") for n in needed_libraries(so)), "the extension links libcuda",
          str(needed_libraries(so)))
    r = run([py, os.path.join(HERE, "torch_conv_check.py"), "--library", so, "--manifest",
             os.path.join(ext, "manifest.json")], "torch_conv_check.py", ok=False)
    print(r.stdout)
    check(r.returncode == 0, "torch_conv_check.py found problems", r.stdout[-5000:] + r.stderr[-5000:])


CASES = {"ops": case_ops, "build": case_build, "conv": case_conv}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--python", default=os.path.join(SOURCE, ".venv", "bin", "python"))
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix=f"kdl-torch-{a.case}-")
    try:
        py = find_python(a.python)
        CASES[a.case](os.path.abspath(a.kdlc), py, tmp)
    except Skip as e:
        print(e)
        return 0
    except Failure as e:
        print(f"FAIL: {a.case}: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"PASS: {a.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
