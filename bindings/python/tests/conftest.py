"""conftest.py -- fixtures shared by the Python binding's tests.

Every segment a test makes is named /fs-py-<pid>-<n> (parallel runs never
meet) and destroyed when the test ends.  FLASH_CLI is the `flashstock`
command of the build under test (set by ctest)."""
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import flashstock

# python_pip runs these files from a virtualenv the package was pip-installed
# into: FLASH_PY_EXPECT_PKG is the directory the imported package must be in
# (not the build tree's, not a copy on some other path)
_WANT = os.environ.get("FLASH_PY_EXPECT_PKG")
if _WANT and not os.path.realpath(flashstock.__file__).startswith(
        os.path.realpath(_WANT) + os.sep):
    raise ImportError("flashstock imported from %s, not from %s"
                      % (flashstock.__file__, _WANT))

CLI = os.environ.get("FLASH_CLI", "flashstock")
_seq = itertools.count(1)

# capacities that fit every test here (a few MiB instead of the defaults' 200)
SMALL = dict(max_activities=8, max_skus=32, max_shards=128, max_users=8192, max_tokens=2048,
             max_orders=8192, max_requests=8192, max_locks=16, max_procs=64,
             ring_records=8192)


def unique_name(tag="t"):
    return "/fs-py-%d-%s-%d" % (os.getpid(), tag, next(_seq))


class Segments:
    def __init__(self):
        self.names = []

    def make(self, tag="t", **opts):
        name = unique_name(tag)
        caps = dict(SMALL)
        caps.update(opts)
        flashstock.seg_create(name, **caps)
        self.names.append(name)
        return name

    def cleanup(self):
        for n in self.names:
            try:
                flashstock.seg_destroy(n)
            except flashstock.NoSegment:
                pass


@pytest.fixture
def segs():
    s = Segments()
    yield s
    s.cleanup()


@pytest.fixture
def tmpdir_path():
    d = tempfile.mkdtemp(prefix="flash-py-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Daemon:
    """A private `flashstock serve` on one segment, WAL in a temp directory
    (no snapshots unless snapshots=True: then WAL retention runs too)."""

    def __init__(self, name, wal, *extra, snapshots=False):
        self.log = open(wal + ".log", "w")
        self.p = subprocess.Popen([CLI, "serve", "--name", name, "--wal", wal,
                                   *([] if snapshots else ["--no-snapshot"]),
                                   "--reconcile-every", "0", *extra],
                                  stderr=self.log)
        deadline = time.time() + 20
        while True:
            with open(wal + ".log") as f:
                if "serving segment" in f.read():
                    break
            if self.p.poll() is not None:
                raise AssertionError("serve exited %s: %s" % (self.p.returncode,
                                                             open(wal + ".log").read()))
            if time.time() > deadline:
                self.p.kill()
                raise AssertionError("serve did not start")
            time.sleep(0.05)

    def stop(self):
        """SIGTERM: drain, sync, exit 0."""
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=60)
        self.log.close()
        assert rc == 0, "serve exited %d after SIGTERM" % rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.log.close()


def run_cli(*args, check=True):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("flashstock %s: exit %d\n%s%s" % (" ".join(args), p.returncode,
                                                              p.stdout, p.stderr))
    return p
