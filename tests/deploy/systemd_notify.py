#!/usr/bin/env python3
"""systemd_notify.py FLASHSTOCK MODE -- `flashstock serve` under the sd_notify
protocol, with a datagram socket of the test's own as NOTIFY_SOCKET (no
systemd needed: this is the socket a manager would listen on).

MODE protocol: the daemon says READY=1 only after recovery and the first
  drain round -- it is withheld while the disk does not return from the
  first round's fdatasync (FLASH_TEST_SYNC_HOLD), and the records the rings
  held at start are durable when it comes; WATCHDOG=1 arrives again and
  again; a stuck fdatasync stops the pings and they resume once the disk
  returns; WATCHDOG_PID naming another process means no pings; SIGTERM gives
  STOPPING=1 and exit 0.
MODE restart: `serve --recover-if-absent` (what the unit runs on every
  start) rebuilds a segment that is gone (after a reboot) and is READY with
  the WAL's history, and starts plainly on a segment that is there (after a
  crash: kill -9) without rebuilding, READY with nothing lost.

Bounds are generous and only ever "arrives within"; the one "does not
arrive" check waits for a silence of 5 watchdog periods to happen at all
(within 20 s), so a slow machine cannot fail it.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

FS = sys.argv[1]
MODE = sys.argv[2]
WD_USEC = 400000                       # pings due every 100 ms
TMP = tempfile.mkdtemp(prefix="flash-notify-")
NAME = "/flash-notify-%d" % os.getpid()
WAL = os.path.join(TMP, "wal")
HOLD = os.path.join(TMP, "hold")
procs = []


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    subprocess.run([FS, "destroy", "--name", NAME, "--force"], capture_output=True)
    subprocess.run(["rm", "-rf", TMP])


def fail(msg):
    print("FAIL: " + msg)
    for f in sorted(os.listdir(TMP)):
        if f.startswith("log"):
            print("--- " + f + ":")
            print(open(os.path.join(TMP, f)).read())
    cleanup()
    sys.exit(1)


def fs(*args):
    r = subprocess.run([FS] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        fail("flashstock %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


class Manager:
    """The listening end of NOTIFY_SOCKET."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.msgs = []                 # (time, {field: value}) in arrival order

    def recv(self, timeout):
        """One datagram's fields, or None after @timeout seconds."""
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(4096).decode()
        except socket.timeout:
            return None
        fields = dict(line.split("=", 1) for line in data.split("\n") if "=" in line)
        self.msgs.append((time.monotonic(), fields))
        return fields

    def wait_for(self, key, bound_s, proc):
        """The first message with @key within @bound_s, else fail."""
        end = time.monotonic() + bound_s
        while time.monotonic() < end:
            m = self.recv(min(0.2, end - time.monotonic()))
            if m is not None and key in m:
                return m
            if proc.poll() is not None:
                fail("serve exited %d before %s" % (proc.returncode, key))
        fail("no %s within %d s" % (key, bound_s))

    def none_of(self, key, for_s, proc):
        """Fail if a message with @key arrives within @for_s."""
        end = time.monotonic() + for_s
        while time.monotonic() < end:
            m = self.recv(end - time.monotonic())
            if m is not None and key in m:
                fail("%s arrived: %r" % (key, m))
        if proc.poll() is not None:
            fail("serve exited %d" % proc.returncode)

    def silence(self, key, quiet_s, bound_s, proc):
        """Wait until no message with @key came for @quiet_s; fail if that
        has not happened within @bound_s."""
        end = time.monotonic() + bound_s
        last = time.monotonic()
        while time.monotonic() < end:
            m = self.recv(0.05)
            now = time.monotonic()
            if m is not None and key in m:
                last = now
            elif now - last >= quiet_s:
                return
            if proc.poll() is not None:
                fail("serve exited %d while waiting for %s to stop" % (proc.returncode, key))
        fail("%s kept arriving for %d s" % (key, bound_s))


def serve(mgr, log, extra, wd_pid_self=True, hold=False):
    env = dict(os.environ)
    env["NOTIFY_SOCKET"] = mgr.path
    env["WATCHDOG_USEC"] = str(WD_USEC)
    env["FLASH_TEST_SYNC_LOG"] = os.path.join(TMP, "synclog")
    env["FLASH_TEST_SYNC_HOLD"] = HOLD
    if hold:
        open(HOLD, "w").close()
    # WATCHDOG_PID is the pid the manager started: the shell's, which the
    # daemon then is (exec); or pid 1, which this daemon is not.
    pid = '$$' if wd_pid_self else '1'
    cmd = 'WATCHDOG_PID=%s exec "$0" serve --name "$1" --wal "$2" --idle-us 200 "$@"' % pid
    p = subprocess.Popen(["sh", "-c", cmd.replace('"$@"', " ".join(extra)), FS, NAME, WAL],
                         env=env, stderr=open(os.path.join(TMP, log), "w"))
    procs.append(p)
    return p


def stop(mgr, p):
    p.send_signal(signal.SIGTERM)
    m = mgr.wait_for("STOPPING", 20, p)
    if p.wait(timeout=60) != 0:
        fail("serve exited %d after SIGTERM" % p.returncode)
    return m


def status():
    return json.loads(fs("status", "--name", NAME, "--json"))


def setup(*opts):
    fs("create", "--name", NAME, "--procs", "8", "--users", "1024", "--orders", "1024",
       "--tokens", "64", "--requests", "64", "--skus", "16", "--shards", "64",
       "--activities", "4", *opts)
    # three records in the rings, no daemon yet
    fs("load", "--name", NAME, "--activity", "7", "--sku", "1", "--units", "100",
       "--sku", "2", "--units", "5")


def protocol():
    setup()
    mgr = Manager(os.path.join(TMP, "notify.sock"))
    p = serve(mgr, "log1", ["--no-snapshot", "--reconcile-every", "0"], hold=True)
    # The disk holds the first round's fdatasync: no READY meanwhile.
    mgr.none_of("READY", 1.5, p)
    if status()["wal_lsn"] != 0:
        fail("records marked durable while the disk held their fdatasync")
    os.unlink(HOLD)
    m = mgr.wait_for("READY", 30, p)
    # Sent after the first round: the three records were durable then.
    if "durable through LSN 3" not in m.get("STATUS", ""):
        fail("READY=1 before the first round was durable: %r" % m)
    if status()["wal_lsn"] != 3:
        fail("READY=1, but the segment reflects WAL LSN %d, not 3" % status()["wal_lsn"])
    for _ in range(3):
        mgr.wait_for("WATCHDOG", 10, p)

    # A disk that does not return: the next record's fdatasync hangs, the
    # pings stop (5 periods of silence), the record stays undurable.
    open(HOLD, "w").close()
    fs("load", "--name", NAME, "--activity", "7", "--sku", "3", "--units", "1")
    mgr.silence("WATCHDOG", 5 * WD_USEC / 1e6, 20, p)
    if status()["wal_lsn"] != 3:
        fail("LSN 4 marked durable while its fdatasync was held")
    os.unlink(HOLD)
    mgr.wait_for("WATCHDOG", 10, p)
    end = time.monotonic() + 10
    while status()["wal_lsn"] != 4:
        if time.monotonic() > end:
            fail("LSN 4 not durable 10 s after the disk returned")
        time.sleep(0.05)
    stop(mgr, p)
    watchdogs = sum(1 for _, f in mgr.msgs if "WATCHDOG" in f)

    # WATCHDOG_PID names another process: the pings are not this one's.
    mgr.msgs = []
    p = serve(mgr, "log2", ["--no-snapshot", "--reconcile-every", "0"], wd_pid_self=False)
    mgr.wait_for("READY", 30, p)
    mgr.none_of("WATCHDOG", 1.5, p)
    stop(mgr, p)
    print("ok: READY=1 withheld while the first round's fdatasync was held, sent once LSN 1..3 "
          "were durable; %d WATCHDOG=1, stopped by a held fdatasync and resumed after it; none "
          "for another WATCHDOG_PID; STOPPING=1 and exit 0 on SIGTERM" % watchdogs)


def restart():
    # shared with a group, as docs/systemd.md has it (group daemon: gid 1,
    # on every Debian system)
    setup("--mode", "0660", "--group", "daemon")
    mgr = Manager(os.path.join(TMP, "notify.sock"))
    p = serve(mgr, "log1", ["--recover-if-absent", "--reconcile-every", "0"])
    mgr.wait_for("READY", 30, p)
    fs("load", "--name", NAME, "--activity", "7", "--sku", "3", "--units", "1")
    end = time.monotonic() + 10
    while status()["wal_lsn"] != 4:
        if time.monotonic() > end:
            fail("LSN 4 not durable within 10 s")
        time.sleep(0.05)
    stop(mgr, p)                       # a clean stop writes a snapshot
    if "rebuilding" in open(os.path.join(TMP, "log1")).read():
        fail("--recover-if-absent rebuilt a segment that exists")

    # A reboot: /dev/shm is empty.  The same command rebuilds.
    fs("destroy", "--name", NAME)
    p = serve(mgr, "log2", ["--recover-if-absent", "--reconcile-every", "0"])
    m = mgr.wait_for("READY", 30, p)
    if "durable through LSN 4" not in m.get("STATUS", ""):
        fail("READY after the rebuild: %r" % m)
    if "does not exist: rebuilding it from WAL" not in open(os.path.join(TMP, "log2")).read():
        fail("no rebuild logged")
    shm = os.stat("/dev/shm" + NAME)
    if shm.st_mode & 0o7777 != 0o660 or shm.st_gid != 1:
        fail("rebuilt segment has mode %o gid %d, not 0660 gid 1 as created"
             % (shm.st_mode & 0o7777, shm.st_gid))
    st = status()
    if st["wal_lsn"] != 4 or st["units_total"] != 106:
        fail("rebuilt segment: wal_lsn %d, units_total %d (want 4, 106)"
             % (st["wal_lsn"], st["units_total"]))

    # A crash (kill -9): the segment stays; the same command starts plainly.
    fs("load", "--name", NAME, "--activity", "7", "--sku", "4", "--units", "2")
    end = time.monotonic() + 10
    while status()["wal_lsn"] != 5:
        if time.monotonic() > end:
            fail("LSN 5 not durable within 10 s")
        time.sleep(0.05)
    p.kill()
    p.wait()
    p = serve(mgr, "log3", ["--recover-if-absent", "--reconcile-every", "0"])
    m = mgr.wait_for("READY", 30, p)
    if "durable through LSN 5" not in m.get("STATUS", ""):
        fail("READY after kill -9: %r" % m)
    if "rebuilding" in open(os.path.join(TMP, "log3")).read():
        fail("--recover-if-absent rebuilt the segment a killed daemon left")
    if status()["units_total"] != 108:
        fail("units_total %d after the restart, want 108" % status()["units_total"])
    stop(mgr, p)
    print("ok: serve --recover-if-absent started plainly on an existing segment, rebuilt a "
          "destroyed one from snapshot + WAL (LSN 4, 106 units, mode 0660 and its group kept) before READY=1, and after "
          "kill -9 started plainly again with LSN 5 and 108 units")


try:
    {"protocol": protocol, "restart": restart}[MODE]()
finally:
    cleanup()
