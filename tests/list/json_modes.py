#!/usr/bin/env python3
"""Every machine-readable mode of `kdlc list` and `kdlc check` prints exactly one JSON document on
stdout (issue 6, item 14): each combination of --json, --plan and --diagnostics=text|json, on a spec
that lists, one whose lowering fails (--plan reports [unsupported]) and one with errors (including a
control byte, which the JSON must escape). `json.loads` of the whole of stdout fails on a second
document ("Extra data") and on invalid UTF-8.

    json_modes.py --kdlc PATH
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

BROKEN = b"kernel k {\n  op = gemm; arch = sm80;\n  tile = (96, 128, 32)\n}\nlet s = \"\x1b]0;title\x07\";\n"


def one_document(out: bytes, what: str, problems):
    try:
        return json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        problems.append(f"{what}: stdout is not exactly one JSON document ({e}):\n{out[:2000]!r}")
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    args = ap.parse_args()
    args.kdlc = os.path.abspath(args.kdlc)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        broken = os.path.join(tmp, "broken.kdl")
        with open(broken, "wb") as fh:
            fh.write(BROKEN)
        inputs = [("templates.kdl", HERE, 0), ("conv.kdl", HERE, None), (broken, tmp, 1)]
        for (f, cwd, want_rc), json_flag, plan, diags in itertools.product(
                inputs, (False, True), (False, True), ("text", "json")):
            cmd = ["list", f] + (["--json"] if json_flag else []) + (["--plan"] if plan else []) + \
                  [f"--diagnostics={diags}"]
            what = "kdlc " + " ".join(cmd)
            p = subprocess.run([args.kdlc] + cmd, cwd=cwd, capture_output=True, timeout=60)
            if p.returncode not in (0, 1) or (want_rc is not None and p.returncode != want_rc):
                problems.append(f"{what}: exit {p.returncode}\n{p.stderr.decode(errors='replace')[-2000:]}")
                continue
            if not (json_flag or diags == "json"):
                continue  # a text mode
            doc = one_document(p.stdout, what, problems)
            if doc is None:
                continue
            key = "plans" if plan else "kernels"
            if not isinstance(doc.get(key), list):
                problems.append(f"{what}: the document has no `{key}` array: {list(doc)}")
            if diags == "json":
                if (doc.get("errors", 0) > 0) != (p.returncode == 1):
                    problems.append(f"{what}: `errors` is {doc.get('errors')} but kdlc exits {p.returncode}")
                if not isinstance(doc.get("diagnostics"), list):
                    problems.append(f"{what}: diagnostics were not folded into the document")
                elif p.returncode and not doc["diagnostics"]:
                    problems.append(f"{what}: exits 1 but the document holds no diagnostics")
            elif p.returncode and not p.stderr:
                problems.append(f"{what}: exits 1 but printed no text diagnostics on stderr")
            if plan and p.returncode == 0:
                for pl in doc.get(key, []):
                    d = pl.get("decisions")
                    if not pl.get("name") or not d or not all({"what", "value", "why"} <= set(x) for x in d):
                        problems.append(f"{what}: plan without a name or decisions (what/value/why): {pl!r:.300}")
        # `kdlc check`: JSON diagnostics are one document; --emit's text cannot join them.
        for f, cwd in (("templates.kdl", HERE), (broken, tmp)):
            p = subprocess.run([args.kdlc, "check", f, "--diagnostics=json"], cwd=cwd, capture_output=True, timeout=60)
            one_document(p.stdout, f"kdlc check {f} --diagnostics=json", problems)
            p = subprocess.run([args.kdlc, "check", f, "--emit=specs", "--diagnostics=json"], cwd=cwd,
                               capture_output=True, timeout=60)
            if p.returncode != 2 or p.stdout:
                problems.append(f"kdlc check {f} --emit=specs --diagnostics=json: want a usage error (exit 2, "
                                f"nothing on stdout), got exit {p.returncode} and {p.stdout[:200]!r}")
    for pr in problems:
        print(pr, file=sys.stderr)
    print(f"{'FAIL' if problems else 'ok'}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
