"""kdl.load: emit, key, cache hit or locked build, load."""

import json
import os
import re
import sys
import threading
import time

from . import _cache, _kdlc, _key, _torch
from ._errors import BuildError, NamespaceConflict, SpecError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# What this process loaded: PyTorch cannot unload a library or register a namespace twice.
_state_lock = threading.RLock()
_modules = {}      # key -> KernelModule
_namespaces = {}   # namespace -> key


class KernelModule:
    """The kernels of one spec, as PyTorch ops: ``m.KERNEL(...)`` is ``torch.ops.<namespace>.KERNEL``.

    Attributes: ``namespace``, ``kernels`` (names, in the spec's order), ``library`` (the loaded .so),
    ``manifest`` (kdlc's manifest.json), ``ops`` (name -> op, also for a kernel whose name is one of
    these attributes), ``key`` and ``entry`` (the cache entry)."""

    def __init__(self, namespace, kernels, library, manifest, key, entry, ops):
        self.namespace = namespace
        self.kernels = tuple(kernels)
        self.library = library
        self.manifest = manifest
        self.key = key
        self.entry = entry
        self.ops = dict(ops)
        for name, op in self.ops.items():
            if name not in self.__dict__:
                self.__dict__[name] = op

    def __getattr__(self, name):
        raise AttributeError(f"{self.namespace} has no kernel {name!r}; its kernels: {', '.join(self.kernels) or 'none'}")

    def __dir__(self):
        return sorted(set(self.__dict__) | set(type(self).__dict__))

    def __repr__(self):
        return f"<kdl module {self.namespace} ({self.manifest.get('spec', '?')}): {', '.join(self.kernels)}>"


def _verbose_from_env():
    return os.environ.get("KDL_VERBOSE", "") not in ("", "0")


def _say(text):
    print(text, file=sys.stderr, flush=True)


def _read_depfile(path):
    """The inputs of a Make-style depfile (kdlc's: one target, `\\ ` for spaces, `$$` for `$`)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    words, cur, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in " #\\":
            cur += text[i + 1]
            i += 2
            continue
        if c == "$" and text[i + 1:i + 2] == "$":
            cur += "$"
            i += 2
            continue
        if c.isspace():
            if cur:
                words.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        words.append(cur)
    if not words or not words[0].endswith(":"):
        raise RuntimeError(f"kdl: kdlc's depfile {path} has no target")
    return words[1:]


def _read_manifest(path):
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    torch = manifest.get("torch")
    if not isinstance(torch, dict) or not all(k in torch for k in ("namespace", "library", "ops")):
        raise RuntimeError(f"kdl: {path} has no \"torch\" object: the kdlc used does not emit PyTorch extensions")
    return manifest


def key_components(cache, spec_path, kdlc_path, nvcc_path, namespace):
    """Runs kdlc emit --torch into a staging directory of the cache and returns (the key's components,
    the manifest, {emitted file: sha256}). SpecError when the spec has errors."""
    with cache.staging() as stage:
        emit_dir = os.path.join(stage, "emit")
        depfile = os.path.join(stage, "deps.d")
        _kdlc.emit(kdlc_path, spec_path, emit_dir, depfile, namespace)
        manifest = _read_manifest(os.path.join(emit_dir, "manifest.json"))
        if not manifest.get("kernels"):
            raise SpecError(spec_path, f"{spec_path}: error: the spec defines no kernels; there is nothing to load\n")
        ctx = _key.KeyContext(spec=spec_path, deps=_read_depfile(depfile), emit_dir=emit_dir, kdlc=kdlc_path,
                              include_dir=_kdlc.include_dir(kdlc_path), nvcc=nvcc_path,
                              namespace=manifest["torch"]["namespace"])
        emitted = {os.path.relpath(p, emit_dir): _cache.sha256_file(p) for p in _key._walk(emit_dir)}
        return _key.compose(ctx), manifest, emitted


def load(spec, *, namespace=None, kdlc=None, nvcc=None, cache_dir=None, verbose=False, rebuild=False):
    """Builds (or finds in the cache) the PyTorch extension of a spec and loads it.

    Returns a module-like object whose attributes are the spec's kernels as ops (torch.ops.NS.KERNEL),
    plus ``.namespace``, ``.kernels``, ``.library`` and ``.manifest``. See python/README.md."""
    verbose = verbose or _verbose_from_env()
    spec_path = os.path.abspath(os.fspath(spec))
    if not os.path.isfile(spec_path):
        raise FileNotFoundError(f"kdl: no spec {os.fspath(spec)!r}")
    if namespace is not None and not _IDENTIFIER.match(namespace):
        raise ValueError(f"kdl: namespace={namespace!r} is not a C identifier (letters, digits, _; not starting with a digit)")
    kdlc_path = _kdlc.find_kdlc(kdlc)
    nvcc_path = _kdlc.find_nvcc(nvcc)
    cache = _cache.Cache(_cache.prepare(cache_dir))
    name = os.path.basename(spec_path)
    with _state_lock:
        t0 = time.monotonic()
        components, manifest, emitted = key_components(cache, spec_path, kdlc_path, nvcc_path, namespace)
        key = _key.digest(components)
        if verbose:
            _say(f"kdl: {name}: key {key[:16]} ({(time.monotonic() - t0) * 1e3:.0f} ms)")

        if key in _modules and not rebuild:
            return _modules[key]
        if not rebuild:
            with cache.lock(key, shared=True):
                state, _reason, entry = cache.check(key)
                if state == "hit":
                    module = _activate(cache, key, entry)
                    if verbose:
                        _say(f"kdl: {name} from the cache ({(time.monotonic() - t0) * 1e3:.0f} ms): {cache.entry_dir(key)}")
                    return module
        with cache.lock(key):
            state, reason, entry = cache.check(key)
            if state == "hit" and not rebuild:  # another process built it while this one waited
                return _activate(cache, key, entry)
            if state == "corrupt":
                _say(f"kdl: the cache entry {cache.entry_dir(key)} is corrupt ({reason}); removing it and rebuilding")
                cache.discard(key)
            spec_id = f"{spec_path}\0{namespace or ''}"
            why = ("rebuild=True" if rebuild else f"corrupt entry: {reason}" if state == "corrupt"
                   else _key.describe_change(cache.last_components(spec_id), components))
            entry = _build(cache, key, spec_path, kdlc_path, nvcc_path, namespace, components, manifest, emitted, why,
                           verbose, t0)
            cache.remember_components(spec_id, components)
            return _activate(cache, key, entry)


def _build(cache, key, spec_path, kdlc_path, nvcc_path, namespace, components, manifest, emitted, why, verbose, t0):
    name = os.path.basename(spec_path)
    _say(f"kdl: building {name} (cache miss: {why}) ...")
    cache.sweep_tmp(key)
    cache.sweep_staging()
    tmp = cache.new_tmp(key)
    try:
        _kdlc.build(kdlc_path, spec_path, tmp, nvcc=nvcc_path, namespace=namespace, verbose=verbose)
        library = manifest["torch"]["library"]
        if not os.path.isfile(os.path.join(tmp, library)):
            raise BuildError(f"kdl: kdlc build --torch did not write {library}", [kdlc_path, "build", "--torch", spec_path],
                             0, "")
        # The build emitted the spec again: if it (or an import) changed since the key was computed,
        # what was built is not what the key describes.
        for rel, sha in emitted.items():
            p = os.path.join(tmp, rel)
            if not os.path.isfile(p) or _cache.sha256_file(p) != sha:
                raise RuntimeError(f"kdl: {name} (or a file it imports) changed while it was being built; load it again")
        record = cache.entry_record(tmp, key, library, components, name)
        _cache.write_json_atomic(os.path.join(tmp, _cache.ENTRY_JSON), record)
        cache.publish(tmp, key)
    except BaseException:
        _cache.remove_tree(tmp)
        raise
    if verbose:
        _say(f"kdl: built {name} in {time.monotonic() - t0:.1f} s: {cache.entry_dir(key)}")
    return record


def _activate(cache, key, entry):
    """Loads the checked entry's library (once per process) and returns its module."""
    with _state_lock:
        if key in _modules:
            return _modules[key]
        entry_dir = cache.entry_dir(key)
        with open(os.path.join(entry_dir, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        ns = manifest["torch"]["namespace"]
        library = os.path.join(entry_dir, entry["library"])
        other = _namespaces.get(ns)
        if other is not None and other != key:
            raise NamespaceConflict(
                f"kdl: the namespace {ns} is already loaded in this process from another build of "
                f"{_modules[other].manifest.get('spec', 'a spec')} ({_modules[other].library}); PyTorch cannot "
                f"replace its ops. The new build is cached ({library}): restart the process to load it, or load "
                "the spec with another namespace=")
        _torch.load_library(library)
        kernels = [op["name"] for op in manifest["torch"]["ops"]]
        ops = {k: _torch.op(ns, k) for k in kernels}
        module = KernelModule(ns, kernels, library, manifest, key, entry_dir, ops)
        _modules[key] = module
        _namespaces[ns] = key
        return module


def cache_dir():
    """The cache directory kdl.load uses now (created, 0700, checked)."""
    return _cache.prepare(None)


def clear_cache(cache_dir=None):
    """Removes every cache entry (those being built right now excepted); returns how many."""
    root = _cache.prepare(cache_dir)
    return _cache.Cache(root).clear()
