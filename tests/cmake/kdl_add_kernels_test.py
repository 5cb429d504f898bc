#!/usr/bin/env python3
"""Integration tests of kdl_add_kernels (cmake/KdlKernels.cmake): real CMake projects that use KDL
through find_package(kdl), built with Ninja and nvcc, edited step by step in one build tree.

Scenarios (--scenario):
  imports   editing any file of the import graph regenerates and reconfigures: a kernel added to an
            import of an import is compiled and linked; a changed import recompiles its kernel; a
            removed (and deleted) import leaves a build that works; no-op builds do nothing.
  names     two specs of the same stem (a/k.kdl, b/k.kdl), a spec named `my spec.kdl` and a relative
            OUTPUT_DIR (resolved against the binary dir, whatever the cwd of cmake); kernels of the
            same name in two specs of one target fail at configure time with a clear message.
  launcher  CMAKE_CUDA_COMPILER_LAUNCHER (and a target's CUDA_COMPILER_LAUNCHER) wraps the compiles
            of the emitted .cu files.
  ptxas     the compiles go through `kdlc ptxas-gate` with -Xptxas -v and each kernel's gencode
            (sm_90a for sm90a kernels when kdlc emits them); a kernel that spills fails the build,
            ALLOW_PTXAS_WARNINGS builds it with a warning.

Usage: kdl_add_kernels_test.py --kdl-dir KDL_BUILD_DIR --scenario NAME [--keep]
Exits 77 (ctest SKIP_RETURN_CODE) with "SKIP: ..." when nvcc or Ninja is missing.
"""
import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile

SKIP = 77


class Failure(Exception):
    pass


def find_tool(env_names, name, fallbacks=()):
    for c in [os.environ.get(e) for e in env_names] + [shutil.which(name), *fallbacks]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def kernel(name, tile="(64, 64, 32)", stages="2"):
    return ("kernel %s {\n  op = gemm; arch = sm80;\n  A : bf16 row; B : bf16 col; D : bf16 row;\n"
            "  tile = %s; stages = %s;\n}\n" % (name, tile, stages))


def main_cpp(kernels):
    """A host program that links every kernel in `kernels` (each one's can_implement and run are
    referenced; it is built, never run)."""
    inc = "".join('#include "%s.h"\n' % k for k in kernels)
    calls = "".join("  { kdl_kernels::%s::Arguments a; bad += kdl_kernels::%s::can_implement(a) == nullptr;\n"
                    "    if (argc > 99) bad += kdl_kernels::%s::run(a) != cudaSuccess; }\n" % (k, k, k)
                    for k in kernels)
    return "%s\nint main(int argc, char**) {\n  int bad = 0;\n%s  return bad;\n}\n" % (inc, calls)


def cmake_lists(body):
    return ("cmake_minimum_required(VERSION 3.20)\nproject(kdl_it LANGUAGES CXX CUDA)\n"
            "find_package(kdl REQUIRED)\n" + body)


class Project:
    """A consumer project in ROOT/src, built in ROOT/build."""

    def __init__(self, root, kdl_dir, nvcc, generator):
        self.src = os.path.join(root, "src")
        self.build_dir = os.path.join(root, "build")
        self.root = root
        self.kdl_dir = kdl_dir
        self.nvcc = nvcc
        self.generator = generator
        os.makedirs(self.src)

    def path(self, rel):
        return os.path.join(self.src, rel)

    def write(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)

    def remove(self, rel):
        os.remove(self.path(rel))

    def run(self, cmd, cwd=None, expect_ok=True, env=None):
        r = subprocess.run(cmd, cwd=cwd or self.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env)
        if expect_ok and r.returncode != 0:
            raise Failure("`%s` failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-6000:]))
        return r

    def configure(self, extra=(), cwd=None, expect_ok=True):
        # -S/-B relative to `cwd` (the project root unless given): a relative OUTPUT_DIR must not
        # depend on where cmake runs.
        base = cwd or self.root
        return self.run(["cmake", "-S", os.path.relpath(self.src, base), "-B", os.path.relpath(self.build_dir, base),
                         "-G", self.generator, "-DCMAKE_BUILD_TYPE=Release", "-Dkdl_DIR=" + self.kdl_dir,
                         "-DCMAKE_CUDA_COMPILER=" + self.nvcc, *extra], cwd=base, expect_ok=expect_ok)

    def build(self):
        """Builds verbosely (the log names every compiled file); returns the log."""
        return self.run(["cmake", "--build", self.build_dir, "--verbose"]).stdout

    def symbols(self, exe):
        return self.run(["nm", "-C", os.path.join(self.build_dir, exe)]).stdout


def step(msg):
    print("--", msg, flush=True)


def expect(cond, what, log=""):
    if not cond:
        raise Failure(what + ("\n--- log ---\n" + log[-6000:] if log else ""))
    print("   ok:", what, flush=True)


def compiled(log, source):
    """Whether the build log shows a compile of `source` (a file name such as k_more.cu)."""
    return any(source in line and " -c " in line for line in log.splitlines())


def linked(symbols, kernel):
    return ("kdl_kernels::%s::run(" % kernel) in symbols or ("kdl_kernels::%s::can_implement(" % kernel) in symbols


def no_work(log):
    """Whether a build did nothing: no compile, no kdlc run, no re-run of CMake (Ninja also says so)."""
    lines = log.splitlines()
    return ("ninja: no work to do." in log if "ninja" in log else
            not any(" -c " in l or "kdlc emit" in l or "Re-running CMake" in l for l in lines))


# ---- scenarios ------------------------------------------------------------------------------------

def scenario_imports(p):
    p.write("CMakeLists.txt", cmake_lists("add_executable(app main.cpp)\nkdl_add_kernels(TARGET app SPECS kernels.kdl)\n"))
    p.write("kernels.kdl", 'import "lib/tiles.kdl";\n' + kernel("k_main", tile="tile_main", stages="stages_main"))
    p.write("lib/tiles.kdl", 'import "more.kdl";\nlet tile_main = (64, 64, 32);\nlet stages_main = 2;\n')
    p.write("lib/more.kdl", "let unused = 1;\n")
    p.write("main.cpp", main_cpp(["k_main"]))

    step("configure and build: kernels.kdl imports lib/tiles.kdl, which imports lib/more.kdl")
    p.configure()
    log = p.build()
    expect(compiled(log, "k_main.cu"), "k_main.cu compiled", log)
    expect(linked(p.symbols("app"), "k_main"), "app links k_main")
    log = p.build()
    expect(no_work(log), "a second build does nothing", log)

    step("add kernel k_more to lib/more.kdl (an import of an import) and call it from main.cpp")
    p.write("lib/more.kdl", "let unused = 1;\n" + kernel("k_more"))
    p.write("main.cpp", main_cpp(["k_main", "k_more"]))
    log = p.build()
    expect(compiled(log, "k_more.cu"), "the rebuild compiles the new kernel's k_more.cu", log)
    expect(linked(p.symbols("app"), "k_more"), "app links k_more")
    log = p.build()
    expect(no_work(log), "a second build does nothing", log)

    step("change stages_main in lib/tiles.kdl (an import): k_main is regenerated and recompiled")
    p.write("lib/tiles.kdl", 'import "more.kdl";\nlet tile_main = (64, 64, 32);\nlet stages_main = 3;\n')
    log = p.build()
    expect(compiled(log, "k_main.cu"), "k_main.cu recompiled", log)
    header = open(os.path.join(p.build_dir, "kdl_kernels", "app", "kernels", "k_main.h")).read()
    expect("3 stages" in header, "k_main.h says 3 stages")

    step("lib/tiles.kdl stops importing lib/more.kdl, which is deleted; main.cpp no longer calls k_more")
    p.write("lib/tiles.kdl", "let tile_main = (64, 64, 32);\nlet stages_main = 3;\n")
    p.remove("lib/more.kdl")
    p.write("main.cpp", main_cpp(["k_main"]))
    log = p.build()
    expect("missing and no known rule" not in log and "No rule to make target" not in log,
           "no `missing and no known rule` (Ninja) or `No rule to make target` (Make)", log)
    syms = p.symbols("app")
    expect(linked(syms, "k_main") and not linked(syms, "k_more"), "app links k_main and no longer k_more")
    log = p.build()
    expect(no_work(log), "a second build does nothing", log)

    step("kernels.kdl stops importing lib/tiles.kdl, which is deleted")
    p.write("kernels.kdl", kernel("k_main", stages="4"))
    p.remove("lib/tiles.kdl")
    log = p.build()
    expect(compiled(log, "k_main.cu"), "k_main.cu recompiled", log)
    log = p.build()
    expect(no_work(log), "a second build does nothing", log)


def scenario_names(p):
    p.write("CMakeLists.txt", cmake_lists(
        "add_executable(app main.cpp)\n"
        'kdl_add_kernels(TARGET app SPECS a/k.kdl b/k.kdl "my spec.kdl" OUTPUT_DIR gen)\n'))
    p.write("a/k.kdl", kernel("ka"))
    p.write("b/k.kdl", kernel("kb"))
    p.write("my spec.kdl", kernel("ks"))
    p.write("main.cpp", main_cpp(["ka", "kb", "ks"]))
    elsewhere = os.path.join(p.root, "elsewhere")
    os.makedirs(elsewhere)

    step("configure from another directory: specs a/k.kdl, b/k.kdl, `my spec.kdl`; OUTPUT_DIR gen (relative)")
    p.configure(cwd=elsewhere)
    gen = os.path.join(p.build_dir, "gen")
    expect(os.path.isdir(gen), "OUTPUT_DIR gen resolves to <binary dir>/gen")
    expect(not os.listdir(elsewhere) and not os.path.exists(p.path("gen")),
           "nothing is written relative to cmake's cwd or the source dir")
    log = p.build()
    for k in ("ka", "kb", "ks"):
        expect(compiled(log, k + ".cu"), k + ".cu compiled", log)
    syms = p.symbols("app")
    expect(all(linked(syms, k) for k in ("ka", "kb", "ks")), "app links ka, kb and ks")
    expect(not os.path.exists(os.path.join(elsewhere, "gen")), "the build writes nothing into cmake's cwd either")
    log = p.build()
    expect(no_work(log), "a second build does nothing", log)

    step("change b/k.kdl: only kb is regenerated and recompiled")
    p.write("b/k.kdl", kernel("kb", stages="3"))
    log = p.build()
    expect(compiled(log, "kb.cu") and not compiled(log, "ka.cu"), "kb.cu recompiled, ka.cu not", log)

    step("add a kernel to `my spec.kdl` (a path with a space in the depfile): it is compiled and linked")
    p.write("my spec.kdl", kernel("ks") + kernel("ks2"))
    p.write("main.cpp", main_cpp(["ka", "kb", "ks", "ks2"]))
    log = p.build()
    expect(compiled(log, "ks2.cu"), "ks2.cu compiled", log)
    expect(linked(p.symbols("app"), "ks2"), "app links ks2")

    step("a kernel named in two specs of one target fails at configure time, naming both specs")
    p.write("b/k.kdl", kernel("kb") + kernel("ka"))
    r = p.configure(expect_ok=False)
    expect(r.returncode != 0, "configure fails", r.stdout)
    expect("`ka`" in r.stdout and "a/k.kdl" in r.stdout and "b/k.kdl" in r.stdout,
           "the message names the kernel and both specs", r.stdout)

    step("two specs that would share a generated directory fail at configure time")
    p.write("b/k.kdl", kernel("kb"))
    p.write("a_k.kdl", kernel("kc"))
    p.write("CMakeLists.txt", cmake_lists(
        "add_executable(app main.cpp)\nkdl_add_kernels(TARGET app SPECS a/k.kdl a_k.kdl)\n"))
    r = p.configure(expect_ok=False)
    expect(r.returncode != 0 and "a/k.kdl" in r.stdout and "a_k.kdl" in r.stdout,
           "configure fails, naming both specs", r.stdout)


LAUNCHER = """#!/bin/sh
# Logs the command it wraps, then runs it (as sccache or distcc would).
echo "$*" >> "%s"
exec "$@"
"""


def scenario_launcher(p):
    logs = {}
    for name in ("global", "target"):
        logs[name] = os.path.join(p.root, name + "-launcher.log")
        script = os.path.join(p.root, name + "-launcher.sh")
        with open(script, "w") as f:
            f.write(LAUNCHER % logs[name])
        os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    p.write("CMakeLists.txt", cmake_lists(
        "add_executable(app main.cpp)\nkdl_add_kernels(TARGET app SPECS k.kdl)\n"
        "add_executable(app2 main2.cpp)\n"
        'set_target_properties(app2 PROPERTIES CUDA_COMPILER_LAUNCHER "%s")\n'
        "kdl_add_kernels(TARGET app2 SPECS k2.kdl)\n" % os.path.join(p.root, "target-launcher.sh")))
    p.write("k.kdl", kernel("kl"))
    p.write("k2.kdl", kernel("kl2"))
    p.write("main.cpp", main_cpp(["kl"]))
    p.write("main2.cpp", main_cpp(["kl2"]))

    step("configure with CMAKE_CUDA_COMPILER_LAUNCHER=global-launcher.sh; app2 sets its own CUDA_COMPILER_LAUNCHER")
    p.configure(["-DCMAKE_CUDA_COMPILER_LAUNCHER=" + os.path.join(p.root, "global-launcher.sh")])
    log = p.build()
    expect(compiled(log, "kl.cu") and compiled(log, "kl2.cu"), "kl.cu and kl2.cu compiled", log)
    glob = open(logs["global"]).read() if os.path.exists(logs["global"]) else ""
    targ = open(logs["target"]).read() if os.path.exists(logs["target"]) else ""
    expect(any("kl.cu" in l and p.nvcc in l for l in glob.splitlines()),
           "kl.cu went through the global launcher, which ran nvcc", glob)
    expect(any("kl2.cu" in l and p.nvcc in l for l in targ.splitlines()),
           "kl2.cu went through app2's own launcher", targ)
    expect("kl2.cu" not in glob, "kl2.cu did not go through the global launcher", glob)
    expect(linked(p.symbols("app"), "kl") and linked(p.symbols("app2"), "kl2"), "app and app2 link their kernels")


# A kernel `kdlc check` accepts, compiled with device debug info (-G, through nvcc's NVCC_APPEND_FLAGS) so that
# ptxas spills: check refuses every tile measured to spill (codegen/lower_tiling.cpp), so the gate's test makes
# its own.
SPILLING_KERNEL = ("kernel kbig {\n  op = gemm; arch = sm80;\n  A : f32 row; B : f32 col; D : f32 row;\n"
                   "  tile = (128, 128, 32); stages = 2;\n}\n")
SPILL_ENV = dict(os.environ, NVCC_APPEND_FLAGS="-G")
SM90A_KERNEL = ("kernel k90 {\n  op = gemm; arch = sm90a;\n  A : bf16 row; B : bf16 col; D : bf16 row;\n"
                "  tile = (128, 128, 64);\n}\n")


def compile_line(log, source):
    return next((l for l in log.splitlines() if source in l and " -c " in l), "")


def scenario_ptxas(p):
    # An sm90a kernel joins the clean spec when this kdlc can emit one (it must then get sm_90a's gencode).
    probe = os.path.join(p.root, "probe")
    with open(os.path.join(p.root, "k90.kdl"), "w") as f:
        f.write(SM90A_KERNEL)
    kdlc = os.path.join(p.kdl_dir, "kdlc")
    sm90a = subprocess.run([kdlc, "emit", os.path.join(p.root, "k90.kdl"), "-o", probe], capture_output=True).returncode == 0
    p.write("clean.kdl", kernel("kc") + (SM90A_KERNEL if sm90a else ""))
    p.write("big.kdl", SPILLING_KERNEL)
    p.write("main.cpp", main_cpp(["kc"]))
    p.write("main2.cpp", main_cpp(["kbig"]))
    p.write("CMakeLists.txt", cmake_lists(
        "add_executable(app main.cpp)\nkdl_add_kernels(TARGET app SPECS clean.kdl)\n"
        "add_executable(app2 main2.cpp)\nkdl_add_kernels(TARGET app2 SPECS big.kdl)\n"))

    step("a clean kernel builds through the ptxas gate, with -Xptxas -v and its report next to the object")
    p.configure()
    r = p.run(["cmake", "--build", p.build_dir, "--verbose", "--target", "app"])
    log = r.stdout
    line = compile_line(log, "kc.cu")
    expect("ptxas-gate" in line and "--ptxas-options=-v" in line and "-gencode=arch=compute_80,code=sm_80" in line,
           "kc.cu is compiled through kdlc ptxas-gate with -v and its gencode", log)
    reports = [os.path.join(d, f) for d, _, fs in os.walk(p.build_dir) for f in fs if f.endswith(".ptxas.txt")]
    expect(any("kc.cu" in r for r in reports), "kc.cu's object has its .ptxas.txt", str(reports))
    text = open([r for r in reports if "kc.cu" in r][0]).read()
    expect("gemm_sm80_kernel<" in text and "sm_80" in text and "sm_90" in text, "the report lists the kernel per target",
           text)
    if sm90a:
        line = compile_line(log, "k90.cu")
        expect("-gencode=arch=compute_90a,code=sm_90a" in line and "ptxas-gate" in line,
               "the sm90a kernel is compiled for sm_90a through the gate", log)
    else:
        print("   note: this kdlc cannot emit sm90a kernels yet; the sm_90a gencode part did not run")

    step("a kernel that spills fails the build, naming the kernel and the spill")
    r = p.run(["cmake", "--build", p.build_dir, "--target", "app2"], expect_ok=False, env=SPILL_ENV)
    expect(r.returncode != 0, "the build fails", r.stdout)
    expect("kernel `kbig` (kbig.cu)" in r.stdout and "bytes spill stores" in r.stdout,
           "the message names the kernel and the spill", r.stdout)
    expect(not any(f.endswith("kbig.cu.o") for _, _, fs in os.walk(p.build_dir) for f in fs),
           "the refused object was removed")

    step("ALLOW_PTXAS_WARNINGS builds it with a warning")
    p.write("CMakeLists.txt", cmake_lists(
        "add_executable(app main.cpp)\nkdl_add_kernels(TARGET app SPECS clean.kdl)\n"
        "add_executable(app2 main2.cpp)\nkdl_add_kernels(TARGET app2 SPECS big.kdl ALLOW_PTXAS_WARNINGS)\n"))
    r = p.run(["cmake", "--build", p.build_dir, "--target", "app2"], env=SPILL_ENV)
    expect("kdlc: warning: ptxas reports a performance loss" in r.stdout, "the spill is a warning", r.stdout)
    expect(linked(p.symbols("app2"), "kbig"), "app2 links kbig")


SCENARIOS = {"imports": scenario_imports, "names": scenario_names, "launcher": scenario_launcher,
             "ptxas": scenario_ptxas}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kdl-dir", required=True, help="a KDL build tree (or <prefix>/lib/cmake/kdl)")
    ap.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    ap.add_argument("--generator", default="Ninja", help="Ninja (default) or Unix Makefiles")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    nvcc = find_tool(["KDL_NVCC", "CUDACXX"], "nvcc", ["/usr/local/cuda/bin/nvcc"])
    if not nvcc:
        print("SKIP: nvcc not found ($KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc)")
        return SKIP
    if a.generator == "Ninja" and not shutil.which("ninja"):
        print("SKIP: ninja not found")
        return SKIP
    root = tempfile.mkdtemp(prefix="kdl-cmake-%s-" % a.scenario)
    ok = False
    try:
        SCENARIOS[a.scenario](Project(root, os.path.abspath(a.kdl_dir), nvcc, a.generator))
        ok = True
        print("PASS: %s" % a.scenario)
    except Failure as e:
        print("FAIL: %s" % e)
    finally:
        if a.keep:
            print("(project kept in %s)" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
