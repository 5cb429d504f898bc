"""kdl.load's cache with a fake kdlc: hits, invalidation on every input, atomic entries, corrupt
entries, directory permissions."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import kdl
from kdl import _cache

from conftest import HERE, REPO, mode


def library_sha(module):
    with open(module.library, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Hits and the module

def test_first_load_builds_and_returns_the_ops(env, capsys):
    m = kdl.load(env.spec())
    assert len(env.builds()) == 1
    assert m.namespace == "kdl_mlp"
    assert m.kernels == ("up", "down")
    assert m.up == "torch.ops.kdl_mlp.up" and m.down == "torch.ops.kdl_mlp.down"
    assert m.ops == {"up": "torch.ops.kdl_mlp.up", "down": "torch.ops.kdl_mlp.down"}
    assert m.library == os.path.join(env.cache, m.key, "mlp_torch.so")
    assert m.manifest["spec"] == "mlp.kdl" and m.manifest["torch"]["namespace"] == "kdl_mlp"
    assert [l["path"] for l in env.loads()] == [m.library]
    err = capsys.readouterr().err
    assert "kdl: building mlp.kdl (cache miss: new spec) ..." in err
    with pytest.raises(AttributeError, match="kdl_mlp has no kernel 'sideways'; its kernels: up, down"):
        m.sideways


def test_build_gets_python_and_nvcc(env):
    spec = env.spec()
    kdl.load(spec)
    argv = env.builds()[0]["argv"]
    assert argv[:2] == ["build", "--torch"] and spec in argv
    assert argv[argv.index("--python") + 1] == sys.executable
    assert argv[argv.index("--nvcc") + 1] == env.nvcc
    assert os.path.dirname(argv[argv.index("-o") + 1]) == env.cache  # built inside the cache


def test_unchanged_spec_is_a_fast_hit_without_a_build(env, capsys):
    spec = env.spec()
    first = kdl.load(spec)
    env.fresh_process()
    capsys.readouterr()
    t = time.monotonic()
    second = kdl.load(spec)
    elapsed = time.monotonic() - t
    assert len(env.builds()) == 1
    assert elapsed < 1.0, f"a cache hit took {elapsed:.2f} s"
    assert second.library == first.library
    assert [l["path"] for l in env.loads()] == [first.library, first.library]
    assert "building" not in capsys.readouterr().err
    assert env.strays() == []  # the staging directory is gone


def test_verbose_hit_says_so(env, capsys, monkeypatch):
    spec = env.spec()
    kdl.load(spec)
    env.fresh_process()
    monkeypatch.setenv("KDL_VERBOSE", "1")
    capsys.readouterr()
    kdl.load(spec)
    assert "kdl: mlp.kdl from the cache (" in capsys.readouterr().err


def test_the_same_entry_twice_is_the_same_module(env):
    spec = env.spec()
    a = kdl.load(spec)
    b = kdl.load(spec)
    assert a is b
    assert len(env.loads()) == 1 and len(env.builds()) == 1


def test_rebuild_true_builds_again(env, capsys):
    spec = env.spec()
    kdl.load(spec)
    env.fresh_process()
    m = kdl.load(spec, rebuild=True)
    assert len(env.builds()) == 2
    assert "cache miss: rebuild=True" in capsys.readouterr().err
    assert _cache.Cache(env.cache).check(m.key)[0] == "hit"
    assert env.strays() == []


# ---------------------------------------------------------------------------------------------
# Every input invalidates

def _edit_header(env, mp):
    env.write(os.path.join(env.include, "kdl", "epilogue.cuh"), "// epilogue v2\n")


def _new_header(env, mp):
    env.write(os.path.join(env.include, "kdl", "sub", "new.cuh"), "// new\n")


def _kdlc_binary(env, mp):
    with open(env.kdlc, "a", encoding="utf-8") as f:
        f.write("# rebuilt\n")


def _other_nvcc(env, mp):
    other = os.path.join(env.tmp, "cuda2", "bin", "nvcc")
    os.makedirs(os.path.dirname(other))
    with open(env.nvcc, encoding="utf-8") as f:
        env.write(other, f.read())
    os.chmod(other, 0o755)
    mp.setenv("KDL_NVCC", other)


def _set_torch(**changes):
    def change(env, mp):
        info = {"version": "2.99.0+fake", "cuda": "13.0", "cxx11_abi": True}
        info.update(changes)
        env.fake_torch(torch_info=info)
    return change


def _setenv(name, value):
    return lambda env, mp: mp.setenv(name, value)


INPUTS = {
    "spec": (lambda env, mp: env.spec(text='import "common.kdl";\nkernel up\nkernel down\n// edited\n'),
             "spec file mlp.kdl changed"),
    "imported file": (lambda env, mp: env.write(os.path.join(env.specs, "common.kdl"), "// v2\n"),
                      "spec file common.kdl changed"),
    "kdl header": (_edit_header, "kdl header kdl/epilogue.cuh changed"),
    "new kdl header": (_new_header, "kdl header kdl/sub/new.cuh changed"),
    "kdlc version": (lambda env, mp: env.configure(version="kdlc 0.2.0"), "kdlc changed"),
    "kdlc binary": (_kdlc_binary, "kdlc changed"),
    "nvcc version": (_setenv("FAKE_NVCC_RELEASE", "13.1"), "nvcc changed"),
    "nvcc path": (_other_nvcc, "nvcc changed"),
    "KDL_NVCC_FLAGS": (_setenv("KDL_NVCC_FLAGS", "-lineinfo"), "$KDL_NVCC_FLAGS changed"),
    "NVCC_PREPEND_FLAGS": (_setenv("NVCC_PREPEND_FLAGS", "-G"), "$NVCC_PREPEND_FLAGS changed"),
    "NVCC_APPEND_FLAGS": (_setenv("NVCC_APPEND_FLAGS", "-DX=1"), "$NVCC_APPEND_FLAGS changed"),
    "NVCC_CCBIN": (_setenv("NVCC_CCBIN", "g++-12"), "$NVCC_CCBIN changed"),
    "CXX": (_setenv("CXX", "c++ -DKDL_TEST"), "$CXX changed"),
    "CXXFLAGS": (_setenv("CXXFLAGS", "-O1"), "$CXXFLAGS changed"),
    "CUDA_HOME": (_setenv("CUDA_HOME", "/opt/cuda-other"), "$CUDA_HOME changed"),
    "gpu arch": (lambda env, mp: env.fake_torch(gpu_arch="sm_80"), "gpu_arch changed"),
    "torch version": (_set_torch(version="2.100.0"), "torch changed"),
    "torch cuda version": (_set_torch(cuda="12.8"), "torch changed"),
    "torch ABI flag": (_set_torch(cxx11_abi=False), "torch changed"),
    "python ABI": (lambda env, mp: mp.setattr(kdl._key, "python_abi", lambda ctx: {"soabi": "other"}),
                   "python_abi changed"),
    "kdl version": (lambda env, mp: mp.setattr(kdl, "__version__", "9.9.9"), "kdl_version changed"),
}


@pytest.mark.parametrize("what", sorted(INPUTS))
def test_every_input_invalidates(env, monkeypatch, capsys, what):
    change, because = INPUTS[what]
    env.write(os.path.join(env.specs, "common.kdl"), "// v1\n")
    spec = env.spec(text='import "common.kdl";\nkernel up\nkernel down\n')
    first = kdl.load(spec)
    env.fresh_process()
    kdl.load(spec)
    assert len(env.builds()) == 1, "unchanged: a hit"
    change(env, monkeypatch)
    env.fresh_process()
    capsys.readouterr()
    second = kdl.load(spec)
    assert len(env.builds()) == 2, f"{what} changed: the next load must rebuild"
    assert second.key != first.key
    assert f"(cache miss: {because}" in capsys.readouterr().err
    # The old entry stays valid for its own inputs.
    assert _cache.Cache(env.cache).check(first.key)[0] == "hit"


def test_namespace_is_part_of_the_key(env):
    spec = env.spec()
    a = kdl.load(spec)
    b = kdl.load(spec, namespace="mlp_v2")
    assert len(env.builds()) == 2
    assert a.key != b.key and b.namespace == "mlp_v2" and b.up == "torch.ops.mlp_v2.up"


# ---------------------------------------------------------------------------------------------
# Atomic entries

def test_failed_build_leaves_nothing(env):
    spec = env.spec(text="kernel up\n// BUILDFAIL\n")
    with pytest.raises(kdl.BuildError) as e:
        kdl.load(spec)
    assert isinstance(e.value, RuntimeError)
    assert e.value.command[1:3] == ["build", "--torch"] and spec in e.value.command
    assert e.value.returncode == 1
    assert "error: 'boom' was not declared in this scope" in e.value.output
    text = str(e.value)
    assert "kdl: building mlp.kdl failed (exit 1)" in text
    assert "command: " + env.kdlc + " build --torch" in text
    assert "c++ -c mlp_torch.cpp -o x.o" in text and "'boom' was not declared" in text
    assert env.entries() == [] and env.strays() == [] and env.loads() == []


def test_build_killed_midway_leaves_nothing(env):
    env.configure(build_kill=True)
    spec = env.spec()
    with pytest.raises(kdl.BuildError, match=r"killed by signal 9"):
        kdl.load(spec)
    assert env.entries() == [] and env.strays() == [] and env.loads() == []
    env.configure(build_kill=False)
    m = kdl.load(spec)
    assert len(env.builds()) == 2
    assert env.loads()[-1]["sha256"] == library_sha(m)
    assert os.path.getsize(m.library) > 4096


def test_python_killed_midway_leaves_no_entry_and_its_leftovers_are_never_loaded(env):
    """A process killed during its build (SIGKILL: no cleanup ran) leaves its temporary directory; no
    entry appears, the next load builds again and sweeps what was left."""
    spec = env.spec()
    env.configure(build_sleep=60)
    script = ("import sys; sys.path[:0] = [{py!r}, {tests!r}]\nimport _fakes, kdl\n"
              "_fakes.install({loads!r})\nkdl.load({spec!r})\n").format(
        py=os.path.join(REPO, "python"), tests=HERE, loads=env.loads_file, spec=spec)
    proc = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    try:
        deadline = time.monotonic() + 30
        while not env.builds() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert env.builds(), "the build did not start"
        os.kill(proc.pid, signal.SIGKILL)
        os.kill(env.builds()[0]["pid"], signal.SIGKILL)  # its kdlc goes down with it, as in a crash
    finally:
        proc.kill()
        proc.wait()
    leftovers = env.strays()
    assert env.entries() == []
    assert any(n.startswith(".tmp-") for n in leftovers), leftovers
    env.configure(build_sleep=0)
    m = kdl.load(spec)
    assert len(env.builds()) == 2
    assert env.loads() == [{"pid": os.getpid(), "path": m.library, "sha256": library_sha(m)}]
    assert env.strays() == []


def test_spec_changed_during_the_build_is_not_cached(env):
    env.configure(build_suffix="// changed while building\n")
    with pytest.raises(RuntimeError, match="mlp.kdl .or a file it imports. changed while it was being built"):
        kdl.load(env.spec())
    assert env.entries() == [] and env.strays() == [] and env.loads() == []


def test_entry_json_records_the_components_and_hashes(env):
    m = kdl.load(env.spec())
    with open(os.path.join(m.entry, "entry.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert record["key"] == m.key and record["format"] == 1
    assert record["library"] == "mlp_torch.so" and record["library_sha256"] == library_sha(m)
    assert record["files"]["mlp_torch.so"]["sha256"] == library_sha(m)
    assert {"manifest.json", "up.cu", "libmlp.a"} <= set(record["files"])
    assert kdl._key.digest(record["components"]) == m.key


# ---------------------------------------------------------------------------------------------
# Corrupt entries are rebuilt, never loaded

def _truncate(entry):
    p = os.path.join(entry, "mlp_torch.so")
    with open(p, "r+b") as f:
        f.truncate(os.path.getsize(p) // 2)


def _flip_byte(entry):
    p = os.path.join(entry, "mlp_torch.so")
    with open(p, "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xFF]))


def _garble_json(entry):
    with open(os.path.join(entry, "entry.json"), "w") as f:
        f.write('{"format": 1, "key": "')


def _other_key(entry):
    p = os.path.join(entry, "entry.json")
    with open(p) as f:
        record = json.load(f)
    record["key"] = "0" * 64
    with open(p, "w") as f:
        json.dump(record, f)


CORRUPTIONS = {
    "truncated library": (_truncate, "mlp_torch.so has"),
    "library bytes changed": (_flip_byte, "mlp_torch.so's sha256 differs"),
    "library missing": (lambda e: os.unlink(os.path.join(e, "mlp_torch.so")), "mlp_torch.so is missing"),
    "entry.json garbled": (_garble_json, "entry.json is not valid JSON"),
    "entry.json missing": (lambda e: os.unlink(os.path.join(e, "entry.json")), "entry.json is missing"),
    "entry.json of another key": (_other_key, "entry.json names another key"),
    "manifest missing": (lambda e: os.unlink(os.path.join(e, "manifest.json")), "manifest.json is missing"),
}


@pytest.mark.parametrize("what", sorted(CORRUPTIONS))
def test_corrupt_entry_is_rebuilt_never_loaded(env, capsys, what):
    corrupt, reason = CORRUPTIONS[what]
    spec = env.spec()
    m = kdl.load(spec)
    good = library_sha(m)
    corrupt(m.entry)
    env.fresh_process()
    capsys.readouterr()
    again = kdl.load(spec)
    assert len(env.builds()) == 2
    err = capsys.readouterr().err
    assert f"kdl: the cache entry {m.entry} is corrupt ({reason}" in err
    assert "removing it and rebuilding" in err
    assert [l["sha256"] for l in env.loads()] == [good, good]  # only intact libraries were ever loaded
    assert library_sha(again) == good
    assert _cache.Cache(env.cache).check(again.key)[0] == "hit"
    assert env.strays() == []


# ---------------------------------------------------------------------------------------------
# The cache directory

def test_directories_are_private(env, monkeypatch):
    root = os.path.join(env.tmp, "a", "b", "cache")
    monkeypatch.setenv("KDL_CACHE_DIR", root)
    old = os.umask(0)
    try:
        m = kdl.load(env.spec())
    finally:
        os.umask(old)
    for d in (os.path.join(env.tmp, "a"), os.path.join(env.tmp, "a", "b"), root, os.path.join(root, "torch"), m.entry):
        assert mode(d) == 0o700, d
    assert mode(os.path.join(root, "torch", m.key + ".lock")) == 0o600
    assert kdl.cache_dir() == os.path.join(root, "torch")


@pytest.mark.parametrize("bits,who", [(0o777, "its group and others"), (0o770, "its group"), (0o703, "others")])
def test_writable_cache_dir_is_refused(env, bits, who):
    os.makedirs(env.cache, mode=0o700)
    os.chmod(env.cache_root, bits)
    with pytest.raises(PermissionError) as e:
        kdl.load(env.spec())
    assert f"refusing the cache directory {env.cache_root}: it is writable by {who} (mode {bits:04o})" in str(e.value)
    assert f"chmod go-w {env.cache_root}" in str(e.value)
    os.chmod(env.cache_root, 0o700)
    os.chmod(env.cache, 0o775)
    with pytest.raises(PermissionError, match=f"refusing the cache directory {env.cache}: it is writable by its group"):
        kdl.load(env.spec())
    assert env.builds() == []


def test_cache_dir_of_another_user_is_refused(env, monkeypatch):
    if os.geteuid() == 0:
        os.makedirs(env.cache_root, mode=0o700)
        os.chown(env.cache_root, 65534, 65534)
        root, owner = env.cache_root, "uid 65534"
    else:
        root, owner = "/", f"uid {os.stat('/').st_uid}"  # the file system's root: someone else's
        monkeypatch.setenv("KDL_CACHE_DIR", root)
    with pytest.raises(PermissionError) as e:
        kdl.load(env.spec())
    assert f"refusing the cache directory {root}: it belongs to {owner}" in str(e.value)
    assert "not to you" in str(e.value)
    assert env.builds() == []


def test_relative_cache_dir_is_refused_and_the_cwd_untouched(env, monkeypatch):
    cwd = os.path.join(env.tmp, "cwd")
    os.makedirs(cwd)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("KDL_CACHE_DIR", "cache")
    with pytest.raises(ValueError, match=r"\$KDL_CACHE_DIR='cache' is a relative path; kdl never keeps its cache in "
                                         r"the current directory"):
        kdl.load(env.spec())
    with pytest.raises(ValueError, match="relative"):
        kdl.cache_dir()
    monkeypatch.setenv("KDL_CACHE_DIR", env.cache_root)
    with pytest.raises(ValueError, match=r"cache_dir='here' is a relative path"):
        kdl.load(env.spec(), cache_dir="here")
    assert os.listdir(cwd) == []
    assert env.builds() == []


def test_cache_dir_defaults(env, monkeypatch):
    monkeypatch.delenv("KDL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.join(env.tmp, "xdg"))
    assert kdl.cache_dir() == os.path.join(env.tmp, "xdg", "kdl", "torch")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # ignored, as the XDG spec says
    monkeypatch.setenv("HOME", os.path.join(env.tmp, "home"))
    assert kdl.cache_dir() == os.path.join(env.tmp, "home", ".cache", "kdl", "torch")
    assert mode(os.path.join(env.tmp, "home", ".cache")) == 0o700


def test_cache_dir_argument_holds_the_entries(env):
    mine = os.path.join(env.tmp, "mine")
    m = kdl.load(env.spec(), cache_dir=mine)
    assert m.entry == os.path.join(mine, m.key) and mode(mine) == 0o700
    assert not os.path.exists(env.cache_root)


def test_clear_cache(env):
    a = kdl.load(env.spec())
    kdl.load(env.spec("other.kdl", "kernel x\n"))
    assert len(env.entries()) == 2
    assert kdl.clear_cache() == 2
    assert env.entries() == [] and env.strays() == []
    assert not os.path.exists(a.entry)
    env.fresh_process()
    kdl.load(env.spec())
    assert len(env.builds()) == 3


def test_a_build_sweeps_abandoned_staging_directories_only(env):
    os.makedirs(env.cache, mode=0o700)
    os.chmod(env.cache_root, 0o700)
    dead, young, live = (os.path.join(env.cache, f".staging-{n}") for n in ("dead", "young", "live"))
    for d in (dead, young, live):
        os.makedirs(d)
    old = time.time() - 3600
    os.utime(dead, (old, old))
    os.utime(live, (old, old))
    holder = _cache.FileLock(os.path.join(live, ".lock"))  # a process still emitting into it
    assert holder.acquire()
    try:
        kdl.load(env.spec())
        assert not os.path.exists(dead)
        assert os.path.isdir(young) and os.path.isdir(live)
    finally:
        holder.release()


def test_a_replaced_component_function_still_builds_and_hits(env, monkeypatch):
    monkeypatch.setattr(kdl._key, "emitted_files", lambda ctx: "mine")
    spec = env.spec()
    m = kdl.load(spec)
    assert m.manifest["torch"]["namespace"] == "kdl_mlp"
    env.fresh_process()
    kdl.load(spec)
    assert len(env.builds()) == 1
