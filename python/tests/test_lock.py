"""Processes that load one new spec at once: one build, every process gets a working module."""

import multiprocessing
import os
import threading
import time

import kdl

import _workers


def test_four_processes_one_build(env):
    env.configure(build_sleep=1.5)  # long enough for all four to arrive while it builds
    spec = env.spec()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    results = ctx.Queue()
    procs = [ctx.Process(target=_workers.load_one, args=(spec, env.loads_file, barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [r[1] for r in got] == ["ok"] * 4, got
    assert all(p.exitcode == 0 for p in procs)
    assert len(env.builds()) == 1, env.builds()
    libraries = {r[2] for r in got}
    assert len(libraries) == 1 and all(r[3] == ["up", "down"] for r in got)
    loads = env.loads()
    assert sorted(l["pid"] for l in loads) == sorted(r[0] for r in got)  # each process loaded once
    assert len({l["sha256"] for l in loads}) == 1
    assert len(env.entries()) == 1 and env.strays() == []


def test_clear_cache_leaves_an_entry_being_built(env):
    spec = env.spec()
    m = kdl.load(spec)
    lock = kdl._cache.FileLock(os.path.join(env.cache, m.key + ".lock"))
    assert lock.acquire()  # as a builder holds it
    assert kdl.clear_cache() == 0
    assert env.entries() == [m.key]
    lock.release()
    assert kdl.clear_cache() == 1
    assert env.entries() == [] and not os.path.exists(os.path.join(env.cache, m.key + ".lock"))


def test_a_waiter_whose_lock_file_was_removed_locks_the_new_one(tmp_path):
    """clear_cache unlinks lock files while holding them; a process that was waiting on the old file
    must not believe it holds the lock: it re-opens the path until the file it locked is the one there."""
    path = str(tmp_path / "k.lock")
    holder = kdl._cache.FileLock(path)
    assert holder.acquire()
    waiter = kdl._cache.FileLock(path)
    t = threading.Thread(target=waiter.acquire)
    t.start()
    time.sleep(0.2)
    assert t.is_alive()  # blocked on the held lock
    os.unlink(path)
    holder.release()
    t.join(timeout=10)
    assert not t.is_alive()
    assert os.fstat(waiter.fd).st_ino == os.stat(path).st_ino
    third = kdl._cache.FileLock(path)
    assert not third.acquire(blocking=False)  # the waiter holds the file that is at the path now
    waiter.release()
    assert third.acquire(blocking=False)
    third.release()
