"""Fixtures of the kdl package's tests: a private cache, a fake kdlc and nvcc, fake PyTorch hooks."""

import json
import os
import stat
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import kdl  # noqa: E402
import kdl._load  # noqa: E402

import _fakes  # noqa: E402

# The environment kdl reads; each test starts without any of it.
KDL_ENV = ("KDLC", "KDL_CACHE_DIR", "XDG_CACHE_HOME", "KDL_VERBOSE", "KDL_NVCC", "CUDACXX", "KDL_INCLUDE_DIR",
           "KDL_NVCC_FLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CXX", "CXXFLAGS", "CUDA_HOME")

# The real kdlc, for the tests that need its diagnostics: $KDLC as the test run started, else build/kdlc.
REAL_KDLC = os.environ.get("KDLC") or (os.path.join(REPO, "build", "kdlc")
                                       if os.access(os.path.join(REPO, "build", "kdlc"), os.X_OK) else None)


def write_script(path, body):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"#!{sys.executable}\n" + body)
    os.chmod(path, 0o755)
    return path


class Env:
    """One test's world: tmp/cache (KDL_CACHE_DIR), tmp/bin/kdlc (fake), tmp/bin/nvcc (fake),
    tmp/include/kdl/ (the headers kdlc --include-dir names), tmp/specs/."""

    def __init__(self, tmp, monkeypatch):
        self.tmp = str(tmp)
        self.monkeypatch = monkeypatch
        self.cache_root = os.path.join(self.tmp, "cache")
        self.cache = os.path.join(self.cache_root, "torch")
        self.bin = os.path.join(self.tmp, "bin")
        self.include = os.path.join(self.tmp, "include")
        self.specs = os.path.join(self.tmp, "specs")
        self.build_log = os.path.join(self.tmp, "builds.jsonl")
        self.loads_file = os.path.join(self.tmp, "loads.jsonl")
        self.config_file = os.path.join(self.tmp, "fake_kdlc.json")
        for d in (self.bin, os.path.join(self.include, "kdl"), self.specs):
            os.makedirs(d)
        self.write(os.path.join(self.include, "kdl", "abi.h"), "// abi v1\n")
        self.write(os.path.join(self.include, "kdl", "epilogue.cuh"), "// epilogue v1\n")
        self.kdlc = write_script(os.path.join(self.bin, "kdlc"),
                                 f"import sys\nsys.path.insert(0, {HERE!r})\nimport fake_kdlc\n"
                                 "sys.exit(fake_kdlc.main(sys.argv[1:]))\n")
        self.nvcc = write_script(os.path.join(self.bin, "nvcc"),
                                 "import os\nprint('Cuda compilation tools, release ' + os.environ.get('FAKE_NVCC_RELEASE', '13.0'))\n")
        self.configure(version="kdlc 0.1.0", include_dir=self.include, build_log=self.build_log, build_sleep=0,
                       build_kill=False)
        for name in KDL_ENV:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("FAKE_KDLC_CONFIG", self.config_file)
        monkeypatch.setenv("KDL_CACHE_DIR", self.cache_root)
        monkeypatch.setenv("KDLC", self.kdlc)
        monkeypatch.setenv("KDL_NVCC", self.nvcc)
        monkeypatch.setattr(kdl._load, "_modules", {})
        monkeypatch.setattr(kdl._load, "_namespaces", {})
        self.fake_torch()

    def fake_torch(self, gpu_arch="sm_90", torch_info=None):
        _fakes.install(self.loads_file, gpu_arch=gpu_arch, torch_info=torch_info, set_attr=self.monkeypatch.setattr)

    def configure(self, **changes):
        cfg = {}
        if os.path.exists(self.config_file):
            with open(self.config_file, encoding="utf-8") as f:
                cfg = json.load(f)
        cfg.update(changes)
        with open(self.config_file, "w", encoding="utf-8") as f:
            json.dump(cfg, f)

    @staticmethod
    def write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def spec(self, name="mlp.kdl", text="kernel up\nkernel down\n"):
        return self.write(os.path.join(self.specs, name), text)

    def builds(self):
        if not os.path.exists(self.build_log):
            return []
        with open(self.build_log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def loads(self):
        return _fakes.loads(self.loads_file)

    def fresh_process(self):
        """Forgets what this process loaded, as a new process would."""
        self.monkeypatch.setattr(kdl._load, "_modules", {})
        self.monkeypatch.setattr(kdl._load, "_namespaces", {})

    def entries(self):
        if not os.path.isdir(self.cache):
            return []
        return sorted(n for n in os.listdir(self.cache) if kdl._cache.is_key(n))

    def strays(self):
        """What the cache holds besides entries, lock files and the spec records."""
        if not os.path.isdir(self.cache):
            return []
        return sorted(n for n in os.listdir(self.cache)
                      if not kdl._cache.is_key(n) and not n.endswith(".lock") and n != ".specs")


@pytest.fixture
def env(tmp_path, monkeypatch):
    return Env(tmp_path, monkeypatch)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)
