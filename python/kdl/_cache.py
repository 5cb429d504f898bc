"""The on-disk cache of built extensions: where it lives, who may write it, its locks, and how an
entry is written (all or nothing) and checked before anything of it is loaded.

Layout of the cache directory (``kdl.cache_dir()``)::

    <key>/            one built extension: kdlc build's output plus entry.json (never written in place)
    <key>.lock        flock(2) serialising the builders of <key> (shared while a loader checks it)
    .tmp-<key>-*      an entry being built (renamed to <key> when complete; removed when the build fails)
    .staging-*        kdlc emit's output while a load computes its key (removed after the load)
    .specs/           the key components of each spec's last build, to say why the next one missed
"""

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time

ENTRY_FORMAT = 1
ENTRY_JSON = "entry.json"


# ---------------------------------------------------------------------------------------------
# Where the cache is, and whether it is safe to load code from it

def cache_dirs(cache_dir=None):
    """The directories kdl would use, outermost first; the last holds the entries. Nothing is created.

    cache_dir= is that last directory itself; otherwise $KDL_CACHE_DIR/torch, $XDG_CACHE_HOME/kdl/torch,
    ~/.cache/kdl/torch. A relative path is refused: the cache is never the current directory, where a
    file someone planted would be loaded as code."""
    if cache_dir is not None:
        path = os.fspath(cache_dir)
        if not os.path.isabs(path):
            raise ValueError(f"kdl: cache_dir={path!r} is a relative path; kdl never keeps its cache in the "
                             "current directory (a file planted there would be loaded as code): give an absolute path")
        return [os.path.normpath(path)]
    env = os.environ.get("KDL_CACHE_DIR", "")
    if env:
        if not os.path.isabs(env):
            raise ValueError(f"kdl: $KDL_CACHE_DIR={env!r} is a relative path; kdl never keeps its cache in the "
                             "current directory (a file planted there would be loaded as code): set it to an "
                             "absolute path, or unset it to use $XDG_CACHE_HOME/kdl or ~/.cache/kdl")
        root = os.path.normpath(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if xdg and os.path.isabs(xdg):  # the XDG spec says to ignore a relative value
            root = os.path.join(os.path.normpath(xdg), "kdl")
        else:
            home = os.path.expanduser("~")
            if not os.path.isabs(home):
                raise ValueError("kdl: no cache directory: $HOME is not set; set KDL_CACHE_DIR to an absolute path")
            root = os.path.join(home, ".cache", "kdl")
    return [root, os.path.join(root, "torch")]


def _describe_owner(uid):
    try:
        import pwd
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def check_private_dir(path):
    """Refuses (PermissionError) a directory another user could write: owned by someone else, or
    writable by its group or by others."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"kdl: the cache directory {path} is not a directory")
    me = os.geteuid()
    if st.st_uid != me:
        raise PermissionError(
            f"kdl: refusing the cache directory {path}: it belongs to {_describe_owner(st.st_uid)}, not to you "
            f"({_describe_owner(me)}), who could put code in it that kdl would load; set KDL_CACHE_DIR "
            "(or cache_dir=) to a directory of your own")
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("its group", 0o020), ("others", 0o002)) if st.st_mode & bit)
        raise PermissionError(
            f"kdl: refusing the cache directory {path}: it is writable by {who} (mode "
            f"{stat.S_IMODE(st.st_mode):04o}), who could put code in it that kdl would load; run "
            f"`chmod go-w {path}` or set KDL_CACHE_DIR (or cache_dir=) to a private directory")


def _make_private_dirs(path):
    """Creates path and its missing parents with mode 0700 (the umask cannot widen that)."""
    missing = []
    p = path
    while not os.path.exists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)


def prepare(cache_dir=None):
    """Creates the cache directories (0700) and checks that each is private; returns the entries' directory."""
    dirs = cache_dirs(cache_dir)
    for d in dirs:
        if not os.path.isdir(d):
            _make_private_dirs(d)
        check_private_dir(d)
    return dirs[-1]


# ---------------------------------------------------------------------------------------------
# Locks

class FileLock:
    """flock(2) on a lock file, shared or exclusive. A lock file can be removed by clear_cache while a
    process waits on it; acquire() re-opens until the file it locked is still the one at the path."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def acquire(self, shared=False, blocking=True):
        op = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, op)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            held = os.fstat(fd)
            try:
                now = os.stat(self.path)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                self.fd = fd
                return True
            os.close(fd)

    def release(self):
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


@contextlib.contextmanager
def locked(path, shared=False):
    lock = FileLock(path)
    lock.acquire(shared=shared)
    try:
        yield lock
    finally:
        lock.release()


# ---------------------------------------------------------------------------------------------
# Hashing and atomic writes

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_path(path, directory=False):
    fd = os.open(path, (os.O_RDONLY | os.O_DIRECTORY) if directory else os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root):
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.isfile(p) and not os.path.islink(p):
                _fsync_path(p)
        _fsync_path(dirpath, directory=True)


def write_json_atomic(path, data):
    """Writes JSON to path through a temporary file in the same directory, fsynced, then renamed."""
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_path(d, directory=True)


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Entries

def is_key(name):
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


class Cache:
    """One cache directory (already prepared and checked)."""

    def __init__(self, root):
        self.root = root

    def entry_dir(self, key):
        return os.path.join(self.root, key)

    def lock_path(self, key):
        return os.path.join(self.root, key + ".lock")

    def lock(self, key, shared=False):
        return locked(self.lock_path(key), shared=shared)

    # -- staging: kdlc emit's output while the key is computed ------------------------------
    @contextlib.contextmanager
    def staging(self):
        """A fresh private directory for kdlc emit, removed afterwards. It holds a lock for its whole
        life, so that sweep_staging() can tell an abandoned one (its process died) from a live one."""
        path = tempfile.mkdtemp(prefix=".staging-", dir=self.root)
        lock = FileLock(os.path.join(path, ".lock"))
        lock.acquire()
        try:
            yield path
        finally:
            lock.release()
            remove_tree(path)

    def sweep_staging(self, min_age=60.0):
        """Removes staging directories whose process died (their lock is free). One younger than
        min_age seconds is left alone: its process may not have taken its lock yet."""
        now = time.time()
        for name in _listdir(self.root):
            if name.startswith(".staging-"):
                path = os.path.join(self.root, name)
                try:
                    if now - os.stat(path).st_mtime < min_age:
                        continue
                except OSError:
                    continue
                lock = FileLock(os.path.join(path, ".lock"))
                try:
                    if not lock.acquire(blocking=False):
                        continue  # alive
                except OSError:
                    continue
                lock.release()
                remove_tree(path)

    # -- building ---------------------------------------------------------------------------
    def new_tmp(self, key):
        """A private directory to build <key> into (the caller holds <key>'s lock)."""
        return tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=self.root)

    def sweep_tmp(self, key):
        """Removes what builds of <key> left behind when they were killed (the caller holds the lock,
        so no build of <key> is running)."""
        for name in _listdir(self.root):
            if name.startswith(f".tmp-{key}-") or name.startswith(f".old-{key}-"):
                remove_tree(os.path.join(self.root, name))

    def publish(self, tmp, key):
        """Makes the complete build in tmp the entry <key>: fsync everything, then one rename. An entry
        already there (rebuild) is moved aside first and removed after."""
        fsync_tree(tmp)
        entry = self.entry_dir(key)
        aside = None
        if os.path.lexists(entry):
            aside = tempfile.mkdtemp(prefix=f".old-{key}-", dir=self.root)
            os.rename(entry, os.path.join(aside, "entry"))
        os.rename(tmp, entry)
        _fsync_path(self.root, directory=True)
        if aside:
            remove_tree(aside)

    def discard(self, key):
        """Moves a corrupt entry out of the way (a rename, so no loader can see half of it), then removes it."""
        entry = self.entry_dir(key)
        if not os.path.lexists(entry):
            return
        aside = tempfile.mkdtemp(prefix=f".old-{key}-", dir=self.root)
        os.rename(entry, os.path.join(aside, "entry"))
        remove_tree(aside)

    # -- checking ---------------------------------------------------------------------------
    def check(self, key):
        """('hit', None, entry) when the entry is complete and intact, ('missing', None, None) when there
        is none, ('corrupt', reason, None) otherwise. Nothing of a corrupt entry is ever loaded."""
        entry = self.entry_dir(key)
        if not os.path.lexists(entry):
            return "missing", None, None
        if os.path.islink(entry) or not os.path.isdir(entry):
            return "corrupt", "it is not a directory", None
        try:
            with open(os.path.join(entry, ENTRY_JSON), "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
        except FileNotFoundError:
            return "corrupt", f"{ENTRY_JSON} is missing", None
        except (ValueError, UnicodeDecodeError):
            return "corrupt", f"{ENTRY_JSON} is not valid JSON", None
        except OSError as e:
            return "corrupt", f"{ENTRY_JSON} cannot be read: {e.strerror}", None
        if not isinstance(data, dict) or data.get("format") != ENTRY_FORMAT:
            return "corrupt", f"{ENTRY_JSON} is not an entry of this kdl (format {ENTRY_FORMAT})", None
        if data.get("key") != key:
            return "corrupt", f"{ENTRY_JSON} names another key ({data.get('key')!r})", None
        files = data.get("files")
        library = data.get("library")
        if not isinstance(files, dict) or not isinstance(library, str) or library not in files:
            return "corrupt", f"{ENTRY_JSON} lacks its file list or library", None
        for rel, info in sorted(files.items()):
            if not _plain_relative(rel) or not isinstance(info, dict):
                return "corrupt", f"{ENTRY_JSON} lists a bad file name {rel!r}", None
            p = os.path.join(entry, rel)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                return "corrupt", f"{rel} is missing", None
            if not stat.S_ISREG(st.st_mode):
                return "corrupt", f"{rel} is not a regular file", None
            if st.st_size != info.get("size"):
                return "corrupt", f"{rel} has {st.st_size} bytes, {ENTRY_JSON} says {info.get('size')} (truncated?)", None
        # What is loaded is hashed every time; the rest is checked by size.
        for rel in (library, "manifest.json"):
            if rel in files and sha256_file(os.path.join(entry, rel)) != files[rel].get("sha256"):
                return "corrupt", f"{rel}'s sha256 differs from {ENTRY_JSON}'s", None
        return "hit", None, data

    def entry_record(self, tmp, key, library, components, spec):
        """entry.json's content for the build in tmp."""
        files = {}
        for dirpath, _dirnames, filenames in os.walk(tmp):
            for name in filenames:
                p = os.path.join(dirpath, name)
                rel = os.path.relpath(p, tmp)
                if rel == ENTRY_JSON or os.path.islink(p) or not os.path.isfile(p):
                    continue
                files[rel] = {"size": os.path.getsize(p), "sha256": sha256_file(p)}
        return {"format": ENTRY_FORMAT, "key": key, "spec": spec, "library": library,
                "library_sha256": files.get(library, {}).get("sha256"), "files": files,
                "components": components, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    # -- why a spec missed ------------------------------------------------------------------
    def _spec_record_path(self, spec_id):
        return os.path.join(self.root, ".specs", hashlib.sha256(spec_id.encode()).hexdigest()[:32] + ".json")

    def last_components(self, spec_id):
        try:
            with open(self._spec_record_path(spec_id), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def remember_components(self, spec_id, components):
        path = self._spec_record_path(spec_id)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with contextlib.suppress(OSError):
            write_json_atomic(path, components)

    # -- clearing ---------------------------------------------------------------------------
    def clear(self):
        """Removes every entry not being built right now, and what killed builds left; returns the
        number of entries removed."""
        removed = 0
        for name in _listdir(self.root):
            if not name.endswith(".lock") or not is_key(name[:-5]):
                continue
            key = name[:-5]
            lock = FileLock(self.lock_path(key))
            if not lock.acquire(blocking=False):
                continue  # a build of it is running
            try:
                if os.path.lexists(self.entry_dir(key)):
                    self.discard(key)
                    removed += 1
                self.sweep_tmp(key)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.lock_path(key))  # waiters notice (FileLock re-opens)
            finally:
                lock.release()
        for name in _listdir(self.root):  # entries without a lock file (left above: being built)
            if is_key(name) and not os.path.lexists(self.lock_path(name)):
                lock = FileLock(self.lock_path(name))
                if not lock.acquire(blocking=False):
                    continue
                try:
                    if os.path.lexists(self.entry_dir(name)):
                        self.discard(name)
                        removed += 1
                finally:
                    lock.release()
        self.sweep_staging(min_age=0)
        remove_tree(os.path.join(self.root, ".specs"))
        return removed


def _plain_relative(rel):
    return bool(rel) and not os.path.isabs(rel) and ".." not in rel.split("/")


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []
    except OSError as e:
        if e.errno == errno.ENOTDIR:
            return []
        raise
