"""The body of the processes of the locking test (started with multiprocessing's spawn: a fresh
interpreter that imports this module)."""

import os
import sys


def load_one(spec, loads_file, barrier, results):
    import _fakes
    import kdl
    _fakes.install(loads_file)
    barrier.wait()
    try:
        m = kdl.load(spec)
        results.put((os.getpid(), "ok", m.library, list(m.kernels)))
    except BaseException as e:  # reported to the test, which fails on it
        results.put((os.getpid(), "error", repr(e), None))
        sys.exit(1)
