"""kdl's errors: a spec error shows kdlc's located diagnostic, a build failure the command and the
compiler's output (test_cache.py), a missing kdlc says how to point to one, a namespace loaded from
another build says to restart."""

import os
import subprocess
import sys

import pytest

import kdl

from conftest import REAL_KDLC, write_script


# ---------------------------------------------------------------------------------------------
# SpecError

def test_spec_error_carries_the_located_diagnostic(env):
    spec = env.spec(text="kernel up\n  ERROR here\n")
    with pytest.raises(kdl.SpecError) as e:
        kdl.load(spec)
    assert isinstance(e.value, ValueError)
    assert e.value.spec == spec
    assert f"{spec}:2:3: error: a fake error [fake-error]" in e.value.diagnostics
    assert "  ERROR here\n" in str(e.value) and "^~~~~" in str(e.value)
    assert env.builds() == [] and env.entries() == [] and env.strays() == []


def test_error_in_an_imported_file_is_located_there(env):
    common = env.write(os.path.join(env.specs, "common.kdl"), "// fine\nERROR\n")
    with pytest.raises(kdl.SpecError, match=f"{common}:2:1: error: a fake error"):
        kdl.load(env.spec(text='import "common.kdl";\nkernel up\n'))


def test_a_spec_without_kernels_is_a_spec_error(env):
    with pytest.raises(kdl.SpecError, match="defines no kernels; there is nothing to load"):
        kdl.load(env.spec(text="// nothing\n"))
    assert env.builds() == []


def kdlc_has_torch(kdlc):
    r = subprocess.run([kdlc, "emit", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return "--torch" in r.stdout


@pytest.fixture
def real_kdlc(env):
    """The real kdlc ($KDLC when the tests started, else build/kdlc). One without --torch yet is run
    through a shim that drops the --torch options: its front end reports the errors either way."""
    if REAL_KDLC is None:
        pytest.skip("no real kdlc: set KDLC or build build/kdlc")
    if kdlc_has_torch(REAL_KDLC):
        return REAL_KDLC
    return write_script(os.path.join(env.bin, "kdlc-without-torch"), (
        "import os, sys\nargs, skip = [], False\n"
        "for a in sys.argv[1:]:\n"
        "    if skip: skip = False; continue\n"
        "    if a == '--torch-namespace': skip = True; continue\n"
        "    if a != '--torch': args.append(a)\n"
        f"os.execv({REAL_KDLC!r}, [{REAL_KDLC!r}] + args)\n"))


def test_real_kdlc_spec_error(env, real_kdlc):
    spec = env.spec("bad.kdl", (
        "kernel k {\n"
        "  op = gemm; arch = sm80;\n"
        "  A : bf16 row; B : bf16 col; D : bf16 row;\n"
        "  tile = (128, 128, 33);\n"
        "}\n"))
    with pytest.raises(kdl.SpecError) as e:
        kdl.load(spec, kdlc=real_kdlc)
    text = str(e.value)
    assert f"{spec}:4:" in text and ": error: " in text and "[field-range]" in text, text
    assert "  tile = (128, 128, 33);" in text and "^" in text  # the source line and the caret
    assert e.value.diagnostics.rstrip("\n") == text
    assert env.builds() == [] and env.entries() == []


def test_real_kdlc_missing_import(env, real_kdlc):
    spec = env.spec("imp.kdl", 'import "nowhere.kdl";\n')
    with pytest.raises(kdl.SpecError, match=r"imp\.kdl:1:\d+: error: .*\[import-not-found\]"):
        kdl.load(spec, kdlc=real_kdlc)


# ---------------------------------------------------------------------------------------------
# Finding kdlc

def test_kdlc_not_found_says_how_to_point_to_it(env, monkeypatch):
    monkeypatch.delenv("KDLC")
    monkeypatch.setenv("PATH", os.path.join(env.tmp, "empty"))
    with pytest.raises(kdl.KdlcNotFound) as e:
        kdl.load(env.spec())
    assert isinstance(e.value, RuntimeError)
    text = str(e.value)
    assert "kdlc not found" in text and "kdlc='/path/to/kdlc'" in text and "$KDLC" in text and "PATH" in text


def test_kdlc_named_but_missing(env, monkeypatch):
    missing = os.path.join(env.tmp, "nope", "kdlc")
    monkeypatch.setenv("KDLC", missing)
    with pytest.raises(kdl.KdlcNotFound, match=r"\$KDLC names '.*nope/kdlc', which is not an executable file"):
        kdl.load(env.spec())
    with pytest.raises(kdl.KdlcNotFound, match=r"kdlc= names '.*nope/kdlc', which is not an executable file"):
        kdl.load(env.spec(), kdlc=missing)


def test_kdlc_lookup_order(env, monkeypatch):
    os.makedirs(os.path.join(env.tmp, "path"))
    other = write_script(os.path.join(env.tmp, "path", "kdlc"), "")
    monkeypatch.setenv("PATH", os.path.join(env.tmp, "path") + os.pathsep + os.environ["PATH"])
    assert kdl._kdlc.find_kdlc(env.kdlc) == env.kdlc            # the argument first
    assert kdl._kdlc.find_kdlc() == env.kdlc                    # then $KDLC
    monkeypatch.delenv("KDLC")
    assert kdl._kdlc.find_kdlc() == other                       # then PATH


def test_kdlc_without_torch_support(env):
    env.configure(no_torch=True)
    with pytest.raises(kdl.BuildError) as e:
        kdl.load(env.spec())
    assert "kdlc emit failed" in str(e.value) and "unknown option --torch" in str(e.value)
    assert "this kdlc predates PyTorch support" in str(e.value)


def test_kdlc_without_include_dir(env):
    env.configure(include_dir=None)
    with pytest.raises(kdl.BuildError, match=r"kdlc found no kdl include directory(.|\n)*set \$KDL_INCLUDE_DIR"):
        kdl.load(env.spec())


def test_nvcc_argument_must_exist(env):
    with pytest.raises(FileNotFoundError, match=r"nvcc='/no/nvcc' is not an executable file"):
        kdl.load(env.spec(), nvcc="/no/nvcc")


# ---------------------------------------------------------------------------------------------
# Arguments

def test_missing_spec(env):
    with pytest.raises(FileNotFoundError, match="no spec 'nowhere.kdl'"):
        kdl.load("nowhere.kdl")


def test_namespace_must_be_an_identifier(env):
    with pytest.raises(ValueError, match=r"namespace='my-ops' is not a C identifier"):
        kdl.load(env.spec(), namespace="my-ops")


# ---------------------------------------------------------------------------------------------
# One namespace, one build per process

def test_same_namespace_from_another_build_is_refused(env):
    spec = env.spec()
    first = kdl.load(spec)
    env.spec(text="kernel up\nkernel down\nkernel extra\n")
    with pytest.raises(kdl.NamespaceConflict) as e:
        kdl.load(spec)
    assert isinstance(e.value, RuntimeError)
    text = str(e.value)
    assert "the namespace kdl_mlp is already loaded in this process from another build of mlp.kdl" in text
    assert first.library in text and "restart the process" in text and "namespace=" in text
    assert len(env.builds()) == 2 and len(env.loads()) == 1  # built (for the next process), not loaded
    # Another namespace loads beside it; a new process gets the new build from the cache.
    other = kdl.load(spec, namespace="kdl_mlp_v2")
    assert other.kernels == ("up", "down", "extra")
    env.fresh_process()
    fresh = kdl.load(spec)
    assert fresh.kernels == ("up", "down", "extra") and len(env.builds()) == 3


def test_verbose_build_streams_kdlc(env, capsys):
    kdl.load(env.spec(), verbose=True)
    err = capsys.readouterr().err
    assert "kdlc: building mlp (fake)" in err and " build --torch " in err and "kdl: built mlp.kdl in " in err


def test_import_kdl_does_not_import_torch():
    code = "import sys; sys.path.insert(0, %r); import kdl; print('torch' in sys.modules)" % os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert out.strip() == "False"
