"""The cache key: what each component holds, and that each one reaches the key."""

import hashlib
import os

import pytest

import kdl
from kdl import _cache, _key, _load


def components(env, spec, namespace=None):
    cache = _cache.Cache(_cache.prepare())
    comps, _manifest, _emitted = _load.key_components(cache, spec, env.kdlc, env.nvcc, namespace)
    return comps


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_components_are_the_documented_ones(env):
    comps = components(env, env.spec())
    assert sorted(comps) == sorted(["spec_sources", "emitted_files", "kdl_headers", "kdlc", "nvcc", "host_compiler",
                                    "build_env", "gpu_arch", "torch", "python_abi", "kdl_version", "namespace"])
    assert sorted(comps) == sorted(_key.COMPONENTS)


def test_spec_and_imports_by_content_relative_to_the_spec(env):
    env.write(os.path.join(env.specs, "common", "base.kdl"), "kernel shared\n")
    spec = env.spec(text='import "common/base.kdl";\nkernel up\n')
    comps = components(env, spec)
    assert comps["spec_sources"] == {"mlp.kdl": sha('import "common/base.kdl";\nkernel up\n'),
                                     os.path.join("common", "base.kdl"): sha("kernel shared\n")}


def test_emitted_files_headers_and_toolchain(env):
    comps = components(env, env.spec())
    assert sorted(comps["emitted_files"]) == sorted(["manifest.json", "up.h", "up.cu", "down.h", "down.cu",
                                                     "mlp_torch.cpp", "mlp_torch_build.py"])
    assert comps["kdl_headers"] == {os.path.join("kdl", "abi.h"): sha("// abi v1\n"),
                                    os.path.join("kdl", "epilogue.cuh"): sha("// epilogue v1\n")}
    assert comps["kdlc"]["version"] == "kdlc 0.1.0"
    with open(env.kdlc, "rb") as f:
        assert comps["kdlc"]["sha256"] == hashlib.sha256(f.read()).hexdigest()
    assert comps["nvcc"] == {"path": os.path.realpath(env.nvcc), "version": "Cuda compilation tools, release 13.0"}
    assert comps["build_env"] == {name: None for name in _key.BUILD_ENV}
    assert comps["gpu_arch"] == "sm_90"
    assert comps["torch"] == {"version": "2.99.0+fake", "cuda": "13.0", "cxx11_abi": True}
    assert comps["kdl_version"] == kdl.__version__
    assert comps["namespace"] == "kdl_mlp"
    assert comps["python_abi"]["implementation"]


def test_build_env_reads_the_variables_the_build_reads(env, monkeypatch):
    monkeypatch.setenv("KDL_NVCC_FLAGS", "-lineinfo")
    monkeypatch.setenv("CXXFLAGS", "-O1")
    comps = components(env, env.spec())
    assert comps["build_env"]["KDL_NVCC_FLAGS"] == "-lineinfo"
    assert comps["build_env"]["CXXFLAGS"] == "-O1"
    assert set(_key.BUILD_ENV) >= {"KDL_NVCC_FLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CXX", "CXXFLAGS"}


def test_without_nvcc_the_component_says_none(env, monkeypatch):
    cache = _cache.Cache(_cache.prepare())
    comps, _, _ = _load.key_components(cache, env.spec(), env.kdlc, None, None)
    assert comps["nvcc"] == "none"


def test_key_is_stable_and_canonical(env):
    spec = env.spec()
    a, b = components(env, spec), components(env, spec)
    assert a == b and _key.digest(a) == _key.digest(b)
    assert len(_key.digest(a)) == 64
    # Canonical: the order in which a dict was built does not matter.
    assert _key.digest({"x": 1, "y": {"b": 2, "a": 1}}) == _key.digest({"y": {"a": 1, "b": 2}, "x": 1})


@pytest.mark.parametrize("name", sorted(_key.COMPONENTS))
def test_each_component_function_reaches_the_key(env, monkeypatch, name):
    spec = env.spec()
    before = _key.digest(components(env, spec))
    monkeypatch.setattr(_key, _key.COMPONENTS[name], lambda ctx: "replaced")
    comps = components(env, spec)
    assert comps[name] == "replaced"
    assert _key.digest(comps) != before


def test_gpu_arch_and_torch_info_from_torch(monkeypatch):
    """The real functions, against a stand-in torch module (no GPU, no PyTorch needed)."""
    import types
    fake = types.SimpleNamespace(
        __version__="2.5.1", version=types.SimpleNamespace(cuda="12.4"), _C=types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=False),
        cuda=types.SimpleNamespace(is_available=lambda: True, get_device_capability=lambda: (9, 0)))
    monkeypatch.setattr(kdl._torch, "import_torch", lambda: fake)
    assert _key.gpu_arch(None) == "sm_90"
    assert _key.torch_info(None) == {"version": "2.5.1", "cuda": "12.4", "cxx11_abi": False}
    fake.cuda.is_available = lambda: False
    assert _key.gpu_arch(None) == "none"


def test_describe_change_names_what_changed():
    old = {"spec_sources": {"a.kdl": "1"}, "kdl_headers": {"kdl/x.cuh": "1"}, "build_env": {"CXX": None}, "nvcc": "a"}
    new = {"spec_sources": {"a.kdl": "1"}, "kdl_headers": {"kdl/x.cuh": "2"}, "build_env": {"CXX": "g++"}, "nvcc": "b"}
    text = _key.describe_change(old, new)
    assert "kdl header kdl/x.cuh changed" in text
    assert "$CXX changed" in text
    assert "nvcc changed" in text
    assert "spec" not in text
    assert _key.describe_change(None, new) == "new spec"
