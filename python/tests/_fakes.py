"""Fake PyTorch hooks for kdl, shared by conftest.py and the worker processes of the locking test:
loading a library records (pid, path, sha256 of what was loaded) in a JSON-lines file."""

import hashlib
import json
import os


def install(loads_file, gpu_arch="sm_90", torch_info=None, set_attr=setattr):
    """Replaces kdl's PyTorch hooks (set_attr: pytest's monkeypatch.setattr, to undo it after a test)."""
    import kdl._key
    import kdl._torch

    def load_library(path):
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(b"FAKE-SO "):
            raise OSError(f"fake load_library: {path} is not a fake library")
        with open(loads_file, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "path": path, "sha256": hashlib.sha256(data).hexdigest()}) + "\n")

    def op(namespace, name):
        return f"torch.ops.{namespace}.{name}"

    info = torch_info or {"version": "2.99.0+fake", "cuda": "13.0", "cxx11_abi": True}
    set_attr(kdl._torch, "load_library", load_library)
    set_attr(kdl._torch, "op", op)
    set_attr(kdl._key, "gpu_arch", lambda ctx: gpu_arch)
    set_attr(kdl._key, "torch_info", lambda ctx: dict(info))


def loads(loads_file):
    if not os.path.exists(loads_file):
        return []
    with open(loads_file, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
