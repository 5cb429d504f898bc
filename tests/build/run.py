#!/usr/bin/env python3
"""Tests of `kdlc emit`, `kdlc build` and the compile cache (issue 6, items 2, 4, 5, 6, 7, 17, 21; issue 9: --torch).

Most cases use fake_nvcc.py (a stand-in that compiles a one-function C file with cc), so that they
are fast and need no CUDA; `nvcc-smoke` uses the real nvcc. Run one case:
  run.py --kdlc build/kdlc --case cache-key
Prints SKIP: (and exits 0) only when a tool the case is about is missing (distcc, nvcc)."""
import argparse, glob, json, os, shutil, signal, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
FAKE_NVCC = os.path.join(HERE, "fake_nvcc.py")
KDLC = None


class Failure(Exception):
    pass


def check(cond, what, detail=""):
    if not cond:
        raise Failure(what + (("\n" + detail) if detail else ""))


def kernel(name, tile=64):
    return (f"kernel {name} {{\n  op = gemm; arch = sm80;\n  A : f16 row; B : f16 col; D : f16 row;\n"
            f"  tile = ({tile}, {tile}, 64); stages = 3;\n}}\n")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def base_env(tmp):
    env = dict(os.environ)
    for v in ("NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "NVCC_CCBIN", "KDL_LAUNCHER", "KDL_CACHE_MAX_SIZE",
              "KDL_NVCC", "CUDACXX", "KDL_INCLUDE_DIR"):
        env.pop(v, None)
    env["KDL_CACHE_DIR"] = os.path.join(tmp, "cache")
    env["FAKE_NVCC_LOG"] = os.path.join(tmp, "nvcc.log")
    return env


def kdlc(args, env, cwd=None, timeout=120):
    return subprocess.run([KDLC] + args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def build(spec, out, env, *extra, nvcc=FAKE_NVCC):
    return kdlc(["build", spec, "-o", out, "--nvcc", nvcc, "-j2", *extra], env)


def nvcc_log(env):
    path = env["FAKE_NVCC_LOG"]
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compiles(env):
    return [e for e in nvcc_log(env) if "-c" in e["argv"]]


def leftovers(out):
    """Temporary files a run may have left in its output directory."""
    if not os.path.isdir(out):
        return []
    return sorted(n for n in os.listdir(out) if n.startswith(".") or ".tmp" in n or n.endswith(".o"))


def cache_entries(env):
    return sorted(glob.glob(os.path.join(env["KDL_CACHE_DIR"], "??", "*.o")))


# ---- item 2: the cache key covers every input of the object -----------------------------------------

def case_cache_key(tmp):
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "k.kdl"), kernel("ka"))
    out = os.path.join(tmp, "out")

    def expect(label, env2, cached, ok=True, nvcc=FAKE_NVCC):
        r = build(spec, out, env2, nvcc=nvcc)
        check((r.returncode == 0) == ok, f"{label}: exit {r.returncode}", r.stderr)
        check(("(cached)" in r.stderr) == cached, f"{label}: expected {'a hit' if cached else 'a compile'}", r.stderr)
        return r

    expect("first build", env, cached=False)
    expect("same build again", env, cached=True)
    bad = write(os.path.join(tmp, "bad.h"), "#error this header must break the compile\n")
    r = expect("NVCC_APPEND_FLAGS=-include bad.h", dict(env, NVCC_APPEND_FLAGS=f"-include {bad}"), cached=False, ok=False)
    check("this header must break the compile" in r.stderr, "the compile with bad.h did not run", r.stderr)
    expect("NVCC_PREPEND_FLAGS", dict(env, NVCC_PREPEND_FLAGS="-DKDL_TEST_FLAG=1"), cached=False)
    # Host compilers that say another version: through NVCC_CCBIN, -ccbin in the flags, and on PATH.
    shims = os.path.join(tmp, "shims")
    for name in ("g++", "gcc"):
        write(os.path.join(shims, name), f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "{name} (shim) 99.1"; exit 0; }}\n'
                                         f'exec /usr/bin/{name} "$@"\n')
        os.chmod(os.path.join(shims, name), 0o755)
    expect("NVCC_CCBIN", dict(env, NVCC_CCBIN=shims), cached=False)
    expect("-ccbin in NVCC_PREPEND_FLAGS", dict(env, NVCC_PREPEND_FLAGS=f"-ccbin {shims}/g++"), cached=False)
    expect("another g++ on PATH", dict(env, PATH=shims + os.pathsep + env["PATH"]), cached=False)
    # Another nvcc at another path, same version text.
    other = os.path.join(tmp, "other-cuda", "nvcc")
    os.makedirs(os.path.dirname(other))
    shutil.copy(FAKE_NVCC, other)
    expect("another nvcc path", env, cached=False, nvcc=other)
    expect("the first toolchain again", env, cached=True)

    # A KDL header that cannot be read is an error, not an empty string in the key.
    inc = os.path.join(tmp, "include")
    shutil.copytree(os.path.join(SOURCE, "include"), inc)
    os.symlink(os.path.join(tmp, "does-not-exist.cuh"), os.path.join(inc, "kdl", "zz_unreadable.cuh"))
    r = build(spec, out, dict(env, KDL_INCLUDE_DIR=inc))
    check(r.returncode == 1, f"unreadable header: exit {r.returncode}, expected 1", r.stderr)
    check("zz_unreadable.cuh" in r.stderr, "unreadable header: the error does not name it", r.stderr)
    check(leftovers(out) == [], f"unreadable header: left {leftovers(out)}")


# ---- item 2: size cap, least-recently-used eviction, `kdlc cache` ------------------------------------

def case_cache_lru(tmp):
    env = base_env(tmp)
    names = ["ka", "kb", "kc", "kd"]
    spec = write(os.path.join(tmp, "k.kdl"), "".join(kernel(n) for n in names))
    out = os.path.join(tmp, "out")
    entry = {}
    for n in names[:3]:
        before = set(cache_entries(env))
        r = build(spec, out, env, "--kernel", n)
        check(r.returncode == 0, f"build {n}", r.stderr)
        new = set(cache_entries(env)) - before
        check(len(new) == 1, f"build {n} stored {len(new)} entries")
        entry[n] = new.pop()
    size = {n: sum(os.path.getsize(p + side) for side in ("", ".sha256", ".log")) for n, p in entry.items()}
    info = kdlc(["cache", "--info", "--cache-max-size", "5M"], env)
    check(info.returncode == 0, "cache --info", info.stderr)
    check(f"entries: 3" in info.stdout and f"({sum(size.values())} bytes)" in info.stdout,
          "cache --info does not count the entries and bytes", info.stdout)
    check("directory: " + env["KDL_CACHE_DIR"] in info.stdout and "5.0 MiB (5242880 bytes)" in info.stdout,
          "cache --info does not show the directory and cap", info.stdout)
    # Last use: kb oldest, then ka, then kc; a hit on kb makes it the newest.
    t0 = time.time() - 10000
    for n, t in (("kb", t0), ("ka", t0 + 1), ("kc", t0 + 2)):
        os.utime(entry[n], (t, t))
    r = build(spec, out, env, "--kernel", "kb")
    check("(cached)" in r.stderr, "kb should be a hit", r.stderr)
    check(os.path.getmtime(entry["kb"]) > t0 + 5000, "a hit does not mark the entry as used")
    # Room for three entries: storing kd evicts the least recently used one, ka.
    cap = size["ka"] + size["kb"] + size["kc"]
    r = build(spec, out, dict(env, KDL_CACHE_MAX_SIZE=str(cap)), "--kernel", "kd")
    check(r.returncode == 0, "build kd", r.stderr)
    check(not any(os.path.exists(entry["ka"] + side) for side in ("", ".sha256", ".log")),
          "the least recently used entry (ka) was not evicted")
    check(os.path.exists(entry["kb"]) and os.path.exists(entry["kc"]), "a more recently used entry was evicted")
    check(len(cache_entries(env)) == 3, f"expected 3 entries, found {len(cache_entries(env))}")
    # The flag wins over the variable, and a malformed size is a usage error.
    r = build(spec, out, dict(env, KDL_CACHE_MAX_SIZE="10G"), "--cache-max-size", "1", "--kernel", "ka")
    check(r.returncode == 0 and len(cache_entries(env)) == 0, "--cache-max-size 1 should leave nothing",
          r.stderr + str(cache_entries(env)))
    r = build(spec, out, env, "--cache-max-size", "12Q")
    check(r.returncode == 2 and "--cache-max-size" in r.stderr, "a malformed size is not a usage error", r.stderr)
    # --clear removes entries and nothing else.
    build(spec, out, env)
    check(len(cache_entries(env)) == 4, "rebuild did not fill the cache")
    keep = write(os.path.join(env["KDL_CACHE_DIR"], "NOTES.txt"), "not an entry\n")
    shard = os.path.dirname(cache_entries(env)[0])
    keep2 = write(os.path.join(shard, "mine.txt"), "not an entry\n")
    r = kdlc(["cache", "--clear"], env)
    check(r.returncode == 0 and "removed 4 entries" in r.stdout, "cache --clear", r.stdout + r.stderr)
    check(cache_entries(env) == [] and os.path.exists(keep) and os.path.exists(keep2),
          "cache --clear removed too little or too much")
    r = kdlc(["cache", "--info"], env)
    check("entries: 0" in r.stdout, "cache --info after --clear", r.stdout)
    check(kdlc(["cache"], env).returncode == 2, "`kdlc cache` without --info/--clear is a usage error")


# ---- item 4: concurrent builds, interruption -------------------------------------------------------

def case_concurrent(tmp):
    env = dict(base_env(tmp), FAKE_NVCC_SLEEP="0.3")
    names = [f"k{i}" for i in range(6)]
    spec = write(os.path.join(tmp, "k.kdl"), "".join(kernel(n) for n in names))
    out = os.path.join(tmp, "out")
    for rnd in range(3):
        procs = [subprocess.Popen([KDLC, "build", spec, "-o", out, "--nvcc", FAKE_NVCC, "-j3", "--no-cache"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        for i, p in enumerate(procs):
            _, err = p.communicate(timeout=120)
            check(p.returncode == 0, f"round {rnd}: concurrent build {i} failed (exit {p.returncode})", err)
        check(leftovers(out) == [], f"round {rnd}: left {leftovers(out)}")
    members = subprocess.run(["ar", "t", os.path.join(out, "libk.a")], capture_output=True, text=True).stdout.split()
    check(sorted(members) == sorted(n + ".o" for n in names), f"libk.a holds {members}")


def processes_in_group(pgid):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return found


def case_interrupt(tmp):
    for sig in (signal.SIGTERM, signal.SIGINT):
        sub = os.path.join(tmp, sig.name)
        env = dict(base_env(sub), FAKE_NVCC_SLEEP="60", FAKE_NVCC_TMPFILE="1")
        spec = write(os.path.join(sub, "k.kdl"), "".join(kernel(f"k{i}") for i in range(4)))
        out = os.path.join(sub, "out")
        p = subprocess.Popen([KDLC, "build", spec, "-o", out, "--nvcc", FAKE_NVCC, "-j2"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        groups = set()
        try:
            deadline = time.time() + 30
            while len(compiles(env)) < 2 and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            check(len(compiles(env)) == 2, f"{sig.name}: the two compiles did not start")
            groups = {e["pgid"] for e in compiles(env)}
            time.sleep(0.5)  # let each fake nvcc start its `sleep` child
            p.send_signal(sig)
            _, err = p.communicate(timeout=30)
            check(p.returncode == 128 + sig, f"{sig.name}: exit {p.returncode}, expected {128 + sig}", err)
            deadline = time.time() + 10  # a grandchild may take a moment to act on its SIGTERM
            while time.time() < deadline and any(processes_in_group(g) for g in groups):
                time.sleep(0.1)
            alive = [pid for g in groups for pid in processes_in_group(g)]
            check(alive == [], f"{sig.name}: compiler processes still running: {alive}")
            check(leftovers(out) == [], f"{sig.name}: temporary files left in {out}: {leftovers(out)}")
            check(not glob.glob(os.path.join(out, "lib*")), f"{sig.name}: a library was published")
            check(len(compiles(env)) == 2, f"{sig.name}: compiles started after the signal")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for g in groups:
                try:
                    os.killpg(g, signal.SIGKILL)
                except OSError:
                    pass


# ---- item 5: a spec without kernels --------------------------------------------------------------

def case_no_kernels(tmp):
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "empty.kdl"), "// a spec that defines no kernel\nlet unused = 1;\n")
    out = os.path.join(tmp, "out")
    r = build(spec, out, env)
    check(r.returncode == 1, f"exit {r.returncode}, expected 1 (input errors)", r.stderr)
    check("empty.kdl defines no kernels; nothing to build" in r.stderr, "the error does not say what happened", r.stderr)
    check("No input files" not in r.stderr and "no input files" not in r.stderr, "nvcc's raw error leaked", r.stderr)
    check(not os.path.exists(out) or os.listdir(out) == [], f"left files behind: {os.listdir(out) if os.path.exists(out) else ''}")


# ---- item 6: one spec per emit directory, no orphans -----------------------------------------------

def case_emit_dir(tmp):
    env = base_env(tmp)
    a = write(os.path.join(tmp, "a.kdl"), kernel("ka") + kernel("kb"))
    b = write(os.path.join(tmp, "b.kdl"), kernel("kx"))
    out = os.path.join(tmp, "out")
    r = kdlc(["emit", a, "-o", out], env)
    check(r.returncode == 0, "emit a.kdl", r.stderr)
    with open(os.path.join(out, "manifest.json")) as f:
        manifest_a = f.read()
    r = kdlc(["emit", b, "-o", out], env)
    check(r.returncode == 1, f"emitting b.kdl over a.kdl's output: exit {r.returncode}, expected 1", r.stderr)
    check("holds the output of a.kdl" in r.stderr, "the error does not name the other spec", r.stderr)
    with open(os.path.join(out, "manifest.json")) as f:
        check(f.read() == manifest_a, "manifest.json of a.kdl was replaced")
    check(not os.path.exists(os.path.join(out, "kx.cu")), "b.kdl's files were written")
    # Emitting the same spec again changes nothing: unchanged files keep their time.
    old = time.time() - 1000
    for n in ("ka.cu", "ka.h", "kb.cu", "kb.h"):
        os.utime(os.path.join(out, n), (old, old))
    r = kdlc(["emit", a, "-o", out], env)
    check(r.returncode == 0, "emit a.kdl again", r.stderr)
    check(abs(os.path.getmtime(os.path.join(out, "ka.cu")) - old) < 1, "an unchanged file lost its mtime")
    # Re-emitting a.kdl without kb removes kb's files.
    write(a, kernel("ka"))
    r = kdlc(["emit", a, "-o", out], env)
    check(r.returncode == 0, "re-emit a.kdl", r.stderr)
    check(sorted(os.listdir(out)) == ["ka.cu", "ka.h", "manifest.json"], f"orphans left: {sorted(os.listdir(out))}")
    # A manifest.json kdlc did not write is never replaced.
    other = os.path.join(tmp, "other")
    write(os.path.join(other, "manifest.json"), '{"name": "someone else\'s"}\n')
    r = kdlc(["emit", a, "-o", other], env)
    check(r.returncode == 1 and "not a manifest kdlc wrote" in r.stderr, "a foreign manifest.json was accepted",
          r.stderr)


# ---- item 7: emit is all or nothing --------------------------------------------------------------

def case_emit_atomic(tmp):
    env = base_env(tmp)
    # A name too long for the file system (NAME.cu is 257 bytes), after two good kernels.
    long_name = "k" + "x" * 253
    spec = write(os.path.join(tmp, "long.kdl"), kernel("ka") + kernel("kb") + kernel(long_name))
    out = os.path.join(tmp, "out")
    r = kdlc(["emit", spec, "-o", out], env)
    check(r.returncode != 0, "emit of an unwritable kernel name succeeded", r.stderr)
    present = sorted(os.listdir(out)) if os.path.isdir(out) else []
    check(present == [], f"emit failed part-way and left {present}", r.stderr)
    # A target that cannot be replaced (a directory named kb.cu): nothing moves, not even ka's files.
    spec2 = write(os.path.join(tmp, "two.kdl"), kernel("ka") + kernel("kb"))
    out2 = os.path.join(tmp, "out2")
    os.makedirs(os.path.join(out2, "kb.cu"))
    r = kdlc(["emit", spec2, "-o", out2], env)
    check(r.returncode == 1 and "kb.cu" in r.stderr, f"emit over a directory named kb.cu: exit {r.returncode}", r.stderr)
    check(sorted(os.listdir(out2)) == ["kb.cu"], f"emit failed part-way and left {sorted(os.listdir(out2))}")
    # And when it works, every file is there and no temporary directory is left.
    os.rmdir(os.path.join(out2, "kb.cu"))
    r = kdlc(["emit", spec2, "-o", out2], env)
    check(r.returncode == 0, "emit", r.stderr)
    check(sorted(os.listdir(out2)) == ["ka.cu", "ka.h", "kb.cu", "kb.h", "manifest.json"], str(os.listdir(out2)))


# ---- item 17: cache directories that are read-only or symlinks ------------------------------------

def case_cache_dir(tmp):
    # A symlink (this user's) to a directory (this user's) is followed.
    env = base_env(tmp)
    real = os.path.join(tmp, "real-cache")
    os.makedirs(real, mode=0o700)
    os.symlink(real, os.path.join(tmp, "cache"))
    spec = write(os.path.join(tmp, "k.kdl"), kernel("ka"))
    out = os.path.join(tmp, "out")
    r = build(spec, out, env)
    check(r.returncode == 0 and "warning" not in r.stderr, "build with a symlinked cache", r.stderr)
    r = build(spec, out, env)
    check("(cached)" in r.stderr, "a symlinked cache directory is not used", r.stderr)
    check(len(glob.glob(os.path.join(real, "??", "*.o"))) == 1, "the entry is not in the link's target")

    # A cache this user owns but cannot write: one warning, and the build works. Root can write
    # anything, so as root the build runs as `nobody` from a directory that user owns.
    ro = os.path.join(tmp, "ro")
    os.makedirs(ro)
    shutil.copy(KDLC, os.path.join(ro, "kdlc"))
    shutil.copy(FAKE_NVCC, os.path.join(ro, "nvcc"))
    shutil.copytree(os.path.join(SOURCE, "include"), os.path.join(ro, "include"))
    spec2 = write(os.path.join(ro, "k.kdl"), kernel("ka") + kernel("kb"))
    cache = os.path.join(ro, "cache")
    os.makedirs(cache)
    env2 = dict(base_env(ro), KDL_CACHE_DIR=cache, KDL_INCLUDE_DIR=os.path.join(ro, "include"), HOME=ro)
    prefix = []
    if os.geteuid() == 0:
        os.chmod(tmp, 0o755)
        for root, dirs, files in os.walk(ro):
            for n in dirs + files:
                os.chown(os.path.join(root, n), 65534, 65534)
        os.chown(ro, 65534, 65534)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    os.chmod(cache, 0o500)
    r = subprocess.run(prefix + [os.path.join(ro, "kdlc"), "build", spec2, "-o", os.path.join(ro, "out"), "--nvcc",
                                 os.path.join(ro, "nvcc"), "-j2"], env=env2, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"build with a read-only cache: exit {r.returncode}", r.stderr)
    warnings = [l for l in r.stderr.splitlines() if "warning" in l]
    check(len(warnings) == 1 and "not writable" in warnings[0], "expected one warning that the cache is not writable",
          r.stderr)


# ---- issue 9: --torch, --torch-namespace, --python, kdlc --include-dir -----------------------------

FAKE_PYTHON = """#!/bin/sh
# A stand-in for the Python that runs <stem>_torch_build.py: logs its arguments, then fails or succeeds.
echo "$@" >> "$FAKE_PYTHON_LOG"
if [ -n "$FAKE_PYTHON_FAIL" ]; then echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1; fi
out=""; while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
echo "fake extension" > "$out"; echo "[1/2] c++ x_torch.cpp (0.1 s)"
"""


def case_torch_cli(tmp):
    env = base_env(tmp)
    r = kdlc(["emit", "--help"], env)
    check(r.returncode == 0 and "--torch " in r.stdout and "--torch-namespace" in r.stdout,
          "`kdlc emit --help` does not describe --torch and --torch-namespace", r.stdout)
    r = kdlc(["build", "--help"], env)
    check(r.returncode == 0 and "--torch " in r.stdout and "--python PY" in r.stdout and "--kernels-lib" in r.stdout,
          "`kdlc build --help` does not describe --torch and --python", r.stdout)
    r = kdlc(["--help"], env)
    check("cache --info" in r.stdout and "--launcher" in r.stdout and "KDL_CACHE_MAX_SIZE" in r.stdout,
          "`kdlc --help` does not describe cache, --launcher and KDL_CACHE_MAX_SIZE", r.stdout)
    check("--include-dir" in r.stdout and "emit --torch" in r.stdout,
          "`kdlc --help` does not describe --include-dir and emit --torch", r.stdout)

    # emit --torch: the two files, the default namespace, manifest.json's "torch" object
    spec = write(os.path.join(tmp, "my-spec.kdl"), kernel("ka") + kernel("kb"))
    out = os.path.join(tmp, "out")
    r = kdlc(["emit", spec, "-o", out, "--torch"], env)
    check(r.returncode == 0, f"emit --torch: exit {r.returncode}", r.stderr)
    check(os.path.isfile(os.path.join(out, "my-spec_torch.cpp")) and os.path.isfile(os.path.join(out, "my-spec_torch_build.py")),
          "emit --torch did not write my-spec_torch.cpp and my-spec_torch_build.py", str(os.listdir(out)))
    with open(os.path.join(out, "manifest.json")) as f:
        torch = json.load(f).get("torch")
    check(torch == {"namespace": "kdl_my_spec", "source": "my-spec_torch.cpp", "build_script": "my-spec_torch_build.py",
                    "library": "my-spec_torch.so",
                    "ops": [{"name": "ka", "schema": "ka(Tensor A, Tensor B, float alpha=1.0) -> Tensor"},
                            {"name": "kb", "schema": "kb(Tensor A, Tensor B, float alpha=1.0) -> Tensor"}]},
          "manifest.json's torch object", json.dumps(torch, indent=1))
    with open(os.path.join(out, "my-spec_torch.cpp")) as f:
        cpp = f.read()
    includes = [l for l in cpp.splitlines() if l.startswith("#include")]
    check("TORCH_LIBRARY(kdl_my_spec, m)" in cpp and "TORCH_LIBRARY_IMPL(kdl_my_spec, Meta, m)" in cpp
          and '#include "ka.h"' in includes and not any("Python.h" in l or "pybind11" in l for l in includes),
          "my-spec_torch.cpp", cpp[:3000])
    r = kdlc(["emit", spec, "-o", out, "--torch", "--torch-namespace", "my_ops", "--kernel", "kb"], env)
    with open(os.path.join(out, "manifest.json")) as f:
        torch = json.load(f).get("torch")
    check(r.returncode == 0 and torch["namespace"] == "my_ops" and [o["name"] for o in torch["ops"]] == ["kb"],
          "--torch-namespace my_ops --kernel kb", r.stderr + json.dumps(torch))
    # without --torch the extension's files go, like the files of a kernel the spec no longer has
    r = kdlc(["emit", spec, "-o", out], env)
    check(r.returncode == 0 and sorted(os.listdir(out)) == ["ka.cu", "ka.h", "kb.cu", "kb.h", "manifest.json"],
          "emit without --torch left the extension's files", str(sorted(os.listdir(out))))

    # bad command lines: exit 2
    for args, words in ((["--torch", "--torch-namespace", "1ops"], "--torch-namespace takes a C identifier"),
                        (["--torch", "--torch-namespace=my-ops"], "not `my-ops`"),
                        (["--torch", "--torch-namespace"], "--torch-namespace needs a namespace"),
                        (["--torch-namespace", "ops"], "--torch-namespace names the ops of --torch; add --torch")):
        r = kdlc(["emit", spec, "-o", os.path.join(tmp, "bad")] + args, env)
        check(r.returncode == 2 and words in r.stderr, f"emit {' '.join(args)}: exit {r.returncode}", r.stderr)
    r = kdlc(["build", spec, "-o", os.path.join(tmp, "bad"), "--python", "python3"], env)
    check(r.returncode == 2 and "--python runs the PyTorch extension's build script; add --torch" in r.stderr,
          f"build --python without --torch: exit {r.returncode}", r.stderr)
    r = kdlc(["emit", spec, "-o", os.path.join(tmp, "bad"), "--python", "python3"], env)
    check(r.returncode == 2 and "unknown option `--python` for `kdlc emit`" in r.stderr, "emit --python", r.stderr)

    # build --torch runs the build script with kdlc's include dir, its nvcc and lib<stem>.a
    fake_python = write(os.path.join(tmp, "bin", "fake-python"), FAKE_PYTHON)
    os.chmod(fake_python, 0o755)
    env["FAKE_PYTHON_LOG"] = os.path.join(tmp, "python.log")
    bout = os.path.join(tmp, "bout")
    r = build(spec, bout, env, "--torch", "--python", fake_python)
    check(r.returncode == 0, f"build --torch with a Python that succeeds: exit {r.returncode}", r.stderr)
    with open(env["FAKE_PYTHON_LOG"]) as f:
        argv = f.read().split()
    include = os.path.join(SOURCE, "include")
    check(argv == [os.path.join(bout, "my-spec_torch_build.py"), "--kdl-include", include, "--nvcc", FAKE_NVCC,
                   "--kernels-lib", os.path.join(bout, "libmy-spec.a"), "--out", os.path.join(bout, "my-spec_torch.so"),
                   "--jobs", "2"], "the build script's command line", " ".join(argv))
    check(os.path.isfile(os.path.join(bout, "libmy-spec.a")) and os.path.isfile(os.path.join(bout, "my-spec_torch.so")),
          "build --torch did not leave lib<stem>.a and <stem>_torch.so", str(os.listdir(bout)))
    check("[1/2] c++ x_torch.cpp" in r.stderr and "kdlc: built " + os.path.join(bout, "my-spec_torch.so") in r.stderr,
          "build --torch does not relay the script's progress", r.stderr)
    # ... with $KDL_PYTHON, and a failure: the command and the output, exit 1
    env2 = dict(env, KDL_PYTHON=fake_python, FAKE_PYTHON_FAIL="1")
    r = build(spec, bout, env2, "--torch")
    check(r.returncode == 1 and "building the PyTorch extension failed (exit 1)" in r.stderr
          and fake_python + " " + os.path.join(bout, "my-spec_torch_build.py") in r.stderr
          and "No module named 'torch'" in r.stderr, f"build --torch with a failing Python: exit {r.returncode}", r.stderr)
    r = build(spec, bout, env, "--torch", "--python", os.path.join(tmp, "no-such-python"))
    check(r.returncode == 1 and "cannot run --python " in r.stderr and not compiles(dict(env, FAKE_NVCC_LOG=os.path.join(tmp, "none"))),
          f"build --torch --python MISSING: exit {r.returncode}", r.stderr)
    r = build(spec, bout, dict(env, KDL_PYTHON=os.path.join(tmp, "no-such-python")), "--torch")
    check(r.returncode == 1 and "cannot run $KDL_PYTHON=" in r.stderr, f"KDL_PYTHON=MISSING: exit {r.returncode}", r.stderr)
    empty = os.path.join(tmp, "empty-bin")
    os.makedirs(empty)
    r = build(spec, bout, dict(env, PATH=empty), "--torch")
    check(r.returncode == 1 and "cannot find python3 on PATH to build the PyTorch extension" in r.stderr,
          f"build --torch without python3 on PATH: exit {r.returncode}", r.stderr)

    # kdlc --include-dir: $KDL_INCLUDE_DIR, else the source tree; none: exit 1
    r = kdlc(["--include-dir"], env)
    check(r.returncode == 0 and r.stdout == include + "\n", f"kdlc --include-dir: exit {r.returncode}", r.stdout + r.stderr)
    other = os.path.join(tmp, "inc")
    shutil.copytree(include, other)
    r = kdlc(["--include-dir"], dict(env, KDL_INCLUDE_DIR=other))
    check(r.returncode == 0 and r.stdout == other + "\n", "kdlc --include-dir with $KDL_INCLUDE_DIR", r.stdout + r.stderr)
    r = kdlc(["--include-dir", "x"], env)
    check(r.returncode == 2 and "takes no arguments" in r.stderr, "kdlc --include-dir x", r.stderr)
    # none: the source tree's include/ hidden by an empty directory mounted over it (in a private mount
    # namespace; where unshare cannot make one, this part is not checked and says so)
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare, "-rm", "true"], capture_output=True) if unshare else None
    if not probe or probe.returncode != 0:
        print("note: `kdlc --include-dir` with no include directory not checked: unshare -rm is not available here")
        return
    hidden = os.path.join(tmp, "hidden")
    os.makedirs(hidden)
    r = subprocess.run([unshare, "-rm", "sh", "-c", 'mount --bind "$0" "$1" && exec "$2" --include-dir', hidden, include,
                        KDLC], env=env, capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "cannot find the kdl include directory" in r.stderr and "KDL_INCLUDE_DIR" in r.stderr,
          f"kdlc --include-dir with no include directory: exit {r.returncode}", r.stdout + r.stderr)


def case_torch_script(tmp):
    """The emitted <stem>_torch_build.py's errors that come before any compile (no torch needed)."""
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "s.kdl"), kernel("ka"))
    out = os.path.join(tmp, "out")
    r = kdlc(["emit", spec, "-o", out, "--torch"], env)
    check(r.returncode == 0, f"emit --torch: exit {r.returncode}", r.stderr)
    script = os.path.join(out, "s_torch_build.py")
    with open(script) as f:
        text = f.read()
    check('STEM = "s"' in text and 'KERNELS = [' in text and '("ka", ["-gencode=' in text and "#@KDL_EMITTED@" not in text,
          "the build script's emitted block", text[:2000])
    include = os.path.join(SOURCE, "include")
    cuda = os.path.join(tmp, "cuda")  # a toolkit with nvcc and its headers, but nothing real
    write(os.path.join(cuda, "include", "cuda_runtime_api.h"), "")
    nvcc = write(os.path.join(cuda, "bin", "nvcc"), "#!/bin/sh\nexit 1\n")
    os.chmod(nvcc, 0o755)
    nowhere = os.path.join(tmp, "nowhere")
    os.makedirs(nowhere)

    def script_run(*args, extra_env=None):
        e = dict(env, **(extra_env or {}))
        for v in ("KDL_INCLUDE_DIR", "KDL_NVCC", "CUDACXX", "CUDA_HOME"):
            if not extra_env or v not in extra_env:
                e.pop(v, None)
        return subprocess.run([sys.executable, script, *args], env=e, cwd=nowhere, capture_output=True, text=True,
                              timeout=120)

    r = script_run("--help")
    check(r.returncode == 0 and "--kdl-include" in r.stdout and "--kernels-lib" in r.stdout, "--help", r.stdout + r.stderr)
    r = script_run("--jobs", "x")
    check(r.returncode == 2, f"--jobs x: exit {r.returncode}", r.stderr)
    for args, extra, words in (
            ((), None, "no kdl include directory: pass --kdl-include DIR or set $KDL_INCLUDE_DIR"),
            (("--kdl-include", tmp), None, f"{tmp} is not a kdl include directory (it has no kdl/torch_ops.h)"),
            ((), {"KDL_INCLUDE_DIR": tmp}, "is not a kdl include directory"),
            (("--kdl-include", include, "--kernels-lib", os.path.join(tmp, "libs.a")), None,
             "--kernels-lib " + os.path.join(tmp, "libs.a") + ": no such file"),
            (("--kdl-include", include, "--nvcc", os.path.join(tmp, "no-nvcc")), None, "not an executable"),
            (("--kdl-include", include, "--nvcc", FAKE_NVCC), None, "cannot find CUDA's headers (cuda_runtime_api.h) beside")):
        r = script_run(*args, extra_env=extra)
        check(r.returncode == 1 and "s_torch_build.py: error: " in r.stderr and words in r.stderr,
              f"build script {' '.join(args)}: exit {r.returncode}, expected the error `{words}`", r.stdout + r.stderr)
    if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0:
        r = script_run("--kdl-include", include, extra_env={"KDL_NVCC": nvcc})
        check(r.returncode == 1 and f"cannot import torch with {sys.executable}" in r.stderr,
              f"build script without torch: exit {r.returncode}", r.stdout + r.stderr)
    else:
        print(f"note: the build script's `cannot import torch` not checked: {sys.executable} has torch")
    # no nvcc anywhere: a copy of the script (beside it) whose last resort, /usr/local/cuda/bin/nvcc, is not there
    nocuda = os.path.join(out, "s_torch_build_nocuda.py")
    check("/usr/local/cuda/bin/nvcc" in text, "the build script does not try /usr/local/cuda/bin/nvcc")
    write(nocuda, text.replace("/usr/local/cuda/bin/nvcc", os.path.join(nowhere, "nvcc")))
    r = subprocess.run([sys.executable, nocuda, "--kdl-include", include], cwd=nowhere, capture_output=True, text=True,
                       env={k: v for k, v in dict(env, PATH=nowhere).items() if k not in ("KDL_NVCC", "CUDACXX")})
    check(r.returncode == 1 and "cannot find nvcc (tried $KDL_NVCC, $CUDACXX, nvcc on PATH" in r.stderr,
          f"build script without nvcc: exit {r.returncode}", r.stdout + r.stderr)
    check(os.listdir(nowhere) == [], "the build script wrote into the current directory", str(os.listdir(nowhere)))


# ---- item 21: compiler launchers -----------------------------------------------------------------

LAUNCHER = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["LAUNCHER_LOG"], "a") as f:
    f.write(json.dumps({"launcher": sys.argv[0], "argv": sys.argv[1:]}) + "\\n")
os.execv(sys.argv[1], sys.argv[1:])
"""


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def case_launcher(tmp):
    names = ["ka", "kb", "kc"]
    spec = write(os.path.join(tmp, "k.kdl"), "".join(kernel(n) for n in names))
    out = os.path.join(tmp, "out")
    log = os.path.join(tmp, "launcher.log")
    env = dict(base_env(tmp), LAUNCHER_LOG=log)
    launcher = write(os.path.join(tmp, "bin", "log-launcher"), LAUNCHER)
    os.chmod(launcher, 0o755)
    r = build(spec, out, env, "--launcher", launcher)
    check(r.returncode == 0, "build --launcher", r.stderr)
    runs = read_lines(log)
    check(len(runs) == 3, f"expected 3 compiles through the launcher, saw {len(runs)}", json.dumps(runs))
    for n in names:
        check(any(x["argv"][0] == FAKE_NVCC and "-c" in x["argv"] and x["argv"][x["argv"].index("-c") + 1].endswith(f"/{n}.cu")
                  for x in runs), f"{n}.cu was not compiled as LAUNCHER nvcc ... -c {n}.cu", json.dumps(runs))
    check(all("-shared" not in x["argv"] for x in runs), "the link went through the launcher")
    # The launcher does not change the key: another launcher (from $KDL_LAUNCHER, found on PATH) hits.
    other = os.path.join(tmp, "bin2", "other-launcher")
    os.makedirs(os.path.dirname(other))
    shutil.copy(launcher, other)
    log2 = os.path.join(tmp, "launcher2.log")
    env2 = dict(env, LAUNCHER_LOG=log2, KDL_LAUNCHER="other-launcher", PATH=os.path.dirname(other) + os.pathsep + env["PATH"])
    r = build(spec, out, env2)
    check(r.returncode == 0 and r.stderr.count("(cached)") == 3, "another launcher missed the cache", r.stderr)
    r = build(spec, out, env2, "--no-cache")
    check(r.returncode == 0 and len(read_lines(log2)) == 3, "$KDL_LAUNCHER was not used", r.stderr)
    r = build(spec, out, env, "--launcher", "no-such-launcher-kdl", "--no-cache")
    check(r.returncode == 1 and "cannot find the compiler launcher `no-such-launcher-kdl`" in r.stderr,
          "a missing launcher is not reported", r.stderr)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for_port(port, seconds):
    import socket
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


def case_distcc(tmp):
    distcc, distccd = shutil.which("distcc"), shutil.which("distccd")
    if not distcc or not distccd:
        print("SKIP: distcc/distccd not installed (scripts/setup.sh installs Debian's distcc)")
        return
    logs = os.path.join(tmp, "logs")
    os.makedirs(logs)
    os.chmod(tmp, 0o755)
    os.chmod(logs, 0o1777)  # distccd drops root privileges before it opens its log
    dlog = os.path.join(logs, "distccd.log")
    port = free_port()
    daemon = subprocess.Popen([distccd, "--daemon", "--no-detach", "--allow", "127.0.0.1", "--listen", "127.0.0.1",
                               "--port", str(port), "--log-file", dlog, "--log-level", "info", "--jobs", "2",
                               "--enable-tcp-insecure"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        env = dict(base_env(tmp), DISTCC_HOSTS=f"127.0.0.1:{port}", DISTCC_LOG=os.path.join(logs, "distcc.log"),
                   DISTCC_VERBOSE="1", DISTCC_FALLBACK="1")
        # The set-up of docs/building.md relays C/C++ compiles: one goes through the daemon.
        hello = write(os.path.join(tmp, "hello.c"), "int hello(void) { return 1; }\n")
        wait_for_port(port, 20)
        for _ in range(20):
            r = subprocess.run([distcc, "cc", "-c", hello, "-o", hello + ".o"], env=dict(env, DISTCC_FALLBACK="0"),
                               capture_output=True, text=True)
            if r.returncode == 0:
                break
            time.sleep(0.25)
        check(r.returncode == 0, "distcc cc through the local distccd failed", r.stderr + open(dlog).read()[-2000:] if os.path.exists(dlog) else r.stderr)
        # The daemon logs COMPILE_OK after it has answered the client: wait for the line (a loaded
        # machine writes it late; CI saw the check race it once).
        deadline = time.time() + 20
        while True:
            with open(dlog) as f:
                logged = "COMPILE_OK" in f.read()
            if logged or time.time() > deadline:
                break
            time.sleep(0.1)
        check(logged, "the daemon did not compile hello.c")
        # kdlc runs each compile as `distcc nvcc ...`; distcc 3.4 does not know .cu sources and runs them on
        # this machine (see docs/building.md), which must still build.
        spec = write(os.path.join(tmp, "k.kdl"), kernel("ka") + kernel("kb"))
        r = build(spec, os.path.join(tmp, "out"), env, "--launcher", "distcc", "--no-cache")
        check(r.returncode == 0, "kdlc build --launcher distcc failed", r.stderr)
        with open(os.path.join(logs, "distcc.log")) as f:
            client = f.read()
        for n in ("ka", "kb"):
            check(f"{n}.cu" in client, f"distcc did not handle the compile of {n}.cu", client[-3000:])
        check(len(compiles(env)) == 2, f"expected 2 compiles by nvcc, saw {len(compiles(env))}")
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=10)


# ---- the ptxas gate (issue 7, item 5) ----------------------------------------------------------------

def ptxas_table(out, stem="k"):
    """The rows of lib<stem>.ptxas.txt as dicts (kernel, target, regs, spill-st, spill-ld, ...)."""
    with open(os.path.join(out, f"lib{stem}.ptxas.txt")) as f:
        lines = [l for l in f.read().split("\n\n")[0].splitlines() if not l.startswith("#")]
    head = lines[0].split()
    return [dict(zip(head, l.split(None, len(head) - 1))) for l in lines[1:]]


def case_ptxas_gate(tmp):
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "k.kdl"), kernel("ka") + kernel("kb", tile=128))
    out = os.path.join(tmp, "out")
    # Clean: every compile runs with -Xptxas -v, the report is published and --verbose prints it.
    r = build(spec, out, env, "--verbose")
    check(r.returncode == 0, "clean build", r.stderr)
    for e in compiles(env):
        argv = e["argv"]
        check(any(a == "-Xptxas" and argv[i + 1] == "-v" for i, a in enumerate(argv[:-1])),
              "a compile without -Xptxas -v", " ".join(argv))
    rows = ptxas_table(out)
    # ka and kb, each for sm_80 and sm_90 (the sm80 path builds SASS for both)
    check(sorted((x["kernel"], x["target"]) for x in rows) ==
          [("ka", "sm_80"), ("ka", "sm_90"), ("kb", "sm_80"), ("kb", "sm_90")], "the report's rows", str(rows))
    check(all(x["regs"] == "168" and x["spill-st"] == "0" and x["smem"] == "1024" for x in rows), "the report's values",
          str(rows))
    check("ptxas report (libk.ptxas.txt)" in r.stderr and "kdl_kernels::ka_kernel()" in r.stderr,
          "--verbose does not print the report", r.stderr)
    check("Compiling entry function" not in r.stderr, "ptxas's raw info lines are printed", r.stderr)
    r = build(spec, out, env)
    check(r.returncode == 0 and "ptxas report" not in r.stderr, "the report is printed without --verbose", r.stderr)

    # Each kind of trouble fails the build, names the kernel and quotes ptxas; nothing is published.
    expected = {
        "spill": "sm_80 spills registers for kdl_kernels::kb_kernel(): 24 bytes spill stores, 24 bytes spill loads",
        "devspill": "sm_80 spills registers for helper(float*): 12 bytes spill stores, 12 bytes spill loads",
        "setmaxnreg": "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored",
        "wgmma": "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized",
        "none": "nvcc's output holds no ptxas report (-Xptxas -v)",
    }
    lib = os.path.join(out, "libk.so")
    for trouble, message in expected.items():
        before = os.path.getmtime(lib)
        env2 = dict(env, FAKE_PTXAS=trouble, FAKE_PTXAS_ONLY="kb")
        r = build(spec, out, env2, "--no-cache")
        check(r.returncode == 1, f"{trouble}: exit {r.returncode}, expected 1", r.stderr)
        check("kernel `kb` (kb.cu)" in r.stderr and "kernel `ka`" not in r.stderr, f"{trouble}: the kernel is not named",
              r.stderr)
        check(message in r.stderr, f"{trouble}: ptxas's message is not shown", r.stderr)
        check("--allow-ptxas-warnings" in r.stderr, f"{trouble}: the escape hatch is not named", r.stderr)
        check(os.path.getmtime(lib) == before and leftovers(out) == [], f"{trouble}: a library was published")
        # The escape hatch builds anyway and says why.
        r = build(spec, out, env2, "--no-cache", "--allow-ptxas-warnings")
        check(r.returncode == 0, f"{trouble} with --allow-ptxas-warnings: exit {r.returncode}", r.stderr)
        check("kdlc: warning: ptxas reports a performance loss" in r.stderr and message in r.stderr,
              f"{trouble} with --allow-ptxas-warnings: no warning", r.stderr)
    # --allow-ptxas-warnings=ka lets ka through with a warning and still refuses kb.
    r = build(spec, out, dict(env, FAKE_PTXAS="spill"), "--no-cache", "--allow-ptxas-warnings=ka")
    check(r.returncode == 1, f"--allow-ptxas-warnings=ka: exit {r.returncode}, expected 1", r.stderr)
    warning, _, error = r.stderr.partition("kdlc: error:")
    check("kernel `ka`" in warning and "kernel `kb`" not in warning and "kernel `kb`" in error
          and "kernel `ka`" not in error, "--allow-ptxas-warnings=ka: ka is a warning, kb an error", r.stderr)
    r = build(spec, out, dict(env, FAKE_PTXAS="spill"), "--no-cache", "--allow-ptxas-warnings=kb,ka")
    check(r.returncode == 0, "--allow-ptxas-warnings=kb,ka", r.stderr)
    r = build(spec, out, env, "--allow-ptxas-warnings=")
    check(r.returncode == 2 and "needs kernel names" in r.stderr, "--allow-ptxas-warnings= (empty)", r.stderr)
    # A ptxas warning that is no performance loss is shown and does not fail the build.
    r = build(spec, out, dict(env, FAKE_PTXAS="warning"), "--no-cache")
    check(r.returncode == 0 and "ptxas warning : Value of threads per SM" in r.stderr, "a plain ptxas warning", r.stderr)

    # A cache hit is gated like a compile: an entry stored by an --allow-ptxas-warnings build still
    # fails a build without it, from the cache.
    cache_env = dict(env, KDL_CACHE_DIR=os.path.join(tmp, "cache2"))
    r = build(spec, out, dict(cache_env, FAKE_PTXAS="wgmma"), "--allow-ptxas-warnings")
    check(r.returncode == 0 and "(cached)" not in r.stderr, "storing the wgmma entries", r.stderr)
    r = build(spec, out, cache_env)  # FAKE_PTXAS unset: a compile now would be clean
    check("(cached)" in r.stderr, "expected cache hits", r.stderr)
    check(r.returncode == 1 and "wgmma.mma_async instructions are serialized" in r.stderr,
          "a cache hit escaped the ptxas gate", r.stderr)
    # An entry whose stored output is gone is a miss, never a hit without a report.
    for log in glob.glob(os.path.join(cache_env["KDL_CACHE_DIR"], "??", "*.o.log")):
        os.unlink(log)
    r = build(spec, out, cache_env)
    check(r.returncode == 0 and "(cached)" not in r.stderr, "an entry without its ptxas report was used", r.stderr)


def case_ptxas_gate_sm90a_retry(tmp):
    """An sm90a kernel whose first compile ptxas reports spilling is compiled again with
    -DKDL_SM90_EPILOGUE_CHECKED (the checked epilogue), then with the staged epilogue capped at 4 and 2
    columns per call (-DKDL_EPILOGUE_MAX_VECTOR_WIDTH), alone and with the checked one, and the first
    clean try is kept, by `kdlc build` and by `kdlc ptxas-gate`; an sm80 kernel gets no second try, and
    tries that all spill leave the first report's refusal."""
    env = base_env(tmp)
    flag = "-DKDL_SM90_EPILOGUE_CHECKED"
    k90 = ("kernel k90 {\n  op = gemm; arch = sm90a;\n  A : bf16 row; B : bf16 col; D : bf16 row;\n"
           "  tile = (128, 128, 64); stages = auto; schedule = cooperative;\n}\n")
    spec = write(os.path.join(tmp, "h.kdl"), k90 + kernel("k80"))
    out = os.path.join(tmp, "out")

    def k90_compiles(e):
        return [x["argv"] for x in compiles(e) if any(a.endswith("k90.cu") for a in x["argv"])]

    def k80_compiles(e):
        return [x["argv"] for x in compiles(e) if any(a.endswith("k80.cu") for a in x["argv"])]

    # The second try is clean: the build succeeds and says how k90 was built.
    env1 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="k90", FAKE_PTXAS_CLEAN_WITH=flag,
                FAKE_NVCC_LOG=os.path.join(tmp, "log1"))
    r = build(spec, out, env1, "--no-cache")
    check(r.returncode == 0, f"the checked-epilogue retry: exit {r.returncode}", r.stderr)
    check(f"built with the checked one ({flag})" in r.stderr and "24 bytes spill stores" in r.stderr,
          "the retry is not reported", r.stderr)
    argvs = k90_compiles(env1)
    check(len(argvs) == 2 and flag not in argvs[0] and flag in argvs[1], "k90: a first compile, then one with the flag",
          str(argvs))
    check(all(flag not in a for a in k80_compiles(env1)), "k80 got the sm90a flag")
    rows = [x for x in ptxas_table(out, "h") if x["kernel"] == "k90"]
    check(rows and all(x["spill-st"] == "0" for x in rows), "the published report is not the clean one", str(rows))
    with open(os.path.join(out, "libh.ptxas.txt")) as f:
        report = f.read()
    check(f"k90:\n  kdlc: note: the epilogue lost performance in ptxas" in report and
          f"built with the checked one ({flag})" in report, "the published report does not say how k90 was built",
          report)
    # From the cache: both compiles are hits, the same outcome.
    cache_env = dict(env1, KDL_CACHE_DIR=os.path.join(tmp, "cache-retry"))
    r = build(spec, out, cache_env)
    check(r.returncode == 0, "retry, first build with the cache", r.stderr)
    r = build(spec, out, cache_env)
    check(r.returncode == 0 and "(cached)" in r.stderr and "built with the checked one" in r.stderr,
          "retry from the cache", r.stderr)
    # Clean only with the staged epilogue at 4 columns per call: the third compile (after the checked one) is kept.
    w4 = "-DKDL_EPILOGUE_MAX_VECTOR_WIDTH=4"
    env4 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="k90", FAKE_PTXAS_CLEAN_WITH=w4,
                FAKE_NVCC_LOG=os.path.join(tmp, "log4"))
    r = build(spec, out, env4, "--no-cache")
    check(r.returncode == 0, f"the narrower-epilogue retry: exit {r.returncode}", r.stderr)
    check(f"built with a narrower staged epilogue ({w4})" in r.stderr, "the narrower retry is not reported", r.stderr)
    argvs = k90_compiles(env4)
    check(len(argvs) == 3 and flag in argvs[1] and w4 in argvs[2] and flag not in argvs[2],
          "k90: first, checked, then 4 columns", str(argvs))
    # Every try spills: refused with the first compile's report, after the first compile and the five later tries.
    env2 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="k90", FAKE_NVCC_LOG=os.path.join(tmp, "log2"))
    r = build(spec, out, env2, "--no-cache")
    check(r.returncode == 1 and "kernel `k90` (k90.cu)" in r.stderr and "built with" not in r.stderr,
          f"every try spills: exit {r.returncode}", r.stderr)
    argvs = k90_compiles(env2)
    check(len(argvs) == 6, "every try spills: six compiles of k90", str(argvs))
    # The later tries write their own objects (the first compile's stays the one built, e.g. with
    # --allow-ptxas-warnings), and none is left behind.
    outs = [a[a.index("-o") + 1] for a in argvs]
    check(not outs[0].endswith(".try") and all(o == outs[0] + ".try" for o in outs[1:]),
          "the tries' objects are not their own", str(outs))
    check(not any(f.endswith(".try") for _, _, fs in os.walk(out) for f in fs), "a try's object was left behind")
    # An sm80-path kernel gets the narrower-epilogue tries only (4, then 2 columns per call), never the sm90a flag.
    env3 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="k80", FAKE_PTXAS_CLEAN_WITH=flag,
                FAKE_NVCC_LOG=os.path.join(tmp, "log3"))
    r = build(spec, out, env3, "--no-cache")
    check(r.returncode == 1 and "kernel `k80` (k80.cu)" in r.stderr, f"sm80 spill: exit {r.returncode}", r.stderr)
    argvs = k80_compiles(env3)
    check(len(argvs) == 3 and all(flag not in a for a in argvs) and w4 in argvs[1]
          and "-DKDL_EPILOGUE_MAX_VECTOR_WIDTH=2" in argvs[2], "an sm80 kernel: first, 4 columns, 2 columns", str(argvs))
    env5 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="k80", FAKE_PTXAS_CLEAN_WITH=w4,
                FAKE_NVCC_LOG=os.path.join(tmp, "log5"))
    r = build(spec, out, env5, "--no-cache")
    check(r.returncode == 0 and f"built with a narrower staged epilogue ({w4})" in r.stderr,
          f"sm80 spill, clean at 4 columns: exit {r.returncode}", r.stderr)
    check(len(k80_compiles(env5)) == 2, "sm80, clean at 4 columns: two compiles", str(k80_compiles(env5)))
    # kdlc ptxas-gate (kdl_add_kernels) does the same.
    src = write(os.path.join(tmp, "g", "k90.cu"), "int x;\n")
    obj = os.path.join(tmp, "g", "k90.o")
    for gencode, clean_with, expect in [("-gencode=arch=compute_90a,code=sm_90a", flag, 0),
                                        ("-gencode=arch=compute_90a,code=sm_90a", "-DKDL_EPILOGUE_MAX_VECTOR_WIDTH=2", 0),
                                        ("-gencode=arch=compute_90a,code=sm_90a", "", 1),
                                        ("-gencode=arch=compute_80,code=sm_80", flag, 1),
                                        ("-gencode=arch=compute_80,code=sm_80", "-DKDL_EPILOGUE_MAX_VECTOR_WIDTH=4", 0)]:
        e = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_CLEAN_WITH=clean_with, FAKE_NVCC_LOG=os.path.join(tmp, "logg"))
        r = subprocess.run([KDLC, "ptxas-gate", "--", FAKE_NVCC, gencode, "-Xptxas", "-v", "-c", src, "-o", obj],
                           env=e, capture_output=True, text=True)
        check(r.returncode == expect, f"ptxas-gate {gencode} clean_with={clean_with!r}: exit {r.returncode}", r.stderr)
        if expect == 0:
            check(f"({clean_with})" in r.stderr and os.path.exists(obj), "ptxas-gate: the retry", r.stderr)
            with open(obj + ".ptxas.txt") as f:
                check(f"({clean_with})" in f.read(), "ptxas-gate: OBJECT.ptxas.txt does not say how it was built")
        check(not os.path.exists(obj + ".kdl-try"), "ptxas-gate left a try's object behind")


def case_ptxas_gate_sm90a_col_vectors(tmp):
    """An sm90a kernel whose functor holds [col] vectors in registers (kColVectors, docs/perf-notes.md v45) gets one
    more later try, first: -DKDL_SM90_NO_COL_REGS (the epilogue loads them itself, as every build did before), then
    the ladder of a kernel without them; a kernel without [col] vectors never gets that flag, by `kdlc build` or by
    `kdlc ptxas-gate` (which reads the source too)."""
    env = base_env(tmp)
    nocol, checked = "-DKDL_SM90_NO_COL_REGS", "-DKDL_SM90_EPILOGUE_CHECKED"
    head = ("  op = gemm; arch = sm90a;\n  A : bf16 row; B : bf16 col; D : bf16 row;\n"
            "  tile = (128, 256, 64); stages = auto; schedule = cooperative;\n")
    spec = write(os.path.join(tmp, "c.kdl"),
                 "kernel kcol {\n" + head + "  epilogue { input bias : f32 [col]; D = relu(acc + bias); }\n}\n"
                 "kernel kplain {\n" + head + "}\n")
    out = os.path.join(tmp, "out")

    def argvs_of(e, name):
        return [x["argv"] for x in compiles(e) if any(a.endswith(name + ".cu") for a in x["argv"])]

    # Clean once the vectors are loaded by the epilogue: the second compile is kept, and the note says so.
    e1 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="kcol", FAKE_PTXAS_CLEAN_WITH=nocol,
              FAKE_NVCC_LOG=os.path.join(tmp, "log1"))
    r = build(spec, out, e1, "--no-cache")
    check(r.returncode == 0, f"the [col]-vector retry: exit {r.returncode}", r.stderr)
    check(f"built with its [col] vectors loaded by the epilogue ({nocol})" in r.stderr, "the retry is not reported",
          r.stderr)
    a = argvs_of(e1, "kcol")
    check(len(a) == 2 and nocol not in a[0] and nocol in a[1], "kcol: a first compile, then one with the flag", str(a))
    # Every try spills: the flag first, then the five tries of a kernel without vectors (seven compiles).
    e2 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="kcol", FAKE_NVCC_LOG=os.path.join(tmp, "log2"))
    r = build(spec, out, e2, "--no-cache")
    a = argvs_of(e2, "kcol")
    check(r.returncode == 1 and len(a) == 7 and nocol in a[1] and checked in a[2] and
          all(nocol not in x for x in a[2:]), "kcol: first, no [col] registers, then the checked epilogue ...", str(a))
    # A kernel without [col] vectors: the old ladder (checked first), never the flag.
    e3 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="kplain", FAKE_NVCC_LOG=os.path.join(tmp, "log3"))
    r = build(spec, out, e3, "--no-cache")
    a = argvs_of(e3, "kplain")
    check(r.returncode == 1 and len(a) == 6 and checked in a[1] and all(nocol not in x for x in a),
          "kplain: the ladder without the [col] try", str(a))
    # kdlc ptxas-gate reads the source the same way.
    for name, body, expect in [("g1.cu", "static constexpr int kColVectors = 1;\n", 0), ("g2.cu", "int x;\n", 1)]:
        src = write(os.path.join(tmp, "g", name), body)
        obj = src[:-3] + ".o"
        e = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_CLEAN_WITH=nocol, FAKE_NVCC_LOG=os.path.join(tmp, "logg"))
        r = subprocess.run([KDLC, "ptxas-gate", "--", FAKE_NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
                            "-c", src, "-o", obj], env=e, capture_output=True, text=True)
        check(r.returncode == expect, f"ptxas-gate {name}: exit {r.returncode}", r.stderr)


def case_ptxas_gate_more_warps(tmp):
    """A multistage GEMM tile on 4 warps of 128 accumulators per thread (128 x 128) has an 8-warp form in its
    NAME.cu (#ifdef KDL_MULTISTAGE_MORE_WARPS), and `kdlc build` compiles it as the last try, after the
    narrower epilogues, where every try of the 4-warp kernel spills; a kernel without one (64 x 64) never gets
    that try, by `kdlc build` or by `kdlc ptxas-gate`; and where the 8-warp form spills too the build is refused
    with the first report."""
    env = base_env(tmp)
    more = "-DKDL_MULTISTAGE_MORE_WARPS"
    w2 = "-DKDL_EPILOGUE_MAX_VECTOR_WIDTH=2"
    spec = write(os.path.join(tmp, "m.kdl"), kernel("k128", 128) + kernel("k64"))
    out = os.path.join(tmp, "out")

    def argvs_of(e, name):
        return [x["argv"] for x in compiles(e) if any(a.endswith(name + ".cu") for a in x["argv"])]

    env1 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_CLEAN_WITH=more, FAKE_NVCC_LOG=os.path.join(tmp, "log1"))
    r = build(spec, out, env1, "--no-cache")
    # k64 has no 8-warp form: its three compiles spill and the build is refused for it alone.
    check(r.returncode == 1 and "kernel `k64` (k64.cu)" in r.stderr and "kernel `k128`" not in r.stderr,
          f"k64 refused, k128 built: exit {r.returncode}", r.stderr)
    a128, a64 = argvs_of(env1, "k128"), argvs_of(env1, "k64")
    check(len(a64) == 3 and all(more not in a for a in a64), "k64: first, 4 columns, 2 columns, no 8-warp try", str(a64))
    check(len(a128) == 4 and more in a128[3] and all(more not in a for a in a128[:3]),
          "k128: first, 4 columns, 2 columns, then the 8-warp form", str(a128))
    check(f"built with the kernel's 8-warp form ({more})" in r.stderr and "on 4 warps at every epilogue width" in r.stderr,
          "the 8-warp try is not reported", r.stderr)
    # Only k128 in trouble: the build succeeds and the published report says how k128 was built.
    env2 = dict(env1, FAKE_PTXAS_ONLY="k128", FAKE_NVCC_LOG=os.path.join(tmp, "log2"))
    r = build(spec, out, env2, "--no-cache")
    check(r.returncode == 0, f"k128 through its 8-warp form: exit {r.returncode}", r.stderr)
    # Each later try is announced while the kernel compiles (minutes each for a heavy kernel).
    check("k128.cu: ptxas reports a performance loss" in r.stderr and f"later try 3 of 4: {more}" in r.stderr and
          "later try 4 of 4" not in r.stderr, "the later tries are not announced as they start", r.stderr)
    with open(os.path.join(out, "k128.cu")) as f:
        src = f.read()
    check("#ifdef KDL_MULTISTAGE_MORE_WARPS" in src and "128, 128, 64, 2, 4, 3" in src and "128, 128, 64, 2, 2, 3" in src,
          "k128.cu does not hold both forms (2 x 2 and 2 x 4 warps)", src)
    with open(os.path.join(out, "k64.cu")) as f:
        check("KDL_MULTISTAGE_MORE_WARPS" not in f.read(), "k64.cu has an 8-warp form")
    with open(os.path.join(out, "libm.ptxas.txt")) as f:
        report = f.read()
    check(f"built with the kernel's 8-warp form ({more})" in report, "the published report does not say it", report)
    # The 8-warp form spills too: refused after five compiles (first, 4, 2, 8 warps, 8 warps at 2 columns).
    env3 = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_ONLY="k128", FAKE_NVCC_LOG=os.path.join(tmp, "log3"))
    r = build(spec, out, env3, "--no-cache")
    a128 = argvs_of(env3, "k128")
    check(r.returncode == 1 and "kernel `k128` (k128.cu)" in r.stderr and "built with" not in r.stderr,
          f"every try spills: exit {r.returncode}", r.stderr)
    check(len(a128) == 5 and more in a128[4] and w2 in a128[4], "k128: five compiles, the last 8 warps at 2 columns",
          str(a128))
    # kdlc ptxas-gate: the 8-warp try only for a source that offers it.
    for text, expect in [("#ifdef KDL_MULTISTAGE_MORE_WARPS\nint x;\n#else\nint x;\n#endif\n", 0), ("int x;\n", 1)]:
        src = write(os.path.join(tmp, "g", "k.cu"), text)
        obj = os.path.join(tmp, "g", "k.o")
        e = dict(env, FAKE_PTXAS="spill", FAKE_PTXAS_CLEAN_WITH=more, FAKE_NVCC_LOG=os.path.join(tmp, "logg"))
        r = subprocess.run([KDLC, "ptxas-gate", "--", FAKE_NVCC, "-gencode=arch=compute_80,code=sm_80", "-Xptxas", "-v",
                            "-c", src, "-o", obj], env=e, capture_output=True, text=True)
        check(r.returncode == expect, f"ptxas-gate, 8-warp form offered: {expect == 0}: exit {r.returncode}", r.stderr)


def case_nvcc_flags(tmp):
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "k.kdl"), kernel("ka"))
    out = os.path.join(tmp, "out")
    r = build(spec, out, dict(env, KDL_NVCC_FLAGS="-lineinfo  -DKDL_A=1"), "--nvcc-flag=-DKDL_B=2", "--nvcc-flag",
              "-DKDL_C=3")
    check(r.returncode == 0, "build with extra flags", r.stderr)
    argv = compiles(env)[-1]["argv"]
    tail = argv[argv.index("-Xptxas"):]
    check(tail[:6] == ["-Xptxas", "-v", "-lineinfo", "-DKDL_A=1", "-DKDL_B=2", "-DKDL_C=3"],
          "extra flags are not after kdlc's, environment first", " ".join(argv))
    r = build(spec, out, env)
    check(r.returncode == 0 and "(cached)" not in r.stderr, "extra flags are not in the cache key", r.stderr)
    r = build(spec, out, env, "--nvcc-flag")
    check(r.returncode == 2 and "--nvcc-flag needs a flag" in r.stderr, "--nvcc-flag without a value", r.stderr)
    r = build(spec, out, env, "--nvcc-flag=")
    check(r.returncode == 2 and "--nvcc-flag needs a flag" in r.stderr, "--nvcc-flag= (empty)", r.stderr)
    r = kdlc(["build", "--help"], env)
    for opt in ("--allow-ptxas-warnings", "--nvcc-flag", "--verbose", "KDL_NVCC_FLAGS", "lib<stem>.ptxas.txt"):
        check(opt in r.stdout, f"kdlc build --help does not describe {opt}", r.stdout)


def find_real_nvcc():
    for c in (os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.access(c, os.X_OK):
            return c
    return None


def case_nvcc_spill(tmp):
    """Real nvcc: a kernel `check` accepts, compiled with device debug info (--nvcc-flag=-G) so that ptxas
    spills (check refuses every tile measured to spill: codegen/lower_tiling.cpp), is refused for its
    spills after its later tries; with --allow-ptxas-warnings it is built and its report written."""
    nvcc = find_real_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found")
        return
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "big.kdl"), "kernel kbig {\n  op = gemm; arch = sm80;\n  A : f32 row; B : f32 col; "
                 "D : f32 row;\n  tile = (128, 128, 32); stages = 2;\n}\n")
    out = os.path.join(tmp, "out")
    r = build(spec, out, env, "--nvcc-flag=-G", nvcc=nvcc)
    check(r.returncode == 1, f"the spilling kernel was built (exit {r.returncode})", r.stderr)
    check("kernel `kbig` (kbig.cu)" in r.stderr and "sm_80 spills registers for " in r.stderr
          and "bytes spill stores" in r.stderr, "the spill is not reported", r.stderr)
    check(not os.path.exists(os.path.join(out, "libbig.so")), "a library was written")
    # From the cache, the same answer.
    r = build(spec, out, env, "--nvcc-flag=-G", nvcc=nvcc)
    check(r.returncode == 1 and "(cached)" in r.stderr and "bytes spill stores" in r.stderr,
          "the cached spilling kernel was not refused", r.stderr)
    r = build(spec, out, env, "--nvcc-flag=-G", "--allow-ptxas-warnings", nvcc=nvcc)
    check(r.returncode == 0 and os.path.exists(os.path.join(out, "libbig.so")), "--allow-ptxas-warnings", r.stderr)
    rows = ptxas_table(out, "big")
    check(any(int(x["spill-st"]) > 0 for x in rows), "the report does not show the spill", str(rows))


def case_nvcc_sm90a(tmp):
    """Real nvcc, sm90a: the kernel compiles for sm_90a only and passes the gate with its report; the
    same kernel built with -G (device debug: ptxas ignores setmaxnreg and serializes wgmma) is refused,
    quoting both of ptxas's notes."""
    nvcc = find_real_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found")
        return
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "k90.kdl"), "kernel k90 {\n  op = gemm; arch = sm90a;\n  A : bf16 row; B : bf16 col; "
                 "D : bf16 row;\n  tile = (128, 128, 64);\n}\n")
    out = os.path.join(tmp, "out")
    launcher = write(os.path.join(tmp, "log-argv.sh"), f'#!/bin/sh\necho "$@" >> {tmp}/argv.log\nexec "$@"\n')
    os.chmod(launcher, 0o755)
    r = build(spec, out, env, "--launcher", launcher, nvcc=nvcc)
    check(r.returncode == 0, "the sm90a kernel", r.stderr)
    with open(os.path.join(tmp, "argv.log")) as f:
        argv = f.read().split()
    check([a for a in argv if "gencode" in a or a.startswith("-arch")] == ["-gencode=arch=compute_90a,code=sm_90a"],
          "the sm90a kernel is not compiled for sm_90a alone", " ".join(argv))
    rows = ptxas_table(out, "k90")
    check([(x["target"], x["spill-st"], x["spill-ld"]) for x in rows if "gemm_sm90_kernel<" in x["function"]] ==
          [("sm_90a", "0", "0")], "the sm90a report", str(rows))
    r = build(spec, out, env, "--nvcc-flag=-G", nvcc=nvcc)
    check(r.returncode == 1, f"the -G build was not refused (exit {r.returncode})", r.stderr)
    check("Potential Performance Loss: 'setmaxnreg' ignored" in r.stderr, "setmaxnreg ignored is not quoted", r.stderr)
    check("Potential Performance Loss: wgmma.mma_async instructions are serialized" in r.stderr,
          "serialized wgmma is not quoted", r.stderr)


# ---- one real-nvcc check of item 2's repro --------------------------------------------------------

def case_nvcc_smoke(tmp):
    nvcc = find_real_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found")
        return
    env = base_env(tmp)
    spec = write(os.path.join(tmp, "k.kdl"), kernel("ka"))
    out = os.path.join(tmp, "out")
    r = build(spec, out, env, nvcc=nvcc)
    check(r.returncode == 0, "real nvcc build", r.stderr)
    check(os.path.exists(os.path.join(out, "libk.so")), "no libk.so")
    # ptxas's report of a clean kernel: both targets, registers, no spills (the gate passed).
    rows = ptxas_table(out)
    entries = [x for x in rows if "gemm_sm80_kernel<" in x["function"]]
    check(sorted(x["target"] for x in entries) == ["sm_80", "sm_90"], "the report lacks a target", str(rows))
    check(all(0 < int(x["regs"]) <= 255 and x["spill-st"] == "0" == x["spill-ld"] for x in entries),
          "the report's registers/spills", str(rows))
    bad = write(os.path.join(tmp, "bad.h"), "#error this header must break the compile\n")
    r = build(spec, out, dict(env, NVCC_APPEND_FLAGS=f"-include {bad}"), nvcc=nvcc)
    check(r.returncode == 1 and "(cached)" not in r.stderr and "this header must break the compile" in r.stderr,
          "NVCC_APPEND_FLAGS did not reach the key", r.stderr)
    sccache_part(tmp, spec, env, nvcc)


def sccache_part(tmp, spec, env, nvcc):
    """--launcher sccache with the real nvcc: the second of two uncached kdlc builds is an sccache hit
    (a private sccache server and directory)."""
    sccache = shutil.which("sccache")
    if not sccache:
        print("note: sccache not installed; the sccache part of nvcc-smoke did not run")
        return
    env = dict(env, SCCACHE_DIR=os.path.join(tmp, "sccache"), SCCACHE_SERVER_PORT=str(free_port()),
               SCCACHE_IDLE_TIMEOUT="30")
    try:
        # Start the private server first: on a loaded machine its start can outlast the 10 s a client
        # waits for it ("Timed out waiting for server startup"), so give it a few tries.
        for _ in range(3):
            started = subprocess.run([sccache, "--start-server"], env=env, capture_output=True, text=True)
            if started.returncode == 0:
                break
            subprocess.run([sccache, "--stop-server"], env=env, capture_output=True)
        check(started.returncode == 0, "sccache --start-server", started.stderr)
        for i in range(2):
            r = build(spec, os.path.join(tmp, f"sccache-out{i}"), env, "--launcher", "sccache", "--no-cache", nvcc=nvcc)
            check(r.returncode == 0, f"build {i} with --launcher sccache", r.stderr)
        stats = subprocess.run([sccache, "--show-stats"], env=env, capture_output=True, text=True).stdout
        hits = [l for l in stats.splitlines() if l.startswith("Cache hits (CUDA)")]
        check(hits and hits[0].split()[-1] == "1", "the second build was not an sccache hit", stats)
    finally:
        subprocess.run([sccache, "--stop-server"], env=env, capture_output=True)


CASES = {
    "cache-key": case_cache_key, "cache-lru": case_cache_lru, "concurrent": case_concurrent,
    "interrupt": case_interrupt, "no-kernels": case_no_kernels, "emit-dir": case_emit_dir,
    "emit-atomic": case_emit_atomic, "cache-dir": case_cache_dir, "torch-cli": case_torch_cli, "torch-script": case_torch_script,
    "launcher": case_launcher, "distcc": case_distcc, "nvcc-smoke": case_nvcc_smoke,
    "ptxas-gate": case_ptxas_gate, "ptxas-gate-sm90a-retry": case_ptxas_gate_sm90a_retry,
    "ptxas-gate-sm90a-col-vectors": case_ptxas_gate_sm90a_col_vectors,
    "ptxas-gate-more-warps": case_ptxas_gate_more_warps, "nvcc-flags": case_nvcc_flags, "nvcc-spill": case_nvcc_spill,
    "nvcc-sm90a": case_nvcc_sm90a,
}


def main():
    global KDLC
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    a = ap.parse_args()
    KDLC = os.path.abspath(a.kdlc)
    tmp = tempfile.mkdtemp(prefix=f"kdl-build-{a.case}-")
    try:
        CASES[a.case](tmp)
    except Failure as e:
        print(f"FAIL: {a.case}: {e}")
        return 1
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", tmp], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"PASS: {a.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
