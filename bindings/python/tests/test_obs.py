"""test_obs.py -- FlashStock.obs() gives flash_obs_get's figures summed over
every handle of the segment: per operation its calls per result code (by
the code's name) and its latency histogram (buckets with their upper bounds
from flash_obs_bucket_le_ns, count, sum), and the lock wait and hold
histograms; a read-only handle reads the same."""
import threading

import flashstock
from flashstock import Activity

OPS = ["order", "cancel", "restock", "token_issue", "token_redeem", "lock_acquire",
       "lock_renew", "lock_release"]


def check_hist(h, count):
    assert h.count == count
    assert [le for le, _ in h.buckets] == list(flashstock.OBS_BUCKET_LE_NS)
    assert sum(n for _, n in h.buckets) == count
    assert (h.sum_ns > 0) == (count > 0)
    # every sample lies below its bucket's bound, so the sum does too
    assert h.sum_ns <= sum(le * n for le, n in h.buckets)


def test_bucket_bounds_double_from_64_ns_and_the_last_takes_everything_above():
    le = flashstock.OBS_BUCKET_LE_NS
    assert len(le) == 32
    assert le[0] == 64 and all(le[b] == 2 * le[b - 1] for b in range(1, 31))
    assert le[-1] == 2 ** 64 - 1


def test_obs_counts_each_call_by_result_and_times_it_summed_over_handles(segs):
    name = segs.make("obs")
    with flashstock.open(name) as fs:
        empty = fs.obs()
        assert list(empty.ops) == OPS
        for op in empty.ops.values():
            assert op.results == {} and op.calls == 0
            check_hist(op.time, 0)
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 2)
        o1 = fs.order(activity_id=1, sku_id=10, user_id=1)
        fs.order(activity_id=1, sku_id=10, user_id=2)
        try:
            fs.order(activity_id=1, sku_id=10, user_id=3)
            raise AssertionError("a third unit sold")
        except flashstock.SoldOut:
            pass
        fs.cancel(o1.order_no)
        try:
            fs.cancel(o1.order_no)
            raise AssertionError("cancelled twice")
        except flashstock.Cancelled:
            pass
        fs.token_issue(1, 10, 5, ttl_ms=60000)
        fs.lock_acquire("job", 1, 60000)
        try:
            fs.lock_acquire("job", 2, 60000)
            raise AssertionError("lock granted twice")
        except flashstock.Locked:
            pass
        fs.lock_release("job", 1)
        fs.lock_acquire("job", 2, 60000)        # owner 2 waited: one lock_wait sample
        fs.lock_release("job", 2)

        # another handle (a thread's own, closed when the thread ends) adds its figures
        t = threading.Thread(target=lambda: fs.restock(1, 10, 5))
        t.start()
        t.join()

        obs = fs.obs()
        ops = obs.ops
        assert ops["order"].results == {"FLASH_OK": 2, "FLASH_ESOLD_OUT": 1}
        check_hist(ops["order"].time, 1)        # a handle times its first order, then 1 in 16
        assert ops["cancel"].results == {"FLASH_OK": 1, "FLASH_ECANCELLED": 1}
        check_hist(ops["cancel"].time, 2)
        assert ops["restock"].results == {"FLASH_OK": 1}
        check_hist(ops["restock"].time, 1)
        assert ops["token_issue"].results == {"FLASH_OK": 1}
        assert ops["lock_acquire"].results == {"FLASH_OK": 2, "FLASH_ELOCKED": 1}
        check_hist(ops["lock_acquire"].time, 3)
        assert ops["lock_release"].results == {"FLASH_OK": 2}
        assert ops["lock_release"].calls == 2
        for op in ("token_redeem", "lock_renew"):
            assert ops[op].results == {}
        check_hist(obs.lock_wait, 1)
        check_hist(obs.lock_hold, 2)
        print("cancel: %d calls, mean %.0f ns; lock_wait %d ns"
              % (ops["cancel"].calls, ops["cancel"].time.mean_ns, obs.lock_wait.sum_ns))

        with flashstock.open(name, readonly=True) as ro:
            assert ro.obs() == obs
