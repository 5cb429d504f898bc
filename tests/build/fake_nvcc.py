#!/usr/bin/env python3
"""A stand-in for nvcc, so that tests of `kdlc build` run in seconds and without CUDA.

  --version                     prints a version (FAKE_NVCC_VERSION overrides it)
  ... -c X.cu -o Y.o            compiles a one-function C file with `cc -c` into Y.o, passing
                                $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS to cc as nvcc would, so
                                that `-include bad.h` really fails
  -shared ... -o Z.so OBJS      links with `cc -shared`
Every call appends one JSON line (argv, pid, pgid, the NVCC_*_FLAGS, TMPDIR) to $FAKE_NVCC_LOG.
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
        return subprocess.call(["cc"] + env_flags + ["-fPIC", "-c", c_file, "-o", out])
    finally:
        os.unlink(c_file)


if __name__ == "__main__":
    sys.exit(main())
