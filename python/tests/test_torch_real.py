"""kdl.load for real: kdlc build --torch with nvcc and PyTorch, then the ops on meta tensors (no GPU
needed). Skipped without PyTorch, without a kdlc that has --torch, or without nvcc."""

import os
import subprocess

import pytest

import kdl
import kdl._kdlc

from conftest import KDL_ENV, REAL_KDLC

torch = pytest.importorskip("torch")

TINY = """\
kernel tiny_gemm {
  op = gemm; arch = sm80;
  A : bf16 row; B : bf16 col; D : bf16 row;
  tile = (64, 64, 32); stages = 3;
  epilogue {
    param alpha = 1.0;
    D = alpha * acc;
  }
}
"""


def _kdlc_with_torch():
    if REAL_KDLC is None:
        pytest.skip("no real kdlc: set KDLC or build build/kdlc")
    r = subprocess.run([REAL_KDLC, "emit", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if "--torch" not in r.stdout:
        pytest.skip(f"{REAL_KDLC} has no --torch")
    return REAL_KDLC


def test_load_a_tiny_sm80_spec_and_call_its_op_on_meta_tensors(tmp_path, monkeypatch):
    kdlc = _kdlc_with_torch()
    for name in KDL_ENV:
        monkeypatch.delenv(name, raising=False)
    if kdl._kdlc.find_nvcc() is None:
        pytest.skip("no nvcc")
    monkeypatch.setenv("KDL_CACHE_DIR", str(tmp_path / "cache"))  # kdlc's compile cache goes there too
    spec = tmp_path / "tiny.kdl"
    spec.write_text(TINY)

    m = kdl.load(str(spec), kdlc=kdlc, verbose=True)
    assert m.namespace == "kdl_tiny" and m.kernels == ("tiny_gemm",)
    assert os.path.isfile(m.library) and m.library.startswith(str(tmp_path / "cache" / "torch"))
    assert m.manifest["torch"]["ops"][0]["name"] == "tiny_gemm"
    assert m.tiny_gemm is torch.ops.kdl_tiny.tiny_gemm
    schema = str(torch.ops.kdl_tiny.tiny_gemm.default._schema)
    assert "Tensor A" in schema and "Tensor B" in schema and "float alpha=1." in schema

    a = torch.empty(96, 64, dtype=torch.bfloat16, device="meta")
    b = torch.empty(48, 64, dtype=torch.bfloat16, device="meta").t()  # (k, n), column-major
    d = m.tiny_gemm(a, b)
    assert d.device.type == "meta" and d.dtype == torch.bfloat16 and tuple(d.shape) == (96, 48)
    d3 = m.tiny_gemm(a.expand(2, 96, 64), b.expand(2, 64, 48), alpha=0.5)
    assert tuple(d3.shape) == (2, 96, 48)
    with pytest.raises(RuntimeError, match=r"kdl_tiny\.tiny_gemm: A must be torch\.bfloat16"):
        m.tiny_gemm(a.to(torch.float16), b)
    with pytest.raises(RuntimeError, match=r"kdl_tiny\.tiny_gemm: B must be"):
        m.tiny_gemm(a, torch.empty(32, 48, dtype=torch.bfloat16, device="meta"))

    # The same entry again: the same module; the entry checks out as a hit.
    assert kdl.load(str(spec), kdlc=kdlc) is m
    assert kdl._cache.Cache(kdl.cache_dir()).check(m.key)[0] == "hit"
