"""test_api.py -- the Python binding covers the public API of
api/flashstock.h: struct layouts and constants agree with the C compiler's
(the bindings' manifest), the package's types have every field of the
structs they mirror, every result
code maps to a typed error carrying its code and name, and each call does
what the header says (segments, catalog, orders, cancels, restock, tokens,
locks, reading state, stats)."""
import dataclasses
import os
import pickle
import re
import subprocess
import time

import pytest

import flashstock
from flashstock import Activity, ActivityFlag, OrderState
from flashstock._native import ffi, lib

from conftest import Daemon, run_cli

NOW_NS = time.time_ns()


def open_sale(segs, units=5, limit=2, flags=ActivityFlag.CANCEL_RETURNS_QUOTA, **opts):
    name = segs.make(**opts)
    fs = flashstock.open(name)
    fs.activity_add(Activity(id=1, limit_per_user=limit, max_qty=3, flags=flags))
    fs.sku_add(1, 10, units)
    return fs


# ---------------------------------------------------------------- layouts and codes

def read_manifest():
    """flashstock.manifest (bindings/manifest/manifest.py), the C compiler's
    view of api/flashstock.h: (constants {name: value}, sizes {struct: size},
    fields {struct: [(field, offset, size)]})."""
    consts, sizes, fields = {}, {}, {}
    with open(os.environ["FLASH_MANIFEST"]) as f:
        for line in f:
            w = line.split()
            if w[0] in ("const", "enum"):
                consts[w[1]] = int(w[2])
            elif w[0] == "struct":
                sizes[w[1]] = int(w[2])
                fields[w[1]] = []
            elif w[0] == "field":
                struct, field = w[1].split(".", 1)
                fields[struct].append((field, int(w[2]), int(w[3])))
            else:
                raise ValueError("manifest line %r" % line)
    return consts, sizes, fields


def test_layouts_of_every_struct_equal_the_manifests():
    """The module's structs (from the manifest's declarations) against the C
    compiler's sizes and offsets, every struct of the header."""
    _, sizes, fields = read_manifest()
    assert len(sizes) >= 15
    for struct, cfields in fields.items():
        t = ffi.typeof("struct %s" % struct)
        assert ffi.sizeof(t) == sizes[struct], struct
        py = [(name, f.offset, ffi.sizeof(f.type)) for name, f in t.fields]
        assert py == cfields, struct
        print("%-26s %4d bytes, %2d fields: same offsets and sizes" % (struct, sizes[struct],
                                                                       len(cfields)))


def test_constants_of_the_module_equal_the_manifests():
    consts, _, _ = read_manifest()
    for name, value in consts.items():
        assert getattr(lib, name) == value, name


# The package's types and the structs they mirror: each type has every field
# of its struct, in the struct's order, under the field's name without the
# member prefix all its struct's fields share (fr_, fi_); padding and
# reserved fields (a leading "_") and the fields in `left_out` are not
# mirrored; a field in `flat` is a struct whose own fields the type has in
# its place.
MIRRORS = [
    (flashstock.SegOpts, "flash_seg_opts", (), {}),
    (flashstock.Activity, "flash_activity", (), {}),
    (flashstock.OrderRequest, "flash_order_req", (), {}),
    (flashstock.OrderResult, "flash_order_res", ("first_rc",), {}),   # an exception instead
    (flashstock.SkuInfo, "flash_sku_info", (), {}),
    (flashstock.OrderInfo, "flash_order_info", (), {}),
    (flashstock.CartLine, "flash_cart_line", (), {}),
    (flashstock.CartResult, "flash_cart_res", ("first_rc", "line", "sold_out"), {}),  # raised
    (flashstock.Stats, "flash_stats", (), {}),
    (flashstock.Ident, "flash_ident", (), {}),
    (flashstock.Quiet, "flash_quiet", (), {}),
    (flashstock.FeedRecord, "flash_feed_rec", (), {"rec": "flash_record"}),
    (flashstock.FeedInfo, "flash_feed_info", (), {}),
]

# Fields a tuple type has at its end rather than in its struct's place: a
# tuple's positions are its API, so a field the struct gained in the middle
# is appended (OrderRequest's reserve_ms, after request_id, not after qty).
APPENDED = {"flash_order_req": ("reserve_ms", "activity_version", "sku_version")}


def mirrored_names(fields, struct, flat):
    """The Python names of struct's fields, in order (see MIRRORS)."""
    cf = [f for f, _, _ in fields[struct]]
    prefix = cf[0].split("_", 1)[0] + "_" if "_" in cf[0].lstrip("_") else ""
    if not all(f.startswith(prefix) for f in cf):
        prefix = ""
    out = []
    for f in (f[len(prefix):] for f in cf):
        if f in flat:
            out += mirrored_names(fields, flat[f], {})
        elif not f.startswith("_"):
            out.append(f)
    return out


def mirror_differences(fields):
    """One line per field of a mirrored struct that its Python type lacks or
    has with no C field (or has in another order), naming both."""
    diffs = []
    for typ, struct, left_out, flat in MIRRORS:
        if struct not in fields:
            diffs.append("struct %s: not in the manifest (flashstock.%s)" % (struct, typ.__name__))
            continue
        want = [f for f in mirrored_names(fields, struct, flat) if f not in left_out]
        last = APPENDED.get(struct, ())
        want = [f for f in want if f not in last] + [f for f in want if f in last]
        have = list(getattr(typ, "_fields", None) or typ.__dataclass_fields__)
        diffs += ["%s.%s: a field of the header that flashstock.%s does not have"
                  % (struct, f, typ.__name__) for f in want if f not in have]
        diffs += ["flashstock.%s.%s: no field %s in struct %s" % (typ.__name__, f, f, struct)
                  for f in have if f not in want]
        if sorted(want) == sorted(have) and want != have:
            diffs.append("flashstock.%s: fields in the order %s, struct %s's is %s"
                         % (typ.__name__, have, struct, want))
    return diffs


def test_order_states_and_record_types_are_the_headers_enumerators():
    """OrderState is enum flash_order_state and RecordType enum
    flash_rec_type (and GAP, the refill's own), member for member: a state
    or record type the header gains and the module lacks is named."""
    consts, _, _ = read_manifest()
    for enum, prefix, own in ((OrderState, "FLASH_ORDER_", {}),
                              (flashstock.RecordType, "FLASH_REC_", {"GAP": 0})):
        header = {n[len(prefix):]: v for n, v in consts.items() if n.startswith(prefix)}
        flags = {n: header.pop(n) for n in list(header) if n.startswith("F_")}   # FLASH_REC_F_*
        assert {m.name: m.value for m in enum} == dict(header, **own), enum.__name__
    # not record types: the flags of a cart's lines, which FeedRecord.cart/.last read
    assert flags == {"F_CART": flashstock._types.REC_F_CART, "F_LAST": flashstock._types.REC_F_LAST}


def test_types_mirror_every_field_of_their_structs():
    _, _, fields = read_manifest()
    assert mirror_differences(fields) == []


def test_a_header_field_the_types_do_not_follow_is_named():
    """The check above, against a manifest whose flash_stats has a field the
    binding does not know and whose flash_quiet lost one it has."""
    _, _, fields = read_manifest()
    fields["flash_stats"].insert(3, ("planted", 0, 8))
    fields["flash_quiet"] = [f for f in fields["flash_quiet"] if f[0] != "pending"]
    assert mirror_differences(fields) == [
        "flash_stats.planted: a field of the header that flashstock.Stats does not have",
        "flashstock.Quiet.pending: no field pending in struct flash_quiet"]


def header_codes():
    """[(name, value)] of every result code of the header, from the manifest."""
    consts, _, _ = read_manifest()
    return [(name, v) for name, v in consts.items() if name.startswith("FLASH_E") and v < 0]


def test_every_header_code_maps_to_an_error_named_as_its_macro_with_its_code():
    codes = header_codes()
    assert len(codes) >= 37
    for name, code in codes:
        e = flashstock.error_for(code)
        assert isinstance(e, flashstock.FlashError)
        assert e.name == name, (code, e.name)
        assert e.code == code
        assert flashstock.rcname(code) == name
        assert name in str(e) and flashstock.strerror(code) in str(e)
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.code == code and back.name == name
    assert dict(codes) == flashstock.CODES


def test_common_refusals_have_their_own_types_and_unknown_codes_the_base_type():
    named = {
        "FLASH_ESOLD_OUT": flashstock.SoldOut, "FLASH_ELIMIT": flashstock.LimitReached,
        "FLASH_ENOT_STARTED": flashstock.NotStarted, "FLASH_EENDED": flashstock.Ended,
        "FLASH_ENOT_FOUND": flashstock.NotFound, "FLASH_EBAD_TOKEN": flashstock.BadToken,
        "FLASH_EDUPLICATE": flashstock.Duplicate, "FLASH_EFULL": flashstock.Full,
        "FLASH_EINVAL": flashstock.InvalidArgument, "FLASH_EBUSY": flashstock.Busy,
        "FLASH_ELOCKED": flashstock.Locked, "FLASH_ENOT_OWNER": flashstock.NotOwner,
        "FLASH_ECANCELLED": flashstock.Cancelled, "FLASH_EWRONG_THREAD": flashstock.WrongThread,
        "FLASH_EFORK": flashstock.Fork, "FLASH_EFATE_UNKNOWN": flashstock.FateUnknown,
        "FLASH_EDURABILITY": flashstock.DurabilityFailed, "FLASH_EEXIST": flashstock.Exists,
        "FLASH_ENOSEG": flashstock.NoSegment, "FLASH_EREADONLY": flashstock.ReadOnly,
        "FLASH_ENOPROC": flashstock.NoProc, "FLASH_ECORRUPT": flashstock.Corrupt,
        "FLASH_EMAGIC": flashstock.AttachError, "FLASH_EMODE": flashstock.AttachError,
        "FLASH_ETIMEOUT": flashstock.Timeout, "FLASH_ELOST": flashstock.Lost,
        "FLASH_EAHEAD": flashstock.Ahead, "FLASH_EFEED_IDENT": flashstock.FeedIdentMismatch,
        "FLASH_EREFILL": flashstock.RefillUnavailable,
        "FLASH_EARCHIVED": flashstock.Archived, "FLASH_ENOT_ENDED": flashstock.NotEnded,
        "FLASH_EDESTROYED": flashstock.Destroyed,
        "FLASH_EEXPIRED": flashstock.Expired, "FLASH_ENOT_DUE": flashstock.NotDue,
        "FLASH_ECONFIRMED": flashstock.Confirmed, "FLASH_ESTALE": flashstock.Stale,
    }
    for name, cls in named.items():
        assert isinstance(flashstock.error_for(flashstock.CODES[name]), cls), name
    assert isinstance(flashstock.error_for(-9), ValueError)
    # a code the header does not have (as a newer library's would be): base
    # type, its code kept, the library's name for it
    for code in (-99, -1000, -117):
        e = flashstock.error_for(code)
        assert type(e) is flashstock.FlashError
        assert e.code == code and e.name == flashstock.rcname(code)


# ---------------------------------------------------------------- segments

def test_segment_create_open_options_destroy(segs):
    assert flashstock.seg_size(max_orders=1000) > 0
    with pytest.raises(flashstock.InvalidArgument):
        flashstock.seg_size(ring_records=1000)  # not a power of two
    name = segs.make(max_orders=1024)
    with pytest.raises(flashstock.Exists):
        flashstock.seg_create(name, max_orders=1024)
    with flashstock.open(name) as fs:
        o = fs.seg_opts()
        assert o.max_orders == 1024 and o.mode == 0o600
        assert o.durability == flashstock.Durability.ASYNC
        d = flashstock.seg_opts_default()
        assert dataclasses.replace(o, max_orders=d.max_orders, max_activities=d.max_activities,
                                   max_skus=d.max_skus, max_shards=d.max_shards,
                                   max_users=d.max_users, max_tokens=d.max_tokens,
                                   max_requests=d.max_requests, max_locks=d.max_locks,
                                   max_procs=d.max_procs, ring_records=d.ring_records) == d
        assert fs.slot() >= 0
        assert fs.stats().segment_bytes == flashstock.seg_size(o)
    assert fs.closed
    with pytest.raises(flashstock.Closed):
        fs.stats()
    flashstock.seg_destroy(name)
    with pytest.raises(flashstock.NoSegment):
        flashstock.open(name)
    with pytest.raises(flashstock.NoSegment):
        flashstock.seg_destroy(name)


def test_readonly_handle_reads_and_refuses_writes(segs):
    fs = open_sale(segs)
    with flashstock.open(fs.name, readonly=True) as ro:
        assert ro.slot() == -1
        assert ro.sku_get(1, 10).available == 5
        with pytest.raises(flashstock.ReadOnly):
            ro.order(1, 10, 7)
    fs.close()


def test_pickled_object_reopens_the_segment(segs):
    fs = open_sale(segs)
    other = pickle.loads(pickle.dumps(fs))
    assert other is not fs and other.name == fs.name
    assert other.order(1, 10, 3).order_no > 0
    assert fs.sku_get(1, 10).available == 4
    other.close()
    fs.close()


# ---------------------------------------------------------------- catalog

def test_catalog_add_iterate_and_refusals(segs):
    name = segs.make()
    with flashstock.open(name) as fs:
        with pytest.raises(flashstock.InvalidArgument):
            flashstock.activity_check(Activity(id=0))
        flashstock.activity_check(Activity(id=5))
        a = Activity(id=5, limit_per_user=3, max_qty=2, scope=flashstock.Scope.SKU,
                     flags=ActivityFlag.TOKEN_REQUIRED, day_offset_s=3600,
                     start_ns=NOW_NS - 10**9, end_ns=NOW_NS + 3600 * 10**9)
        fs.activity_add(a)
        with pytest.raises(flashstock.Exists):
            fs.activity_add(a)
        fs.sku_add(5, 1, 100, shards=4)
        fs.sku_add(5, 2, 7)
        with pytest.raises(flashstock.NotFound):
            fs.sku_add(6, 1, 1)
        with pytest.raises(flashstock.InvalidArgument):
            fs.sku_add(5, 3, 1, shards=17)
        got = fs.activity_at(0)
        assert got.version > 0                      # the segment's, whatever add was given
        assert dataclasses.replace(got, version=0) == a
        assert list(fs.activities()) == [got] and fs.activity_get(5) == got
        skus = list(fs.skus())
        assert [(s.sku_id, s.shards, s.total, s.available) for s in skus] == [(1, 4, 100, 100),
                                                                              (2, 1, 7, 7)]
        assert fs.sku_get(5, 2) == skus[1] and skus[1].sold == 0
        with pytest.raises(flashstock.NotFound):
            fs.sku_get(5, 9)
        with pytest.raises(flashstock.NotFound):
            fs.activity_at(1)


# ---------------------------------------------------------------- orders

def test_order_limit_sold_out_and_the_order_record(segs):
    fs = open_sale(segs, units=3, limit=2)
    r1 = fs.order(1, 10, 100)
    assert r1.order_no > 0 and r1.limit_slot == 1 and r1.lsn > 0
    assert r1 == flashstock.OrderResult(r1.order_no, 1, r1.lsn) and dataclasses.is_dataclass(r1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r1.order_no = 5
    r2 = fs.order(1, 10, 100)
    assert r2.limit_slot == 2
    with pytest.raises(flashstock.LimitReached) as ei:
        fs.order(1, 10, 100)
    assert ei.value.code == -2 and ei.value.name == "FLASH_ELIMIT"
    with pytest.raises(flashstock.SoldOut):
        fs.order(1, 10, 101, qty=2)
    fs.order(1, 10, 101)
    with pytest.raises(flashstock.SoldOut):
        fs.order(1, 10, 102)
    info = fs.order_get(r1.order_no)
    assert (info.user_id, info.activity_id, info.sku_id, info.qty, info.state,
            info.limit_slot) == (100, 1, 10, 1, OrderState.ACTIVE, 1)
    assert abs(info.created_ns - time.time_ns()) < 60 * 10**9
    assert fs.orders_max() >= r2.order_no
    with pytest.raises(flashstock.InvalidArgument):
        fs.order(1, 10, 0)
    with pytest.raises(flashstock.InvalidArgument):
        fs.order(1, 10, 5, qty=4)  # above max_qty
    with pytest.raises(flashstock.NotFound):
        fs.order(1, 11, 5)
    st = fs.stats()
    assert st.orders == 3 and st.sold_out == 2 and st.limit_hits == 1
    fs.close()


def test_request_id_retry_returns_the_first_outcome(segs):
    fs = open_sale(segs, units=1, limit=1)
    r = fs.order(1, 10, 200, request_id=777)
    with pytest.raises(flashstock.Duplicate) as ei:
        fs.order(1, 10, 200, request_id=777)
    d = ei.value
    assert d.first_ok and d.first_code == 0 and d.order_no == r.order_no
    assert d.limit_slot == r.limit_slot
    with pytest.raises(flashstock.SoldOut):
        fs.order(1, 10, 201, request_id=778)
    with pytest.raises(flashstock.Duplicate) as ei:
        fs.order(1, 10, 201, request_id=778)
    assert not ei.value.first_ok and ei.value.first_name == "FLASH_ESOLD_OUT"
    assert fs.sku_get(1, 10).available == 0
    fs.close()


def test_duplicate_gives_its_first_outcome_as_that_outcomes_class(segs):
    fs = open_sale(segs, units=2, limit=1)
    placed = fs.order(1, 10, 300, request_id=900)
    with pytest.raises(flashstock.LimitReached):
        fs.order(1, 10, 300, request_id=901)        # the user's second order
    fs.order(1, 10, 301)                            # the last unit
    with pytest.raises(flashstock.SoldOut):
        fs.order(1, 10, 302, request_id=902)
    want = {900: (300, flashstock.OrderResult), 901: (300, flashstock.LimitReached),
            902: (302, flashstock.SoldOut)}         # request id: (user, first outcome's class)
    for rid, (user, cls) in want.items():           # the retries, one by one
        with pytest.raises(flashstock.Duplicate) as ei:
            fs.order(1, 10, user, request_id=rid)
        d = ei.value
        assert d.first is cls, (rid, d.first)
        # the int stays for the callers that used it
        assert d.first_code == (0 if cls is flashstock.OrderResult else flashstock.CODES[cls.CODE])
        # pickled (a multiprocessing result), the class is still there
        assert pickle.loads(pickle.dumps(d)).first is cls
    # a batch returns the same Duplicates
    outs = fs.order_many([(1, 10, user, 1, 0, rid) for rid, (user, _) in want.items()])
    assert [type(x) for x in outs] == [flashstock.Duplicate] * 3
    assert [x.first for x in outs] == [cls for _, cls in want.values()]
    assert outs[0].order_no == placed.order_no
    # the classes catch as the first attempt's exception did
    assert issubclass(outs[2].first, flashstock.SoldOut)
    assert not issubclass(outs[1].first, flashstock.SoldOut)
    fs.close()


def test_named_errors_are_made_without_a_code_the_base_class_needs_one():
    e = flashstock.SoldOut()
    assert e.code == flashstock.CODES["FLASH_ESOLD_OUT"] and e.name == "FLASH_ESOLD_OUT"
    assert flashstock.Duplicate().first is flashstock.OrderResult   # first_code 0
    with pytest.raises(TypeError):
        flashstock.FlashError()
    with pytest.raises(TypeError):
        flashstock.AttachError()                    # one class for several codes
    assert flashstock.FlashError(-1).name == "FLASH_ESOLD_OUT"


def test_activity_window_not_started_and_ended(segs):
    name = segs.make()
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=2, start_ns=NOW_NS + 3600 * 10**9,
                                 end_ns=NOW_NS + 7200 * 10**9))
        fs.activity_add(Activity(id=3, start_ns=NOW_NS - 7200 * 10**9,
                                 end_ns=NOW_NS - 3600 * 10**9))
        fs.sku_add(2, 1, 5)
        fs.sku_add(3, 1, 5)
        with pytest.raises(flashstock.NotStarted):
            fs.order(2, 1, 9)
        with pytest.raises(flashstock.Ended):
            fs.order(3, 1, 9)


def test_tokens_required_issue_redeem_and_reuse(segs):
    fs = open_sale(segs, units=5, flags=ActivityFlag.TOKEN_REQUIRED)
    with pytest.raises(flashstock.BadToken):
        fs.order(1, 10, 300)
    t = fs.token_issue(1, 10, 300, 60000)
    assert t != 0
    assert fs.order(1, 10, 300, token=t).order_no > 0
    with pytest.raises(flashstock.BadToken):
        fs.order(1, 10, 300, token=t)  # used up
    t2 = fs.token_issue(1, 10, 301, 60000)
    with pytest.raises(flashstock.BadToken):
        fs.token_redeem(1, 10, 302, t2)  # another user's
    fs.token_redeem(1, 10, 301, t2)
    with pytest.raises(flashstock.BadToken):
        fs.token_redeem(1, 10, 301, t2)
    assert fs.stats().token_rejects >= 2
    fs.close()


def test_cancel_returns_units_once_and_restock(segs):
    fs = open_sale(segs, units=2, limit=1)
    r = fs.order(1, 10, 400, qty=2)
    assert fs.sku_get(1, 10).available == 0
    assert fs.cancel(r.order_no) == 2
    with pytest.raises(flashstock.Cancelled):
        fs.cancel(r.order_no)
    with pytest.raises(flashstock.NotFound):
        fs.cancel(10**9)
    assert fs.order_get(r.order_no).state == OrderState.CANCELLED
    assert fs.order(1, 10, 400).order_no > 0  # the activity returns the quota
    fs.restock(1, 10, 5)
    s = fs.sku_get(1, 10)
    assert (s.total, s.available, s.sold) == (7, 6, 1)
    with pytest.raises(flashstock.SoldOut):
        fs.restock(1, 10, -7)
    fs.restock(1, 10, -6)
    assert fs.sku_get(1, 10).available == 0
    with pytest.raises(flashstock.InvalidArgument):
        fs.restock(1, 10, 0)
    assert fs.stats().cancels == 1
    fs.close()


# ---------------------------------------------------------------- reservations

def test_a_reservation_is_reserved_with_its_pay_by_until_confirmed_and_confirming_again_is_ok(segs):
    fs = open_sale(segs, units=10, limit=1)
    before = time.time_ns()
    r = fs.order(1, 10, 500, qty=3, reserve_ms=60000)
    o = fs.order_get(r.order_no)
    assert o.state == OrderState.RESERVED
    assert before + 59 * 10**9 <= o.pay_by_ns <= time.time_ns() + 60 * 10**9, (before, o)
    assert fs.sku_get(1, 10).available == 7
    with pytest.raises(flashstock.LimitReached):       # the reservation holds the user's slot
        fs.order(1, 10, 500)
    with pytest.raises(flashstock.NotDue):
        fs.expire(r.order_no)
    fs.confirm(r.order_no)
    o = fs.order_get(r.order_no)
    assert (o.state, o.pay_by_ns) == (OrderState.ACTIVE, 0)
    fs.confirm(r.order_no)                             # a retried payment callback
    with pytest.raises(flashstock.Confirmed):
        fs.expire(r.order_no)
    plain = fs.order(1, 10, 501)
    assert fs.order_get(plain.order_no).pay_by_ns == 0
    fs.confirm(plain.order_no)                         # ACTIVE already: the same answer
    with pytest.raises(flashstock.InvalidArgument):
        fs.order(1, 10, 502, reserve_ms=flashstock.RESERVE_MS_MAX + 1)
    assert fs.sku_get(1, 10).available == 6
    s = fs.stats()
    assert (s.confirms, s.expiries) == (1, 0)
    fs.close()


def test_a_reservation_confirmed_after_its_deadline_is_expired_with_its_units_back(segs):
    fs = open_sale(segs, units=10, limit=1)
    late = fs.order(1, 10, 510, qty=2, reserve_ms=30)
    gone = fs.order(1, 10, 511, qty=1, reserve_ms=30)
    assert fs.sku_get(1, 10).available == 7
    time.sleep(0.06)
    with pytest.raises(flashstock.Expired):
        fs.confirm(late.order_no)
    o = fs.order_get(late.order_no)
    assert o.state == OrderState.EXPIRED and o.pay_by_ns > 0
    assert fs.sku_get(1, 10).available == 9
    with pytest.raises(flashstock.Expired):            # a cancel too late is answered the same
        fs.cancel(gone.order_no)
    with pytest.raises(flashstock.Expired):            # and expired once: nothing more back
        fs.expire(gone.order_no)
    assert fs.sku_get(1, 10).available == 10
    assert fs.order(1, 10, 510).order_no > 0           # the activity returns the limit slot
    s = fs.stats()
    assert (s.confirms, s.expiries, s.cancels) == (0, 2, 0)
    fs.close()


def test_expire_and_expire_due_take_back_only_what_is_due(segs):
    fs = open_sale(segs, units=20, limit=1)
    due = [x.order_no for x in fs.order_many(
        [flashstock.OrderRequest(1, 10, u, qty=2, reserve_ms=30) for u in (520, 521, 522)])]
    keep = fs.order(1, 10, 523, reserve_ms=60000).order_no
    # a plain tuple: reserve_ms is its seventh field, after request_id; a
    # tuple of six is a plain order whatever its token and request id
    [kept, plain] = fs.order_many([(1, 10, 525, 1, 0, 0, 60000), (1, 10, 526, 1, 0, 7)])
    assert fs.order_get(kept.order_no).state == OrderState.RESERVED
    assert fs.order_get(plain.order_no).state == OrderState.ACTIVE
    paid = fs.order(1, 10, 524, reserve_ms=60000).order_no
    fs.confirm(paid)
    assert [fs.order_get(n).state for n in due] == [OrderState.RESERVED] * 3
    assert fs.sku_get(1, 10).available == 10
    time.sleep(0.06)
    assert fs.expire(due[0]) == 2
    assert fs.expire_due(1) == 1                       # at most one
    assert fs.expire_due() == 1                        # the last one due
    assert fs.expire_due() == 0
    assert [fs.order_get(n).state for n in due] == [OrderState.EXPIRED] * 3
    assert fs.order_get(keep).state == OrderState.RESERVED
    assert fs.order_get(paid).state == OrderState.ACTIVE
    assert fs.order_get(kept.order_no).state == OrderState.RESERVED
    assert fs.sku_get(1, 10).available == 16
    assert fs.cancel(keep) == 1
    s = fs.stats()
    assert (s.confirms, s.expiries, s.cancels) == (1, 3, 1)
    fs.close()


# ---------------------------------------------------------------- carts

def open_cart_sale(segs, units=(5, 5, 5), limit=2, **opts):
    """Activity 1 (limit per user, max_qty 3) with skus 10, 11, 12 of
    `units` each."""
    name = segs.make(**opts)
    fs = flashstock.open(name)
    fs.activity_add(Activity(id=1, limit_per_user=limit, max_qty=3,
                             flags=ActivityFlag.CANCEL_RETURNS_QUOTA))
    for sku, u in zip((10, 11, 12), units):
        fs.sku_add(1, sku, u)
    return fs


def available(fs):
    return [fs.sku_get(1, sku).available for sku in (10, 11, 12)]


def test_a_cart_takes_every_lines_units_under_one_number_and_one_limit_slot(segs):
    fs = open_cart_sale(segs)
    r = fs.cart_order(1, 700, [(10, 2), flashstock.CartLine(11, 1), (12, 3, 0)],
                      request_id=7001)
    assert isinstance(r, flashstock.CartResult) and r.order_no > 0 and r.limit_slot == 1
    assert r.lsn > 0
    assert available(fs) == [3, 4, 2]
    head = fs.order_get(r.order_no)
    assert (head.order_no, head.user_id, head.sku_id, head.qty, head.state, head.line,
            head.lines) == (r.order_no, 700, 10, 2, OrderState.ACTIVE, 0, 3)
    for i in (1, 2):                    # the numbers its later lines hold
        o = fs.order_get(r.order_no + i)
        assert (o.state, o.line, o.lines) == (OrderState.NONE, i, 3), o
        with pytest.raises(flashstock.NotFound):
            fs.order_lines(r.order_no + i)
    lines = fs.order_lines(r.order_no)
    assert [(o.order_no, o.sku_id, o.qty, o.line, o.lines, o.state, o.user_id, o.limit_slot)
            for o in lines] == [(r.order_no, sku, q, i, 3, OrderState.ACTIVE, 700, 1)
                                for i, (sku, q) in enumerate(((10, 2), (11, 1), (12, 3)))]
    with pytest.raises(flashstock.Duplicate) as ei:     # its request id: the first outcome
        fs.cart_order(1, 700, [(10, 1), (11, 1)], request_id=7001)
    assert ei.value.first_ok and ei.value.order_no == r.order_no
    plain = fs.order(1, 10, 700)                        # one slot taken: the user's second
    assert plain.limit_slot == 2
    p = fs.order_lines(plain.order_no)
    assert [(o.sku_id, o.line, o.lines) for o in p] == [(10, 0, 1)]
    assert fs.order_get(plain.order_no).lines == 1
    with pytest.raises(flashstock.LimitReached):
        fs.cart_order(1, 700, [(11, 1)])
    assert available(fs) == [2, 4, 2]
    fs.close()


def test_a_cart_one_line_short_takes_nothing_and_names_the_line_and_every_short_one(segs):
    fs = open_cart_sale(segs, units=(5, 1, 2), limit=1)
    before = available(fs)
    with pytest.raises(flashstock.SoldOut) as ei:
        fs.cart_order(1, 710, [(10, 1), (11, 2), (12, 1)])
    assert (ei.value.line, ei.value.sold_out) == (1, [1])
    with pytest.raises(flashstock.SoldOut) as ei:
        fs.cart_order(1, 710, [(10, 3), (11, 2), (12, 3)])
    assert ei.value.sold_out == [1, 2] and ei.value.line in (1, 2), (ei.value.line,
                                                                     ei.value.sold_out)
    assert available(fs) == before                      # nothing taken
    # a line's sku unknown, its qty out of bounds, a sku twice: that line
    for lines, err, line in (([(10, 1), (11, 1), (13, 1)], flashstock.NotFound, 2),
                             ([(10, 1), (11, 0)], flashstock.InvalidArgument, 1),
                             ([(10, 1), (12, 4)], flashstock.InvalidArgument, 1),
                             ([(10, 1), (11, 1), (10, 1)], flashstock.InvalidArgument, 2)):
        with pytest.raises(err) as ei:
            fs.cart_order(1, 710, lines)
        assert ei.value.line == line, (lines, ei.value)
    with pytest.raises(flashstock.InvalidArgument):
        fs.cart_order(1, 710, [])
    with pytest.raises(flashstock.InvalidArgument):
        fs.cart_order(1, 710, [(s, 1) for s in range(flashstock.CART_LINES_MAX + 1)])
    assert available(fs) == before
    r = fs.cart_order(1, 710, [(10, 1), (11, 1), (12, 2)])   # the limit slot is still free
    assert r.limit_slot == 1 and available(fs) == [4, 0, 0]
    fs.close()


def test_cancelling_a_cart_returns_every_line_and_the_limit_slot(segs):
    fs = open_cart_sale(segs, limit=1)
    r = fs.cart_order(1, 720, [(10, 1), (11, 2), (12, 3)])
    assert available(fs) == [4, 3, 2]
    assert fs.cancel(r.order_no) == 6
    assert available(fs) == [5, 5, 5]
    assert [(o.state, o.line) for o in fs.order_lines(r.order_no)] == \
        [(OrderState.CANCELLED, i) for i in range(3)]
    with pytest.raises(flashstock.Cancelled):
        fs.cancel(r.order_no)
    with pytest.raises(flashstock.NotFound):            # a later line's number is no order
        fs.cancel(r.order_no + 1)
    assert available(fs) == [5, 5, 5]
    assert fs.cart_order(1, 720, [(11, 1), (12, 1)]).limit_slot == 1
    fs.close()


def test_a_cart_reservation_is_confirmed_or_expired_whole(segs):
    fs = open_cart_sale(segs, limit=2)
    paid = fs.cart_order(1, 730, [(10, 1), (11, 2)], reserve_ms=60000)
    late = fs.cart_order(1, 731, [(11, 1), (12, 3)], reserve_ms=30)
    assert available(fs) == [4, 2, 2]
    for no in (paid.order_no, late.order_no):
        ls = fs.order_lines(no)
        assert len(ls) == 2 and all(o.state == OrderState.RESERVED and o.pay_by_ns > 0
                                    for o in ls), ls
    with pytest.raises(flashstock.NotDue):
        fs.expire(paid.order_no)
    fs.confirm(paid.order_no)
    assert [(o.state, o.pay_by_ns) for o in fs.order_lines(paid.order_no)] == \
        [(OrderState.ACTIVE, 0)] * 2
    time.sleep(0.06)
    assert fs.expire(late.order_no) == 4
    assert [o.state for o in fs.order_lines(late.order_no)] == [OrderState.EXPIRED] * 2
    assert available(fs) == [4, 3, 5]
    with pytest.raises(flashstock.Expired):
        fs.confirm(late.order_no)
    again = fs.cart_order(1, 731, [(12, 1), (10, 1)], reserve_ms=30)   # expiry by expire_due
    time.sleep(0.06)
    assert fs.expire_due() == 1
    assert [o.state for o in fs.order_lines(again.order_no)] == [OrderState.EXPIRED] * 2
    assert available(fs) == [4, 3, 5]
    s = fs.stats()
    assert (s.confirms, s.expiries) == (1, 2)
    fs.close()


def test_an_activity_whose_limit_is_per_sku_refuses_carts(segs):
    fs = open_cart_sale(segs)
    fs.activity_add(Activity(id=2, limit_per_user=1, max_qty=3, scope=flashstock.Scope.SKU))
    fs.sku_add(2, 20, 5)
    fs.sku_add(2, 21, 5)
    with pytest.raises(flashstock.InvalidArgument):
        fs.cart_order(2, 740, [(20, 1), (21, 1)])
    assert [fs.sku_get(2, s).available for s in (20, 21)] == [5, 5]
    assert fs.order(2, 20, 740).order_no > 0            # a plain order still is one
    fs.close()


def test_a_records_cart_line_and_last_are_its_flags():
    def rec(t, flags):
        return flashstock.FeedRecord(1, 1, t, 0, 1, 10, 1, 5, 7, 0, 0, 0, 1, flags, 0,
                                     flashstock.FeedSource.WAL, flashstock.FeedMissing.NONE, 0)
    R = flashstock.RecordType
    cart = lib.FLASH_REC_F_CART
    assert (rec(R.ORDER, cart).cart, rec(R.ORDER, cart).line, rec(R.ORDER, cart).last) == \
        (True, 0, False)
    x = rec(R.CANCEL, cart | lib.FLASH_REC_F_LAST | (15 << 10) | 1)
    assert (x.cart, x.line, x.last) == (True, 15, True)
    x = rec(R.EXPIRE, cart | (3 << 10))
    assert (x.cart, x.line, x.last) == (True, 3, False)
    assert (rec(R.ORDER, 0x8000 | 0x35).cart, rec(R.ORDER, 0x8035).last) == (False, True)
    assert (rec(R.RESTOCK, 0).cart, rec(R.RESTOCK, 0).last) == (False, False)


# ---------------------------------------------------------------- versioned terms

def test_an_order_naming_old_terms_is_stale_takes_nothing_and_the_new_version_orders(segs):
    fs = open_sale(segs, units=10, limit=2)
    seen_a, seen_s = fs.activity_get(1), fs.sku_get(1, 10)     # what the page showed
    assert seen_a.version > 0 and seen_s.version > 0 and seen_a.version != seen_s.version
    fs.order(1, 10, 700, activity_version=seen_a.version, sku_version=seen_s.version)
    new_v = fs.activity_update(dataclasses.replace(seen_a, limit_per_user=3))
    assert new_v > seen_a.version
    now = fs.activity_get(1)
    assert (now.limit_per_user, now.version) == (3, new_v)
    before = (fs.sku_get(1, 10), fs.stats().orders, fs.orders_max())
    with pytest.raises(flashstock.Stale) as ei:
        fs.order(1, 10, 700, request_id=9001, activity_version=seen_a.version)
    assert (ei.value.code, ei.value.name) == (-53, "FLASH_ESTALE")
    # nothing taken: stock, orders and the request id as they were ...
    assert (fs.sku_get(1, 10), fs.stats().orders, fs.orders_max()) == before
    placed = fs.order(1, 10, 700, request_id=9001, activity_version=new_v,
                      sku_version=seen_s.version)  # not a Duplicate: the id was not taken
    # ... and the user's limit: slot 2 of 3 now, then slot 3, then the limit
    assert placed.limit_slot == 2
    assert fs.order(1, 10, 700, activity_version=new_v).limit_slot == 3
    with pytest.raises(flashstock.LimitReached):
        fs.order(1, 10, 700, activity_version=new_v)
    # the sku's terms: a price set moves its version on; 0 checks nothing
    sku_v = fs.sku_price_set(1, 10, 1500)
    with pytest.raises(flashstock.Stale):
        fs.order(1, 10, 701, activity_version=new_v, sku_version=seen_s.version)
    assert fs.order(1, 10, 701, activity_version=new_v, sku_version=sku_v).order_no > 0
    assert fs.order(1, 10, 702).order_no > 0
    # a batch: the stale one refused, the orders after it placed
    got = fs.order_many([flashstock.OrderRequest(1, 10, 703, activity_version=seen_a.version),
                         flashstock.OrderRequest(1, 10, 704, activity_version=new_v,
                                                 sku_version=sku_v),
                         (1, 10, 705, 1, 0, 0, 0, new_v, seen_s.version)])   # a plain tuple
    assert [type(x) for x in got] == [flashstock.Stale, flashstock.OrderResult, flashstock.Stale]
    assert fs.sku_get(1, 10).available == 10 - 6
    fs.close()


def test_a_price_is_set_and_read_back_with_its_version(segs):
    fs = open_sale(segs)
    s0 = fs.sku_get(1, 10)
    assert (s0.price, s0.version > 0) == (0, True)     # a sku starts at price 0
    v1 = fs.sku_price_set(1, 10, 1999)
    s1 = fs.sku_get(1, 10)
    assert v1 > s0.version and (s1.price, s1.version) == (1999, v1)
    assert (s1.total, s1.available) == (s0.total, s0.available)
    v2 = fs.sku_price_set(1, 10, 1999)                 # the same price: a republished page
    assert v2 > v1 and fs.sku_get(1, 10).version == v2
    assert fs.sku_at(0) == fs.sku_get(1, 10) == list(fs.skus())[0]
    assert fs.sku_price_set(1, 10, flashstock.PRICE_MAX) > v2
    assert fs.sku_get(1, 10).price == flashstock.PRICE_MAX == (1 << 63) - 1
    v_max = fs.sku_get(1, 10).version
    with pytest.raises(flashstock.InvalidArgument):
        fs.sku_price_set(1, 10, flashstock.PRICE_MAX + 1)
    with pytest.raises(flashstock.NotFound):
        fs.sku_price_set(1, 11, 5)
    with pytest.raises(flashstock.NotFound):
        fs.sku_price_set(2, 10, 5)
    assert fs.sku_get(1, 10).version == v_max          # the refusals changed nothing
    assert fs.activity_get(1).version not in (s0.version, v1, v2, v_max)   # one counter
    with flashstock.open(fs.name, readonly=True) as ro:
        assert ro.sku_get(1, 10).price == flashstock.PRICE_MAX
        with pytest.raises(flashstock.ReadOnly):
            ro.sku_price_set(1, 10, 1)
    fs.close()


def test_bad_updates_are_refused_and_leave_the_terms_and_their_version(segs):
    fs = open_sale(segs, limit=2)
    a = fs.activity_get(1)
    for bad in (dataclasses.replace(a, limit_per_user=1),         # a limit never shrinks
                dataclasses.replace(a, scope=flashstock.Scope.SKU),
                dataclasses.replace(a, day_offset_s=3600),
                dataclasses.replace(a, start_ns=10, end_ns=10),
                dataclasses.replace(a, max_qty=0)):
        with pytest.raises(flashstock.InvalidArgument):
            fs.activity_update(bad)
        assert fs.activity_get(1) == a, bad
    with pytest.raises(flashstock.NotFound):
        fs.activity_update(dataclasses.replace(a, id=9))
    with pytest.raises(flashstock.NotFound):
        fs.activity_get(9)
    with flashstock.open(fs.name, readonly=True) as ro:
        assert ro.activity_get(1) == a
        with pytest.raises(flashstock.ReadOnly):
            ro.activity_update(a)
    assert fs.activity_get(1) == a
    # the same limit, a new window: taken, and a version of its own
    later = dataclasses.replace(a, end_ns=a.end_ns - 1)
    v = fs.activity_update(later)
    assert fs.activity_get(1) == dataclasses.replace(later, version=v) and v > a.version
    # a change based on the version read before that one: Stale, nothing changed;
    # version 0: whatever the version
    with pytest.raises(flashstock.Stale):
        fs.activity_update(dataclasses.replace(a, max_qty=3))
    assert fs.activity_get(1) == dataclasses.replace(later, version=v)
    v0 = fs.activity_update(dataclasses.replace(later, version=0, max_qty=3))
    assert fs.activity_get(1) == dataclasses.replace(later, version=v0, max_qty=3) and v0 > v
    fs.close()


def test_sync_order_without_daemon_is_fate_unknown_then_durable(segs, tmpdir_path):
    name = segs.make(durability=flashstock.Durability.SYNC)
    with flashstock.open(name, sync_wait_ms=50) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 3)
        with pytest.raises(flashstock.FateUnknown) as ei:
            fs.order(1, 10, 500, request_id=9)
        e = ei.value
        assert e.order_no > 0 and e.lsn > 0 and e.limit_slot == 1
        assert fs.order_get(e.order_no).state == OrderState.ACTIVE
        with pytest.raises(flashstock.FateUnknown):
            fs.durable_wait(e.lsn, 20)
        fs.sync_wait_set(30)  # this thread's handle: a cancel waits 30 ms, not 50
        with pytest.raises(flashstock.FateUnknown) as ec:
            fs.cancel(_placed(fs, 501))
        assert ec.value.units_returned == 1
        with pytest.raises(flashstock.InvalidArgument):
            fs.sync_wait_set(0)
        with pytest.raises(flashstock.Duplicate) as ed:
            fs.order(1, 10, 500, request_id=9)
        assert ed.value.order_no == e.order_no
        wal = os.path.join(tmpdir_path, "wal")
        run_cli("serve", "--name", name, "--wal", wal, "--once", "--no-snapshot")
        fs.durable_wait(e.lsn, 5000)  # now durable: returns
        dump = run_cli("wal", "dump", "--wal", wal).stdout
        assert re.search(r" order .* order=%d " % e.order_no, dump)


def _placed(fs, user):
    """An order in a sync segment without a daemon: placed, fate unknown."""
    with pytest.raises(flashstock.FateUnknown) as ei:
        fs.order(1, 10, user)
    return ei.value.order_no


# ---------------------------------------------------------------- batches (order_many)

def outcome(x):
    """What a test compares of one order's outcome: a placed order's fields,
    or a refusal's name with the fields its code gives a meaning."""
    if isinstance(x, flashstock.OrderResult):
        return ("FLASH_OK", x.order_no, x.limit_slot, x.lsn)
    assert isinstance(x, flashstock.FlashError), x
    if isinstance(x, flashstock.Duplicate):
        return (x.name, x.first_code, x.order_no, x.limit_slot)
    if isinstance(x, flashstock.FateUnknown):
        return (x.name, x.order_no, x.limit_slot, x.lsn)
    return (x.name,)


def one_by_one(fs, reqs):
    """The orders one order() call each: each result or the error it raised."""
    out = []
    for r in reqs:
        try:
            out.append(fs.order(*r))
        except flashstock.FlashError as e:
            out.append(e)
    return out


def batch_sale(segs):
    """Two activities: 1 (limit 2, max qty 3; sku 10 of 6 units) and 2
    (token required, limit 1; sku 20 of 2 units)."""
    fs = open_sale(segs, units=6, limit=2, flags=ActivityFlag.NONE)
    fs.activity_add(Activity(id=2, flags=ActivityFlag.TOKEN_REQUIRED))
    fs.sku_add(2, 20, 2)
    return fs


def batch_of_every_outcome(fs):
    """Requests meeting every refusal of an order, each followed by orders
    that are placed (tokens issued on fs)."""
    t = {u: fs.token_issue(2, 20, u, 60000) for u in (103, 104, 105)}
    R = flashstock.OrderRequest
    return [R(1, 10, 100, 1, 0, 1001),      # placed, slot 1
            R(1, 10, 100, 2, 0, 1002),      # placed, slot 2 (3 units left)
            R(1, 10, 100, 1, 0, 1003),      # limit
            R(1, 10, 101, 0),               # qty 0
            R(1, 10, 101, 4),               # above max_qty
            R(1, 10, 100, 1, 0, 1001),      # a retry of the first: its order
            R(1, 10, 101, 3, 0, 1004),      # placed: the last 3 units
            R(1, 10, 102, 1, 0, 1005),      # sold out
            R(1, 10, 102, 1, 0, 1005),      # a retry of a sold out: that outcome
            R(1, 11, 102),                  # no such sku
            R(2, 20, 103),                  # no token
            R(2, 20, 103, 1, t[103]),       # placed
            R(2, 20, 104, 1, t[104], 1006),  # placed: the last unit
            R(2, 20, 105, 1, t[105])]       # sold out


EVERY_OUTCOME = ["FLASH_OK", "FLASH_OK", "FLASH_ELIMIT", "FLASH_EINVAL", "FLASH_EINVAL",
                 "FLASH_EDUPLICATE", "FLASH_OK", "FLASH_ESOLD_OUT", "FLASH_EDUPLICATE",
                 "FLASH_ENOT_FOUND", "FLASH_EBAD_TOKEN", "FLASH_OK", "FLASH_OK",
                 "FLASH_ESOLD_OUT"]


def test_order_many_gives_what_the_orders_one_by_one_give(segs):
    single, batch = batch_sale(segs), batch_sale(segs)
    want = one_by_one(single, batch_of_every_outcome(single))
    got = batch.order_many(batch_of_every_outcome(batch))
    assert [outcome(x) for x in got] == [outcome(x) for x in want]
    assert [outcome(x)[0] for x in got] == EVERY_OUTCOME
    assert [type(x) for x in got] == [type(x) for x in want]
    # the duplicates answer the batch's own earlier outcomes
    assert (got[5].first_ok, got[5].order_no) == (True, got[0].order_no)
    assert (got[8].first_ok, got[8].first_name) == (False, "FLASH_ESOLD_OUT")
    for fs in (single, batch):
        assert [(s.sku_id, s.total, s.available) for s in fs.skus()] == [(10, 6, 0), (20, 2, 0)]
    placed = [x.order_no for x in got if isinstance(x, flashstock.OrderResult)]
    assert placed == [1, 2, 3, 4, 5]
    for no in placed:
        assert batch.order_get(no) == dataclasses.replace(
            single.order_get(no), created_ns=batch.order_get(no).created_ns)
    s1, s2 = single.stats(), batch.stats()
    assert (s2.orders, s2.sold_out, s2.limit_hits, s2.duplicates, s2.token_rejects) == \
           (s1.orders, s1.sold_out, s1.limit_hits, s1.duplicates, s1.token_rejects)
    assert s2.orders == 5
    # each outcome counted in the observation figures, as one by one
    assert batch.obs().ops["order"].results == single.obs().ops["order"].results
    single.close()
    batch.close()


def test_order_many_a_refusal_does_not_stop_the_orders_after_it(segs):
    fs = open_sale(segs, units=5, limit=1)
    got = fs.order_many([(1, 10, 1, 1, 0, 1),   # placed (4 left)
                         (1, 10, 1),            # limit
                         (1, 10, 2),            # placed (3 left)
                         (1, 10, 1, 1, 0, 1),   # a retry of the first: duplicate
                         (1, 10, 3),            # placed (2 left)
                         (1, 10, 4, 3),         # sold out for 3
                         (1, 10, 4, 1),         # placed (1 left): the limit slot came back
                         (1, 10, 5, 0),         # bad qty
                         (1, 10, 5),            # placed (0 left)
                         (1, 10, 6)])           # sold out
    assert [outcome(x)[0] for x in got] == [
        "FLASH_OK", "FLASH_ELIMIT", "FLASH_OK", "FLASH_EDUPLICATE", "FLASH_OK",
        "FLASH_ESOLD_OUT", "FLASH_OK", "FLASH_EINVAL", "FLASH_OK", "FLASH_ESOLD_OUT"]
    assert isinstance(got[1], flashstock.LimitReached) and isinstance(got[5], flashstock.SoldOut)
    assert isinstance(got[7], flashstock.InvalidArgument)
    assert got[3].order_no == got[0].order_no
    for i, user in ((0, 1), (2, 2), (4, 3), (6, 4), (8, 5)):
        info = fs.order_get(got[i].order_no)
        assert (info.user_id, info.qty, info.state) == (user, 1, OrderState.ACTIVE)
    s = fs.sku_get(1, 10)
    assert (s.available, s.sold) == (0, 5)
    assert fs.stats().orders == 5
    fs.close()


def test_order_many_takes_short_tuples_and_any_iterable_and_reuses_nothing_stale(segs):
    fs = open_sale(segs, units=3000, limit=1)
    # defaults of OrderRequest: qty 1, no token, no request id
    a = fs.order_many(iter([(1, 10, 1), (1, 10, 2, 2)]))
    assert [x.order_no for x in a] == [1, 2]
    assert (fs.order_get(1).qty, fs.order_get(2).qty) == (1, 2)
    # batches of growing and shrinking size: each answers its own orders
    # only (the thread's arrays are grown, and a batch above what a thread
    # keeps has arrays of its own)
    user = 10
    for n in (1, 40, 17, 1500, 3, 40):
        reqs = [(1, 10, u) for u in range(user, user + n)]
        got = fs.order_many(reqs + [(1, 10, user)])   # the first user again: limit
        assert len(got) == n + 1
        assert all(isinstance(x, flashstock.OrderResult) for x in got[:n])
        assert isinstance(got[n], flashstock.LimitReached)
        assert [fs.order_get(x.order_no).user_id for x in got[:n]] == list(range(user, user + n))
        user += n
    assert fs.sku_get(1, 10).available == 3000 - 3 - (user - 10)
    fs.close()


def test_order_many_empty_batch_returns_an_empty_list_and_places_nothing(segs):
    fs = open_sale(segs, units=5)
    before = (fs.orders_max(), fs.stats(), fs.obs().ops["order"].results)
    assert fs.order_many([]) == []
    assert fs.order_many(()) == []
    assert fs.order_many(x for x in ()) == []
    assert (fs.orders_max(), fs.stats(), fs.obs().ops["order"].results) == before
    fs.close()
    with pytest.raises(flashstock.Closed):
        fs.order_many([])
    with pytest.raises(flashstock.Closed):
        fs.order_many([(1, 10, 1)])


def test_order_many_raises_for_the_call_and_then_runs_no_order(segs):
    fs = open_sale(segs, units=5, limit=5)
    with flashstock.open(fs.name, readonly=True) as ro:
        with pytest.raises(flashstock.ReadOnly):
            ro.order_many([(1, 10, 7), (1, 10, 8)])
    # a request that is not one raises what order() raises, before any order
    with pytest.raises(OverflowError):
        fs.order(1, 10, -1)
    with pytest.raises(OverflowError):
        fs.order_many([(1, 10, 7), (1, 10, -1)])
    with pytest.raises(OverflowError):
        fs.order_many([(1, 10, 7), (1, 10, 1 << 64)])
    with pytest.raises(TypeError):
        fs.order_many([(1, 10, 7), (1, 10, "8")])
    with pytest.raises(TypeError):
        fs.order_many([(1, 10, 7), (1, 10, 8, 1, 0, 0, 0, 0, 0, 9)])   # a field too many
    with pytest.raises(TypeError):
        fs.order_many([(1, 10, 7), (1, 10)])                  # user missing
    s = fs.sku_get(1, 10)
    assert s.available == 5 and fs.stats().orders == 0 and fs.orders_max() == 0
    assert [outcome(x)[0] for x in fs.order_many([(1, 10, 7)])] == ["FLASH_OK"]
    fs.close()


def test_order_many_in_sync_without_daemon_gives_every_placed_order_fate_unknown(
        segs, tmpdir_path):
    name = segs.make(durability=flashstock.Durability.SYNC)
    with flashstock.open(name, sync_wait_ms=50) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 2)
        got = fs.order_many([(1, 10, 1, 1, 0, 71), (1, 10, 1), (1, 10, 2), (1, 10, 3)])
        assert [outcome(x)[0] for x in got] == ["FLASH_EFATE_UNKNOWN", "FLASH_ELIMIT",
                                                "FLASH_EFATE_UNKNOWN", "FLASH_ESOLD_OUT"]
        a, b = got[0], got[2]
        assert 0 < a.order_no < b.order_no and 0 < a.lsn < b.lsn and a.limit_slot == 1
        for e in (a, b):
            assert fs.order_get(e.order_no).state == OrderState.ACTIVE
        assert fs.sku_get(1, 10).available == 0
        dup = fs.order_many([(1, 10, 1, 1, 0, 71)])[0]
        assert isinstance(dup, flashstock.Duplicate) and dup.order_no == a.order_no
        wal = os.path.join(tmpdir_path, "wal")
        run_cli("serve", "--name", name, "--wal", wal, "--once", "--no-snapshot")
        fs.durable_wait(b.lsn, 5000)
        dump = run_cli("wal", "dump", "--wal", wal).stdout
        for e in (a, b):
            assert re.search(r" order .* order=%d " % e.order_no, dump)


def test_order_many_in_sync_with_the_daemon_is_acknowledged_and_in_the_wal(segs, tmpdir_path):
    name = segs.make(durability=flashstock.Durability.SYNC)
    wal = os.path.join(tmpdir_path, "wal")
    with flashstock.open(name) as fs:
        fs.activity_add(Activity(id=1))
        fs.sku_add(1, 10, 20)
        d = Daemon(name, wal)
        try:
            got = []
            for first in (1, 9, 17):
                got += fs.order_many([(1, 10, u) for u in range(first, first + 8)])
        finally:
            d.stop()
    assert [outcome(x)[0] for x in got] == ["FLASH_OK"] * 20 + ["FLASH_ESOLD_OUT"] * 4
    dump = run_cli("wal", "dump", "--wal", wal).stdout
    in_wal = {int(m) for m in re.findall(r" order .* order=(\d+) ", dump)}
    assert in_wal == {x.order_no for x in got[:20]}


# ---------------------------------------------------------------- locks

def test_leased_locks_fence_owner_and_context_manager(segs):
    name = segs.make()
    with flashstock.open(name) as fs:
        f1 = fs.lock_acquire("stock-sync", 11, 60000)
        with pytest.raises(flashstock.Locked):
            fs.lock_acquire("stock-sync", 12, 60000)
        fs.lock_renew("stock-sync", 11, 60000)
        with pytest.raises(flashstock.NotOwner):
            fs.lock_renew("stock-sync", 12, 1000)
        with pytest.raises(flashstock.NotOwner):
            fs.lock_release("stock-sync", 12)
        fs.lock_release("stock-sync", 11)
        with fs.lock("stock-sync", 12, 60000) as f2:
            assert f2 > f1
            with pytest.raises(flashstock.Locked):
                fs.lock_acquire("stock-sync", 11, 60000)
        f3 = fs.lock_acquire("stock-sync", 11, 60000)
        assert f3 > f2
        with pytest.raises(flashstock.NotFound):
            fs.lock_release("never-taken", 11)
        with pytest.raises(flashstock.InvalidArgument):
            fs.lock_acquire("x" * (flashstock.LOCK_NAME_MAX + 1), 11, 1000)
        assert fs.stats().locks == 1


# ---------------------------------------------------------------- reading state

def test_ident_quiet_stats_and_recover(segs, tmpdir_path):
    fs = open_sale(segs)
    idn = fs.ident()
    assert idn.incarnation != 0 and idn.wal_lsn == 0 and idn.consumer_pid == 0
    fs.order(1, 10, 600)
    q = fs.quiet()
    assert q.in_flight == 0 and q.pending >= 1 and not q.quiet
    d = Daemon(fs.name, os.path.join(tmpdir_path, "wal"))
    try:
        deadline = time.time() + 20
        while not fs.quiet().quiet:
            assert time.time() < deadline, fs.quiet()
            time.sleep(0.02)
        assert fs.ident().consumer_pid == d.p.pid
    finally:
        d.stop()
    assert fs.ident().wal_lsn > 0
    assert fs.recover() == 0
    st = fs.stats()
    assert st.orders == 1 and st.procs == 1 and st.skus == 1 and st.activities == 1
    assert st.orders_cap == 8192 and st.durability == flashstock.Durability.ASYNC
    fs.close()


def test_attach_checks_raise_their_attach_error_subclass(segs):
    name = segs.make("bad")  # destroyed by the fixture whatever is under the name
    path = "/dev/shm" + name
    os.unlink(path)
    with open(path, "wb") as f:
        f.write(b"\0" * 4096)
    os.chmod(path, 0o600)
    with pytest.raises(flashstock.AttachError) as ei:
        flashstock.open(name)
    assert type(ei.value) in (flashstock.BadSize, flashstock.BadMagic), ei.value
    os.unlink(path)
    os.mkfifo(path, 0o600)
    with pytest.raises(flashstock.NotRegular):
        flashstock.open(name)
    os.unlink(path)


def test_more_threads_than_process_slots_is_noproc_for_the_extra_thread(segs):
    import threading
    name = segs.make("procs", max_procs=2)
    fs = flashstock.open(name)
    fs.stats()                                  # slot 1 of 2: this thread's first call
    hold, go = threading.Event(), threading.Event()
    got = []

    def second():
        fs.stats()                              # slot 2 of 2
        hold.set()
        go.wait(30)

    def third():
        try:
            fs.stats()
            got.append("opened")
        except flashstock.NoProc as e:
            got.append(e.name)

    t2 = threading.Thread(target=second)
    t2.start()
    hold.wait(30)
    t3 = threading.Thread(target=third)
    t3.start()
    t3.join()
    go.set()
    t2.join()
    assert got == ["FLASH_ENOPROC"]
    t4 = threading.Thread(target=third)         # the second thread's slot is free again
    t4.start()
    t4.join()
    assert got == ["FLASH_ENOPROC", "opened"]
    fs.close()


def test_open_takes_no_slot_until_a_thread_first_calls(segs):
    import threading
    name = segs.make("lazy", max_procs=1)
    with flashstock.open(name, readonly=True) as ro:    # the observer: never a slot
        assert ro.stats().procs == 0
        fs = flashstock.open(name)
        other = flashstock.open(name)           # a second object: still no slot taken
        assert ro.stats().procs == 0
        inside, leave = threading.Event(), threading.Event()

        def worker():
            fs.stats()                          # its first call: its handle, its slot
            inside.set()
            leave.wait(30)

        t = threading.Thread(target=worker)
        t.start()
        assert inside.wait(30)
        assert ro.stats().procs == 1            # the worker's, not the opener's
        with pytest.raises(flashstock.NoProc):  # the one slot is the worker's
            other.stats()
        leave.set()
        t.join()
        assert ro.stats().procs == 0            # closed with its thread
        assert fs.slot() >= 0 and ro.stats().procs == 1     # this thread's first call
        fs.close()
        other.close()
        assert ro.stats().procs == 0
    # open() still checks the segment at once, without a slot
    flashstock.seg_destroy(name)
    with pytest.raises(flashstock.NoSegment):
        flashstock.open(name)
    with pytest.raises(flashstock.InvalidArgument):
        flashstock.open(segs.make("lazy2"), sync_wait_ms=0)


def test_an_object_left_open_gives_its_slot_back_at_interpreter_exit(segs):
    name = segs.make("exit")
    code = ("import flashstock, threading\n"
            "fs = flashstock.open(%r)\n"
            "t = threading.Thread(target=fs.stats); t.start(); t.join()\n"
            "fs.stats()\n" % name)      # no close(): the interpreter's exit closes it
    import sys
    subprocess.run([sys.executable, "-c", code], check=True)
    with flashstock.open(name) as fs:
        st = fs.stats()
        assert (st.procs, st.recoveries) == (1, 0)
