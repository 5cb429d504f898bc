"""A fake kdlc for the cache tests: the commands kdl.load runs, in milliseconds, without CUDA.

Configured by the JSON file named by $FAKE_KDLC_CONFIG: version, include_dir, build_log (each build
appends one JSON line: pid, argv), build_sleep (seconds), build_kill (SIGKILL itself halfway through
writing the library), build_suffix (text the build adds to each .cu, as if the spec changed during the
build), no_torch (reject --torch like a kdlc without PyTorch support). Spec language, one item a line:
    kernel NAME              a kernel (op torch.ops.NS.NAME)
    import "FILE";           an import, relative to the importing file
    ERROR                    a located error at this line/column (exit 1, as kdlc prints diagnostics)
    BUILDFAIL                emit works, build fails like a compiler error (exit 1)
"""

import hashlib
import json
import os
import re
import signal
import sys
import time


def config():
    with open(os.environ["FAKE_KDLC_CONFIG"], encoding="utf-8") as f:
        return json.load(f)


def sources(spec, seen):
    spec = os.path.abspath(spec)
    if spec in seen:
        return
    seen.append(spec)
    with open(spec, encoding="utf-8") as f:
        for line in f:
            m = re.match(r'\s*import\s+"([^"]+)"', line)
            if m:
                sources(os.path.join(os.path.dirname(spec), m.group(1)), seen)


def diagnostics(paths):
    errors = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f.read().split("\n"), 1):
                col = line.find("ERROR")
                if col >= 0:
                    errors.append(f"{p}:{n}:{col + 1}: error: a fake error [fake-error]\n"
                                  f"  {n:>3} | {line}\n      | {' ' * col}^~~~~\n")
    return errors


def emit(spec, out, depfile, namespace, cfg, suffix=""):
    paths = []
    sources(spec, paths)
    errors = diagnostics(paths)
    if errors:
        sys.stderr.write("".join(errors) + f"{len(errors)} error{'s' if len(errors) > 1 else ''} generated.\n")
        sys.exit(1)
    text = "".join(open(p, encoding="utf-8").read() for p in paths)
    kernels = [m.group(1) for p in paths for m in re.finditer(r"^\s*kernel\s+(\w+)", open(p).read(), re.M)]
    stem = os.path.basename(spec)[:-4] if spec.endswith(".kdl") else os.path.basename(spec)
    ns = namespace or "kdl_" + re.sub(r"[^A-Za-z0-9_]", "_", stem)
    sha = hashlib.sha256(text.encode()).hexdigest()
    os.makedirs(out, exist_ok=True)
    files = {}
    for k in kernels:
        files[f"{k}.h"] = f"// {k} host API\n"
        files[f"{k}.cu"] = f"// {k} from spec {sha}\n{suffix}"
    files[f"{stem}_torch.cpp"] = f"// TORCH_LIBRARY({ns}, m) {' '.join(kernels)}\n"
    files[f"{stem}_torch_build.py"] = "# build script\n"
    manifest = {"generator": cfg["version"], "spec": os.path.basename(spec), "spec_sha256": sha,
                "kernels": [{"name": k} for k in kernels],
                "torch": {"namespace": ns, "source": f"{stem}_torch.cpp", "build_script": f"{stem}_torch_build.py",
                          "library": f"{stem}_torch.so",
                          "ops": [{"name": k, "schema": f"{k}(Tensor A, Tensor B) -> Tensor"} for k in kernels]}}
    files["manifest.json"] = json.dumps(manifest, indent=2) + "\n"
    for name, body in files.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(body)
    if depfile:
        esc = lambda p: os.path.abspath(p).replace(" ", "\\ ").replace("$", "$$")
        with open(depfile, "w", encoding="utf-8") as f:
            f.write(esc(os.path.join(out, "manifest.json")) + ":" + "".join(f" \\\n  {esc(p)}" for p in paths) + "\n")
    return stem, ns, text


def main(argv):
    cfg = config()
    if argv == ["--version"]:
        print(cfg["version"])
        return 0
    if argv == ["--include-dir"]:
        if not cfg.get("include_dir"):
            print("kdlc: error: no kdl include directory", file=sys.stderr)
            return 1
        print(cfg["include_dir"])
        return 0
    if not argv or argv[0] not in ("emit", "build"):
        print(f"kdlc: error: unknown command {argv[:1]}", file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    opts, spec = {}, None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "--depfile", "--torch-namespace", "--python", "--nvcc"):
            opts[a] = args[i + 1]
            i += 2
            continue
        if a == "--torch" and not cfg.get("no_torch"):
            opts[a] = True
        elif a.startswith("-"):
            print(f"kdlc: error: unknown option {a}", file=sys.stderr)
            return 2
        else:
            spec = a
        i += 1
    if "--torch" not in opts or spec is None or "-o" not in opts:
        print("kdlc: error: usage", file=sys.stderr)
        return 2
    suffix = cfg.get("build_suffix", "") if cmd == "build" else ""
    stem, ns, text = emit(spec, opts["-o"], opts.get("--depfile"), opts.get("--torch-namespace"), cfg, suffix)
    if cmd == "emit":
        print(f"kdlc: wrote kernels to {opts['-o']}", file=sys.stderr)
        return 0
    if cfg.get("build_log"):
        with open(cfg["build_log"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "argv": argv}) + "\n")
    print(f"kdlc: building {stem} (fake)", flush=True)
    time.sleep(cfg.get("build_sleep", 0))
    out = opts["-o"]
    library = os.path.join(out, f"{stem}_torch.so")
    if "BUILDFAIL" in text:
        print(f"kdlc: error: building the PyTorch extension failed\n  command: c++ -c {stem}_torch.cpp -o x.o\n"
              f"{stem}_torch.cpp:3:1: error: 'boom' was not declared in this scope", flush=True)
        return 1
    with open(os.path.join(out, f"lib{stem}.a"), "wb") as f:
        f.write(b"!<arch>\n")
    with open(library, "wb") as f:
        f.write(b"FAKE-SO " + ns.encode() + b" " + hashlib.sha256(text.encode()).hexdigest().encode() + b"\n")
        f.flush()
        if cfg.get("build_kill"):
            os.kill(os.getpid(), signal.SIGKILL)
        f.write(b"\0" * 4096)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
