#!/usr/bin/env python3
"""Splits the kernels of one spec into those the current kdlc generates and those it refuses.

usage: tests/gpu/triage.py KDLC SPEC

Asks `kdlc list --json` for every kernel of SPEC, then `kdlc check` and `kdlc list --plan` (both with
--diagnostics=json) for [unsupported] errors, which name their kernel ("kernel `NAME`: reason").
Prints one line per kernel, tab-separated:
    BUILD     NAME
    NOTBUILT  NAME  REASON        (every [unsupported] reason of the kernel, joined by "; ")
or, when the spec itself does not pass the front end (an error that is not a kernel's
[unsupported]), one line per kernel it could list (none when it lists nothing) plus
    SPECERROR -     REASON        (the first error, located)
Exit status 0, or 2 when kdlc could not be run at all.
"""
import json
import re
import subprocess
import sys

MAX_ERRORS = "--max-errors=100000"  # every kernel's refusal, not the first 50
KERNEL_RE = re.compile(r"^kernel `([^`]+)`: (.*)$", re.S)


def run_json(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except OSError as e:
        print(f"triage: cannot run {cmd[0]}: {e}", file=sys.stderr)
        sys.exit(2)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        print(f"triage: {' '.join(cmd)} printed no JSON (exit {p.returncode}): {p.stderr.strip()[:400]}",
              file=sys.stderr)
        sys.exit(2)


def located(d):
    return f"{d.get('file', '?')}:{d.get('line', 0)}:{d.get('column', 0)}: {d.get('message', '')} [{d.get('id', '')}]"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    kdlc, spec = argv[1], argv[2]
    listed = run_json([kdlc, "list", "--json", "--diagnostics=json", MAX_ERRORS, spec])
    names = [k["name"] for k in listed.get("kernels", [])]
    diags = list(listed.get("diagnostics", []))
    diags += run_json([kdlc, "check", "--diagnostics=json", MAX_ERRORS, spec]).get("diagnostics", [])
    if not [d for d in diags if d.get("severity") == "error" and d.get("id") != "unsupported"]:
        diags += run_json([kdlc, "list", "--plan", "--diagnostics=json", MAX_ERRORS, spec]).get("diagnostics", [])

    refused = {}  # name -> [reasons]
    spec_error = None
    for d in diags:
        if d.get("severity") != "error":
            continue
        m = KERNEL_RE.match(d.get("message", ""))
        if d.get("id") == "unsupported" and m:
            reasons = refused.setdefault(m.group(1), [])
            if m.group(2) not in reasons:
                reasons.append(m.group(2))
            if m.group(1) not in names:
                names.append(m.group(1))
        elif spec_error is None:
            spec_error = located(d)
    for n in names:
        if spec_error is not None:
            print(f"NOTBUILT\t{n}\tthe spec does not pass kdlc's front end: {spec_error}")
        elif n in refused:
            print(f"NOTBUILT\t{n}\t" + "; ".join(refused[n]).replace("\t", " ").replace("\n", " "))
        else:
            print(f"BUILD\t{n}")
    if spec_error is not None:
        print(f"SPECERROR\t-\t{spec_error}".replace("\n", " "))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
