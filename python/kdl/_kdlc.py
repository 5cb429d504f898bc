"""Finding kdlc and nvcc, running kdlc, and turning what it prints into kdl's errors."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

from ._errors import BuildError, KdlcNotFound, SpecError

# A located diagnostic, as kdlc prints it: `file:line:col: error: message [id]`.
_LOCATED_ERROR = re.compile(r"^.+:\d+:\d+: error: ", re.MULTILINE)


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_kdlc(kdlc=None):
    """kdlc= (a path, or a name looked up on PATH), else $KDLC, else `kdlc` on PATH."""
    how = "Point kdl to kdlc with kdl.load(..., kdlc='/path/to/kdlc'), $KDLC, or by putting kdlc on PATH " \
          "(`cmake --build build` builds it as build/kdlc)."
    for origin, value in (("kdlc=", kdlc), ("$KDLC", os.environ.get("KDLC") or None)):
        if value is None:
            continue
        value = os.fspath(value)
        found = value if os.sep in value else shutil.which(value)
        if found and _executable(found):
            return os.path.abspath(found)
        raise KdlcNotFound(f"kdl: {origin} names {value!r}, which is not an executable file. {how}")
    found = shutil.which("kdlc")
    if found:
        return os.path.abspath(found)
    raise KdlcNotFound(f"kdl: kdlc not found: no kdlc= argument, $KDLC is not set and PATH has no kdlc. {how}")


def find_nvcc(nvcc=None):
    """The nvcc kdlc build would use: nvcc=, $KDL_NVCC, $CUDACXX, nvcc on PATH, /usr/local/cuda/bin/nvcc.
    None when there is none (the build then fails with kdlc's message)."""
    if nvcc is not None:
        value = os.fspath(nvcc)
        found = value if os.sep in value else shutil.which(value)
        if not found or not _executable(found):
            raise FileNotFoundError(f"kdl: nvcc={value!r} is not an executable file")
        return os.path.abspath(found)
    for value in (os.environ.get("KDL_NVCC"), os.environ.get("CUDACXX")):
        if value:
            found = value if os.sep in value else shutil.which(value)
            if found and _executable(found):
                return os.path.abspath(found)
    found = shutil.which("nvcc")
    if found:
        return os.path.abspath(found)
    if _executable("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda/bin/nvcc"
    return None


def _run(cmd, **kw):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, errors="replace", **kw)


def version(kdlc):
    r = _run([kdlc, "--version"])
    if r.returncode != 0:
        raise BuildError(f"kdl: {kdlc} --version failed", [kdlc, "--version"], r.returncode, r.stdout + r.stderr)
    return r.stdout.strip()


def include_dir(kdlc):
    """The kdl include directory kdlc uses (`kdlc --include-dir`)."""
    cmd = [kdlc, "--include-dir"]
    r = _run(cmd)
    out = r.stdout.strip()
    if r.returncode != 0 or not out:
        raise BuildError("kdl: kdlc found no kdl include directory", cmd, r.returncode, r.stdout + r.stderr,
                         hint="set $KDL_INCLUDE_DIR to the folder that holds kdl/ (the repository's include/)"
                         if r.returncode == 1 else _old_kdlc_hint(r))
    if not os.path.isdir(os.path.join(out, "kdl")):
        raise BuildError(f"kdl: kdlc's include directory {out} has no kdl/ folder", cmd, r.returncode, r.stdout + r.stderr)
    return os.path.abspath(out)


def _old_kdlc_hint(r):
    text = r.stdout + r.stderr
    if r.returncode == 2 and ("--torch" in text or "--include-dir" in text):
        return "this kdlc predates PyTorch support (kdlc emit --torch, kdlc --include-dir): build a newer one"
    return None


def _torch_options(namespace):
    return ["--torch"] + (["--torch-namespace", namespace] if namespace else [])


def emit(kdlc, spec, out_dir, depfile, namespace=None):
    """kdlc emit --torch: raises SpecError with kdlc's located diagnostics when the spec has errors."""
    cmd = [kdlc, "emit", *_torch_options(namespace), spec, "-o", out_dir, "--depfile", depfile]
    r = _run(cmd)
    if r.returncode == 0:
        return r.stderr
    if r.returncode == 1 and _LOCATED_ERROR.search(r.stderr):
        raise SpecError(spec, r.stderr)
    raise BuildError(f"kdl: kdlc emit failed for {spec}", cmd, r.returncode, r.stdout + r.stderr,
                     hint=_old_kdlc_hint(r))


def build(kdlc, spec, out_dir, nvcc=None, namespace=None, verbose=False):
    """kdlc build --torch into out_dir. Verbose: kdlc's progress goes to stderr as it comes; else it is
    kept for the error. Interrupted (Ctrl-C), kdlc is asked to stop its compilers (SIGTERM) first."""
    cmd = [kdlc, "build", *_torch_options(namespace), spec, "-o", out_dir, "--python", sys.executable]
    if nvcc:
        cmd += ["--nvcc", nvcc]
    if verbose:
        print(f"kdl: {shlex.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if verbose:
                sys.stderr.write(line)
                sys.stderr.flush()
        rc = proc.wait()
    except BaseException:
        _stop(proc)
        raise
    finally:
        proc.stdout.close()
    output = "".join(lines)
    if rc == 0:
        return output
    # Not SpecError even when it looks located: emit accepted the spec, and compilers print
    # `file:line:col: error:` too.
    raise BuildError(f"kdl: building {os.path.basename(spec)} failed", cmd, rc, output, hint=_old_kdlc_hint(
        subprocess.CompletedProcess(cmd, rc, output, "")))


def _stop(proc):
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)  # kdlc stops its compilers and removes its temporary files
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass
