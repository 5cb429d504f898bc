#!/usr/bin/env python3
"""Golden tests of kdlc's diagnostics, Carbon-style: every input carries its expectations inline.

A test is a `.kdl` file under tests/diagnostics/<dir>/ (files whose name starts with `_` are helpers,
e.g. imported files, not tests). Its last lines are the expectations, which
`scripts/update-goldens.sh diagnostics` writes:

    // CHECK:EXIT: 1
    // CHECK:STDERR: tile-shape/m_96_sm90a.kdl:9:10: error: tile M = 96 ... [tile-shape]
    // CHECK:STDERR:     9 |   tile = (96, 128, 64);
    // CHECK:STDOUT: ...

The runner strips that trailing block (so it moves no line number), copies the test's folder into a
temporary directory and runs kdlc there with the test's path relative to tests/diagnostics, so paths in
the output are stable (`tile-shape/m_96_sm90a.kdl:9:10`). Options:

    // ARGS: check %s other.kdl      the kdlc command line (default `check %s`); %s is the test's
                                     path, %d its folder, %t a fresh output folder

Every `check` test also runs with --diagnostics=json: the JSON must parse and name the same ids in the
same order as the text output. The output must hold no raw control byte (but tab and newline) and be
valid UTF-8: kdlc escapes what it echoes of the source (`\x1b`). An exit status other than 0, 1 or 2 (or a signal) always fails a test.

    run.py --kdlc PATH [--update] [TEST...]          run (or rewrite) the tests (default: all)
    run.py --kdlc PATH --coverage --def FILE         fail naming each id of diagnostic_kinds.def
                                                     that no test's expectations show
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = b"// CHECK:"
TIMEOUT_S = 60
# A diagnostic line of the text output: `file:line:col: error: message [id]` or `kdlc: error: ... [id]`.
DIAG_LINE = re.compile(r"^.*?: (error|warning): .*\[([a-z0-9-]+)\]\s*$")


def split_checks(data: bytes):
    """Returns (input bytes, list of (kind, text)) for a test file's bytes."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    n = len(lines)
    while n > 0 and lines[n - 1].startswith(CHECK):
        n -= 1
    body = b"".join(l + b"\n" for l in lines[:n])
    checks = []
    for l in lines[n:]:
        rest = l[len(CHECK):].decode("utf-8", "backslashreplace")
        kind, _, text = rest.partition(":")
        checks.append((kind, text[1:] if text.startswith(" ") else text))
    return body, checks


def escape(b: bytes) -> str:
    """Output bytes as text that fits on a comment line: invalid UTF-8 and control bytes escaped."""
    s = b.decode("utf-8", "backslashreplace")
    return "".join(c if (c >= " " and c != "\x7f") or c == "\t" else "\\x%02x" % ord(c) for c in s)


def out_lines(b: bytes):
    if b.endswith(b"\n"):
        b = b[:-1]
    return [escape(l).rstrip() for l in b.split(b"\n")] if b else []


def find_args(body: bytes):
    for line in body.split(b"\n"):
        m = re.match(rb"^\s*//\s*ARGS:\s*(.*)$", line)
        if m:
            return shlex.split(m.group(1).decode())
    return ["check", "%s"]


def all_tests():
    tests = []
    for d in sorted(os.listdir(HERE)):
        full = os.path.join(HERE, d)
        if not os.path.isdir(full) or d.startswith((".", "_")):
            continue
        for f in sorted(os.listdir(full)):
            if f.endswith(".kdl") and not f.startswith("_"):
                tests.append(f"{d}/{f}")
    return tests


def stage(tmp, rel):
    """Copies the test's folder (expectation blocks stripped) into tmp; returns the test's body."""
    d = os.path.dirname(rel)
    src_dir = os.path.join(HERE, d)
    dst_dir = os.path.join(tmp, d)
    os.makedirs(dst_dir, exist_ok=True)
    body = None
    for f in os.listdir(src_dir):
        p = os.path.join(src_dir, f)
        if not os.path.isfile(p):
            continue
        with open(p, "rb") as fh:
            data = fh.read()
        b = split_checks(data)[0] if f.endswith(".kdl") else data
        with open(os.path.join(dst_dir, f), "wb") as fh:
            fh.write(b)
        if f == os.path.basename(rel):
            body = b
    return body


def run_kdlc(kdlc, args, cwd):
    try:
        p = subprocess.run([kdlc] + args, cwd=cwd, capture_output=True, timeout=TIMEOUT_S)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return "timeout", e.stdout or b"", e.stderr or b""


def raw_bytes(b: bytes, where):
    """kdlc escapes what it echoes of the source: its output holds no control byte but tab and newline
    (an ESC ] 0 ; ... BEL of the source would retitle the user's terminal) and is valid UTF-8."""
    bad = sorted({c for c in b if (c < 0x20 and c not in (9, 10)) or c == 0x7F})
    problems = [f"{where} holds raw control bytes {', '.join('0x%02x' % c for c in bad)}"] if bad else []
    try:
        b.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(f"{where} is not valid UTF-8 ({e})")
    return problems


def ids_in_text(lines):
    return [m.group(2) for m in (DIAG_LINE.match(l) for l in lines) if m]


def check_json(kdlc, args, tmp, rc_text, text_ids):
    """Re-runs a `check` test with --diagnostics=json; returns a list of problems."""
    rc, out, err = run_kdlc(kdlc, args + ["--diagnostics=json"], tmp)
    problems = []
    if rc != rc_text:
        problems.append(f"--diagnostics=json exits {rc}, text exits {rc_text}")
    if rc == 2:
        return problems  # a bad command line prints usage, not a JSON document
    try:
        doc = json.loads(out.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return problems + [f"--diagnostics=json output is not valid JSON ({e}):\n{escape(out)[:2000]}"]
    if not isinstance(doc, dict) or not isinstance(doc.get("diagnostics"), list) or not isinstance(doc.get("errors"), int):
        return problems + ["--diagnostics=json: expected {\"diagnostics\": [...], \"errors\": N}"]
    ids = []
    for d in doc["diagnostics"]:
        for key in ("id", "severity", "message", "file", "line", "column", "notes"):
            if key not in d:
                problems.append(f"--diagnostics=json: a diagnostic lacks `{key}`: {d}")
        ids.append(d.get("id"))
    if ids != text_ids:
        problems.append(f"--diagnostics=json ids {ids} != text ids {text_ids}")
    errors = sum(1 for d in doc["diagnostics"] if d.get("severity") == "error")
    if doc["errors"] < errors:
        problems.append(f"--diagnostics=json: errors={doc['errors']} but {errors} error diagnostics")
    if err.strip():
        problems.append(f"--diagnostics=json also wrote to stderr:\n{escape(err)[:2000]}")
    return problems


def run_test(kdlc, rel, update):
    """Returns (ok, message)."""
    path = os.path.join(HERE, rel)
    with open(path, "rb") as fh:
        data = fh.read()
    _, checks = split_checks(data)
    tmp = tempfile.mkdtemp(prefix="kdl-diag-")
    try:
        body = stage(tmp, rel)
        outdir = os.path.join(os.path.dirname(rel), "out.tmp")
        subst = {"%s": rel, "%d": os.path.dirname(rel), "%t": outdir}
        args = [re.sub(r"%[sdt]", lambda m: subst[m.group(0)], a) for a in find_args(body)]
        rc, out, err = run_kdlc(kdlc, args, tmp)
        got = [("EXIT", str(rc))] + [("STDOUT", l) for l in out_lines(out)] + [("STDERR", l) for l in out_lines(err)]
        problems = []
        if rc not in (0, 1, 2):
            problems.append(f"kdlc crashed or failed internally (exit {rc}); run: cd <copy of tests/diagnostics> && kdlc {' '.join(args)}\n"
                            + escape(err)[-4000:])
        problems += raw_bytes(out, "stdout") + raw_bytes(err, "stderr")
        if args and args[0] == "check" and not any(a.startswith("--diagnostics") for a in args) and rc in (0, 1):
            problems += check_json(kdlc, args, tmp, rc, ids_in_text(out_lines(err)))
        if update:
            with open(path, "wb") as fh:
                fh.write(body)
                for kind, text in got:
                    fh.write(f"// CHECK:{kind}: {text}".rstrip().encode("utf-8") + b"\n")
            return (not problems, "\n".join(problems))
        want = [(k, t.rstrip()) for k, t in checks]
        if want != got:
            import difflib
            fmt = lambda xs: [f"// CHECK:{k}: {t}".rstrip() for k, t in xs]
            diff = "\n".join(difflib.unified_diff(fmt(want), fmt(got), "expected", "actual", lineterm=""))
            problems.append(f"output differs from the expectations (scripts/update-goldens.sh diagnostics rewrites them):\n{diff}")
        return (not problems, "\n".join(problems))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def coverage(def_path):
    ids = re.findall(r'^KDL_DIAG\(\s*\w+\s*,\s*"([^"]+)"', open(def_path).read(), re.M)
    shown = {}
    drift = []
    for rel in all_tests():
        with open(os.path.join(HERE, rel), "rb") as fh:
            _, checks = split_checks(fh.read())
        text = [t for k, t in checks if k == "STDERR"]
        found = set(ids_in_text(text))
        for k, t in checks:
            if k == "STDOUT":
                found.update(re.findall(r'"id"\s*:\s*"([a-z0-9-]+)"', t))
        for i in found:
            shown.setdefault(i, []).append(rel)
        folder = rel.split("/")[0]
        if folder in ids and folder not in found:
            drift.append(f"error: {rel} is in the folder of [{folder}] but its expectations do not show "
                         f"[{folder}] (shown: {', '.join(sorted(found)) or 'none'}); move it or fix the input")
    missing = [i for i in ids if i not in shown]
    for i in ids:
        print(f"{i:20} {', '.join(shown.get(i, ['-- NONE --']))}")
    unknown = sorted(set(shown) - set(ids))
    if unknown:
        print(f"error: tests show ids that diagnostic_kinds.def does not declare: {', '.join(unknown)}")
    for i in missing:
        print(f"error: no test in tests/diagnostics triggers [{i}]; add tests/diagnostics/{i}/<case>.kdl "
              f"and run scripts/update-goldens.sh diagnostics")
    for d in drift:
        print(d)
    return 1 if missing or unknown or drift else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kdlc")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--def", dest="defs", default=os.path.join(HERE, "..", "..", "dsl", "diagnostic_kinds.def"))
    ap.add_argument("tests", nargs="*")
    a = ap.parse_args()
    if a.coverage:
        return coverage(a.defs)
    if not a.kdlc:
        ap.error("--kdlc is required")
    kdlc = os.path.abspath(a.kdlc)
    tests = [os.path.relpath(os.path.abspath(t), HERE) if os.path.exists(t) else t for t in a.tests] or all_tests()
    failed = 0
    for rel in tests:
        ok, msg = run_test(kdlc, rel, a.update)
        if not ok:
            failed += 1
        if not ok or a.update or len(tests) > 1:
            print(f"{'PASS' if ok else 'FAIL'}{' (updated)' if a.update else ''}: {rel}")
        if msg:
            print(msg)
    if len(tests) > 1:
        print(f"{len(tests) - failed} of {len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
