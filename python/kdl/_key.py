"""The cache key: a sha256 of a canonical JSON of everything that reaches the compilers.

Each component comes from one small function of a KeyContext, looked up by name when the key is
computed, so a test (or a user with an unusual toolchain) can replace any of them. Files enter by
content (their sha256), never by time."""

import dataclasses
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import sysconfig

from . import _kdlc
from ._cache import sha256_file

# The environment the build reads (kdlc build: KDL_NVCC_FLAGS, and nvcc itself: NVCC_PREPEND_FLAGS,
# NVCC_APPEND_FLAGS, NVCC_CCBIN; the extension's build script: CXX, CXXFLAGS, CUDA_HOME).
BUILD_ENV = ("KDL_NVCC_FLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CXX", "CXXFLAGS", "CUDA_HOME")


@dataclasses.dataclass
class KeyContext:
    spec: str            # absolute path of the spec
    deps: list           # absolute paths of the spec and every file it imports (kdlc's depfile)
    emit_dir: str        # kdlc emit --torch's output for this spec
    kdlc: str            # kdlc's path
    include_dir: str     # kdlc --include-dir
    nvcc: str            # nvcc's path, or None
    namespace: str       # the ops' namespace (the manifest's)


def _files_by_content(paths, base):
    return {os.path.relpath(p, base): sha256_file(p) for p in sorted(paths)}


def spec_sources(ctx):
    """The spec and every file it imports, by content, named relative to the spec's folder."""
    paths = set(ctx.deps) | {ctx.spec}
    return _files_by_content(paths, os.path.dirname(ctx.spec))


def emitted_files(ctx):
    """Everything kdlc emit --torch wrote: kernels, headers, the binding, its build script, the manifest."""
    return _files_by_content(_walk(ctx.emit_dir), ctx.emit_dir)


def kdl_headers(ctx):
    """Every file under the include directory's kdl/ folder (what the emitted code includes)."""
    return _files_by_content(_walk(os.path.join(ctx.include_dir, "kdl")), ctx.include_dir)


_binary_hashes = {}


def kdlc_identity(ctx):
    """kdlc --version, and the sha256 of the kdlc binary: a kdlc rebuilt from other sources under the
    same version number (its build flags live in the binary) must not reuse old builds."""
    real = os.path.realpath(ctx.kdlc)
    st = os.stat(real)
    memo = (real, st.st_size, st.st_mtime_ns, st.st_ino)
    if memo not in _binary_hashes:
        _binary_hashes[memo] = sha256_file(real)
    return {"version": _kdlc.version(ctx.kdlc), "sha256": _binary_hashes[memo]}


def nvcc_version(ctx):
    """nvcc's resolved path and `nvcc --version`; "none" without nvcc."""
    if not ctx.nvcc:
        return "none"
    return {"path": os.path.realpath(ctx.nvcc), "version": _version_output([ctx.nvcc, "--version"])}


def host_compiler(ctx):
    """`$CXX --version` (else `c++ --version`): the compiler of the binding's host code."""
    words = shlex.split(os.environ.get("CXX") or "c++")
    return _version_output(words + ["--version"]) if words else "none"


def build_env(ctx):
    """The environment variables the build reads (None when unset)."""
    return {name: os.environ.get(name) for name in BUILD_ENV}


def gpu_arch(ctx):
    """The current CUDA device's compute capability ("sm_90"), "none" without one."""
    from . import _torch
    torch = _torch.import_torch()
    try:
        if not torch.cuda.is_available():
            return "none"
        major, minor = torch.cuda.get_device_capability()
    except Exception:  # a driver that torch cannot use: no device
        return "none"
    return f"sm_{major}{minor}"


def torch_info(ctx):
    """PyTorch's version, its CUDA version and its C++ ABI flag (the binding links against libtorch)."""
    from . import _torch
    torch = _torch.import_torch()
    return {"version": str(torch.__version__), "cuda": torch.version.cuda,
            "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI)}


def python_abi(ctx):
    """The platform and Python ABI tag."""
    return {"soabi": sysconfig.get_config_var("SOABI"), "platform": sys.platform, "machine": platform.machine(),
            "implementation": sys.implementation.cache_tag}


def package_version(ctx):
    """The kdl package's version (its cache logic and the way it drives the build)."""
    from . import __version__
    return __version__


def namespace(ctx):
    return ctx.namespace


# Component name -> the function (by name, in this module) that computes it.
COMPONENTS = {
    "spec_sources": "spec_sources",
    "emitted_files": "emitted_files",
    "kdl_headers": "kdl_headers",
    "kdlc": "kdlc_identity",
    "nvcc": "nvcc_version",
    "host_compiler": "host_compiler",
    "build_env": "build_env",
    "gpu_arch": "gpu_arch",
    "torch": "torch_info",
    "python_abi": "python_abi",
    "kdl_version": "package_version",
    "namespace": "namespace",
}


def compose(ctx):
    """Every component of the key, by name."""
    this = sys.modules[__name__]
    return {name: getattr(this, fn)(ctx) for name, fn in COMPONENTS.items()}


def canonical(components):
    return json.dumps(components, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(components):
    return hashlib.sha256(canonical(components).encode("utf-8")).hexdigest()


def describe_change(old, new):
    """Says which components differ between two compositions ("kdl header kdl/epilogue.cuh changed")."""
    if old is None:
        return "new spec"
    what = []
    file_words = {"spec_sources": "spec file", "emitted_files": "emitted file", "kdl_headers": "kdl header"}
    # Causes first: an emitted file changes because a spec, an import or kdlc did.
    for name in sorted(COMPONENTS, key=lambda n: n == "emitted_files"):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        if name in file_words and isinstance(a, dict) and isinstance(b, dict):
            changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            what.append(f"{file_words[name]} {shown} changed")
        elif name == "build_env" and isinstance(a, dict) and isinstance(b, dict):
            what.append(", ".join(f"${k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)) + " changed")
        else:
            what.append(f"{name} changed")
    return "; ".join(what) or "unknown"


def _walk(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.isfile(p):
                out.append(p)
    return out


def _version_output(cmd):
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unavailable: {e}"
    return r.stdout.strip() if r.returncode == 0 else f"exit {r.returncode}: {r.stdout.strip()}"
