#!/usr/bin/env python3
"""A stand-in for nvcc, so that tests of `kdlc build` run in seconds and without CUDA.

  --version                     prints a version (FAKE_NVCC_VERSION overrides it)
  ... -c X.cu -o Y.o            compiles a one-function C file with `cc -c` into Y.o, passing
                                $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS to cc as nvcc would, so
                                that `-include bad.h` really fails
  -shared ... -o Z.so OBJS      links with `cc -shared`
With -Xptxas -v it prints a clean ptxas report in CUDA 13.0's words (one entry function per
code=sm_NN target); FAKE_PTXAS (comma-separated) adds trouble, only to sources whose name contains
$FAKE_PTXAS_ONLY when that is set:
  spill       nonzero spill stores/loads in the entry function's properties
  devspill    spills in a device function (not the entry)
  setmaxnreg  ptxas info "(C7508) Potential Performance Loss: 'setmaxnreg' ignored ..."
  wgmma       ptxas info "(C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized ..."
  none        no report at all (as if a launcher had swallowed it)
  warning     a ptxas warning that is not a performance loss (must not fail the build)
Every call appends one JSON line (argv, pid, pgid, the NVCC_*_FLAGS, TMPDIR) to $FAKE_NVCC_LOG.
FAKE_PTXAS_CLEAN_WITH=FLAG: no trouble when FLAG is on the command line (kdlc's later tries of an sm90a
kernel: -DKDL_SM90_EPILOGUE_CHECKED, -DKDL_EPILOGUE_MAX_VECTOR_WIDTH=N).
FAKE_NVCC_SLEEP=S sleeps S seconds (in a child `sleep`, as nvcc runs cicc/ptxas) before compiling;
FAKE_NVCC_TMPFILE=1 leaves a file in $TMPDIR while it works, as nvcc does."""
import json, os, re, shlex, subprocess, sys


def log(argv):
    path = os.environ.get("FAKE_NVCC_LOG")
    if not path:
        return
    entry = {"argv": argv, "pid": os.getpid(), "pgid": os.getpgid(0),
             "append": os.environ.get("NVCC_APPEND_FLAGS", ""), "prepend": os.environ.get("NVCC_PREPEND_FLAGS", ""),
             "tmpdir": os.environ.get("TMPDIR", "")}
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def ptxas_report(argv, src):
    """What `nvcc -Xptxas -v` prints for one entry function per SASS target."""
    trouble = set(filter(None, os.environ.get("FAKE_PTXAS", "").split(",")))
    only = os.environ.get("FAKE_PTXAS_ONLY")
    if only and only not in os.path.basename(src):
        trouble = set()
    clean_with = os.environ.get("FAKE_PTXAS_CLEAN_WITH")
    if clean_with and clean_with in argv:
        trouble = set()
    if "none" in trouble:
        return ""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(src)[:-3])
    entry = f"_ZN11kdl_kernels{len(stem) + 7}{stem}_kernelEv"
    out = []
    targets = [m.group(1) for g in argv for m in re.finditer(r"code=\[?(?:[^,\]]*,)*(sm_\w+)", g)]
    for target in targets:
        if "setmaxnreg" in trouble:
            out.append("ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored to maintain "
                       "compatibility into 'extern' call.")
        if "wgmma" in trouble:
            out.append("ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized "
                       "due to non wgmma instructions reading accumulator registers of  a wgmma between start and end "
                       f"of the pipeline stage in the function '{entry}'")
        if "warning" in trouble:
            out.append(f"ptxas warning : Value of threads per SM for entry {entry} is out of range. .minnctapersm will be ignored")
        out.append("ptxas info    : 0 bytes gmem")
        if "devspill" in trouble:
            out += ["ptxas info    : Function properties for _Z6helperPf",
                    "    16 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads"]
        spill = 24 if "spill" in trouble else 0
        out += [f"ptxas info    : Compiling entry function '{entry}' for '{target}'",
                f"ptxas info    : Function properties for {entry}",
                f"    {spill} bytes stack frame, {spill} bytes spill stores, {spill} bytes spill loads",
                "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]",
                "ptxas info    : Compile time = 12.345 ms"]
    return "".join(line + "\n" for line in out)


def main():
    argv = sys.argv[1:]
    log([sys.argv[0]] + argv)
    if "--version" in argv:
        print(os.environ.get("FAKE_NVCC_VERSION", "fake nvcc: NVIDIA (R) Cuda compiler driver (fake)\nrelease 0.0"))
        return 0
    out = argv[argv.index("-o") + 1]
    env_flags = shlex.split(os.environ.get("NVCC_PREPEND_FLAGS", "")) + shlex.split(os.environ.get("NVCC_APPEND_FLAGS", ""))
    env_flags = [f for i, f in enumerate(env_flags) if f != "-ccbin" and (i == 0 or env_flags[i - 1] != "-ccbin")]
    if "-shared" in argv:
        objs = [a for a in argv if a.endswith(".o")]
        return subprocess.call(["cc", "-shared", "-o", out] + objs)
    src = argv[argv.index("-c") + 1]
    if os.environ.get("FAKE_NVCC_TMPFILE") and os.environ.get("TMPDIR"):
        open(os.path.join(os.environ["TMPDIR"], f"fake-nvcc-{os.getpid()}.ii"), "w").close()
    if os.environ.get("FAKE_NVCC_SLEEP"):
        subprocess.call(["sleep", os.environ["FAKE_NVCC_SLEEP"]])
    with open(src) as f:
        text = f.read()  # a real read of the source, as nvcc does
    symbol = "kdl_fake_" + re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(src)[:-3])
    c_file = out + ".fake.c"
    with open(c_file, "w") as f:
        f.write(f"int {symbol}(void) {{ return {len(text)}; }}\n")
    try:
        rc = subprocess.call(["cc"] + env_flags + ["-fPIC", "-c", c_file, "-o", out])
    finally:
        os.unlink(c_file)
    if rc == 0 and any(a == "-Xptxas" and argv[i + 1].split(",").count("-v") for i, a in enumerate(argv[:-1])):
        sys.stderr.write(ptxas_report(argv, src))
    return rc


if __name__ == "__main__":
    sys.exit(main())
