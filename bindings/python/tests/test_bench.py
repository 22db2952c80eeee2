"""test_bench.py -- a tiny run of bench/bench_orders.py, so the program cannot
rot: against a private redis-server on a unix socket in a temp directory,
both engines print their line and every order of the timed part succeeded
(the program exits 1 otherwise); and its batch mode (--batch K, a last
batch shorter than K) sells every unit through order_many.  It asserts no
timing."""
import os
import re
import subprocess
import sys
import time

BENCH = os.path.join(os.environ.get("FLASH_PY_SRC", os.path.dirname(__file__) + "/.."),
                     "bench", "bench_orders.py")


def test_bench_program_runs_both_engines_and_every_order_succeeds(tmpdir_path):
    sock = os.path.join(tmpdir_path, "redis.sock")
    redis = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock,
                              "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                              "--dir", tmpdir_path, "--logfile",
                              os.path.join(tmpdir_path, "redis.log")])
    try:
        deadline = time.time() + 20
        while not os.path.exists(sock):
            assert redis.poll() is None, "redis-server exited %d" % redis.returncode
            assert time.time() < deadline, "redis-server did not start"
            time.sleep(0.05)
        p = subprocess.run([sys.executable, BENCH, "--orders", "3000", "--redis-socket", sock,
                            "--redis-orders", "500"], capture_output=True, text=True,
                           timeout=120)
    finally:
        redis.terminate()
        redis.wait(30)
    print(p.stdout, p.stderr)
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"bench binding=python engine=flashstock orders=3000 ns_per_order=\d+",
                        lines[0])
    assert re.fullmatch(r"bench binding=python engine=redis-lua orders=500 ns_per_order=\d+",
                        lines[1])


def test_bench_program_batch_mode_places_every_order_in_batches():
    p = subprocess.run([sys.executable, BENCH, "--orders", "3000", "--batch", "16"],
                       capture_output=True, text=True, timeout=120)
    print(p.stdout, p.stderr)
    assert p.returncode == 0
    assert re.fullmatch(r"bench binding=python engine=flashstock-batch16 orders=3000 batch=16 "
                        r"ns_per_order=\d+\n", p.stdout)
    p = subprocess.run([sys.executable, BENCH, "--orders", "10", "--batch", "0"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--batch must be 1 or more" in p.stderr
