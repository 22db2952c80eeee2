#!/usr/bin/python3
"""build_ffi.py -- the cffi definition of flashstock._native, the extension
module of the Python binding (API mode, out of line), for both builds:

  - CMake: `build_ffi.py HEADER OUT.c` writes the module's C source, which
    CMake compiles with the project's flags against libflashstock.so.
  - pip (setup.py, cffi_modules "build_ffi.py:ffi_from_pkgconfig"): the
    header and the library of an installed libflashstock, found with
    pkg-config; setuptools compiles the module.

The cdef below mirrors api/flashstock.h.  Every struct is declared whole
(no "..."), so the generated module carries the C compiler's offset and
size of every field, and cffi refuses a struct whose field sizes differ
from this text (flashstock/__init__.py uses each struct at import, so
that fails the import); a field the header does not have fails the
compile, one left out here is found by the python_api layout test.

Result codes are not listed here: every `#define FLASH_E... -N` line of
HEADER becomes a constant of the module (its value checked against the C
compiler's), so a code added to the header is known to the binding on the
next build without a change here.  Codes the library returns that the
header did not have when the module was built still work: the error
mapping asks flash_rcname() for their names at run time.
"""
import os
import re
import subprocess
import sys

import cffi

CDEF = r"""
#define FLASH_OK 0
#define FLASH_VERSION_MAJOR ...
#define FLASH_VERSION_MINOR ...
#define FLASH_CAP_MAX ...
#define FLASH_PROCS_MAX ...
#define FLASH_RING_MIN ...
#define FLASH_RING_MAX ...
#define FLASH_RDONLY ...
#define FLASH_ACT_CANCEL_RETURNS_QUOTA ...
#define FLASH_ACT_TOKEN_REQUIRED ...
#define FLASH_LIMIT_MAX ...
#define FLASH_QTY_MAX ...
#define FLASH_DAY_OFFSET_MAX_S ...
#define FLASH_SHARDS_MAX ...
#define FLASH_UNITS_MAX ...
#define FLASH_SYNC_WAIT_MS_DEFAULT ...
#define FLASH_LOCK_NAME_MAX ...
#define FLASH_OP_COUNT ...
#define FLASH_TIME_LOCK_WAIT ...
#define FLASH_TIME_LOCK_HOLD ...
#define FLASH_TIMES ...
#define FLASH_OBS_BUCKETS ...
#define FLASH_OBS_CODES ...
#define FLASH_FEED_NAME_MAX ...
#define FLASH_FEED_MISS_SLOT ...
#define FLASH_FEED_MISS_TS ...
#define FLASH_FEED_MISS_VALUE ...

enum flash_durability { FLASH_DURABILITY_ASYNC = 0, FLASH_DURABILITY_SYNC = 1 };
enum flash_scope { FLASH_SCOPE_ACTIVITY = 0, FLASH_SCOPE_SKU = 1, FLASH_SCOPE_DAY = 2 };
enum flash_order_state { FLASH_ORDER_NONE = 0, FLASH_ORDER_ACTIVE = 1, FLASH_ORDER_CANCELLED = 2 };

struct flash_seg_opts {
    uint32_t max_activities;
    uint32_t max_skus;
    uint32_t max_shards;
    uint32_t max_users;
    uint32_t max_tokens;
    uint32_t max_orders;
    uint32_t max_requests;
    uint32_t max_locks;
    uint32_t max_procs;
    uint32_t ring_records;
    uint32_t mode;
    int64_t  gid;
    uint32_t durability;
};

struct flash_activity {
    uint32_t id;
    uint32_t limit_per_user;
    uint32_t max_qty;
    uint32_t scope;
    uint32_t flags;
    int32_t  day_offset_s;
    int64_t  start_ns;
    int64_t  end_ns;
};

struct flash_order_req {
    uint32_t activity_id;
    uint32_t sku_id;
    uint64_t user_id;
    uint32_t qty;
    uint32_t _reserved;
    uint64_t token;
    uint64_t request_id;
};

struct flash_order_res {
    uint64_t order_no;
    int32_t  first_rc;
    uint32_t limit_slot;
    uint64_t lsn;
};

struct flash_sku_info {
    uint32_t activity_id;
    uint32_t sku_id;
    uint32_t shards;
    uint32_t _pad;
    uint64_t total;
    uint64_t available;
};

struct flash_order_info {
    uint64_t order_no;
    uint64_t user_id;
    uint32_t activity_id;
    uint32_t sku_id;
    uint32_t qty;
    uint32_t state;
    uint32_t limit_slot;
    uint32_t biz_day;
    int64_t  created_ns;
};

struct flash_stats {
    uint64_t orders;
    uint64_t cancels;
    uint64_t sold_out;
    uint64_t limit_hits;
    uint64_t token_rejects;
    uint64_t duplicates;
    uint64_t cas_retries;
    uint64_t recoveries;
    uint64_t rolled_back;
    uint64_t rolled_forward;
    uint32_t activities, activities_cap;
    uint32_t skus, skus_cap;
    uint32_t shards, shards_cap;
    uint32_t users, users_cap;
    uint32_t tokens, tokens_cap;
    uint32_t requests, requests_cap;
    uint32_t locks, locks_cap;
    uint32_t procs, procs_cap;
    uint64_t orders_used, orders_cap;
    uint64_t segment_bytes;
    uint32_t durability;
    uint32_t _pad;
};

struct flash_ident {
    uint64_t incarnation;
    uint64_t wal_lsn;
    int32_t  consumer_pid;
    uint32_t consumer_slot;
};

struct flash_quiet {
    uint64_t ops;
    uint64_t consumed;
    uint64_t pending;
    uint32_t in_flight;
    uint32_t _pad;
};

/* observation (section 8): the array bounds are FLASH_OBS_BUCKETS,
   FLASH_TIMES, FLASH_OP_COUNT and FLASH_OBS_CODES, written out so that the
   struct stays whole; flashstock/__init__.py checks them against the
   constants at import */
struct flash_hist {
    uint64_t bucket[32];
    uint64_t count;
    uint64_t sum_ns;
};

struct flash_obs {
    struct flash_hist time[10];
    uint64_t results[8][48];
};

/* records (section 9) and the order feed (section 10) */
struct flash_record {
    uint16_t type;
    uint16_t slot;
    uint32_t activity_id;
    uint32_t sku_id;
    uint32_t qty;
    uint64_t order_no;
    uint64_t user_id;
    int64_t  value;
    int64_t  ts_ns;
    uint32_t biz_day;
    uint16_t limit_slot;
    uint16_t flags;
    uint64_t request_id;
};

struct flash_feed_opts {
    uint32_t    from_start;
    uint32_t    no_create;
    const char *mysql_url;
    const char *mysql_stream;
};

struct flash_feed_rec {
    uint64_t            fr_lsn;
    uint64_t            fr_seq;
    struct flash_record fr_rec;
    uint32_t            fr_source;
    uint32_t            fr_missing;
    uint64_t            fr_gap;
};

struct flash_feed_info {
    char     fi_name[65];
    uint32_t fi_state;
    uint32_t fi_open;
    uint64_t fi_committed_lsn;
    uint64_t fi_durable_lsn;
    uint64_t fi_first_lsn;
    uint64_t fi_lag_records;
    uint64_t fi_lag_ns;
    int64_t  fi_created_ns;
    int64_t  fi_commit_ns;
};

typedef struct flash flash_t;
typedef struct flash_feed flash_feed_t;

const char *flash_strerror(int rc);
const char *flash_rcname(int rc);

void flash_seg_opts_default(struct flash_seg_opts *o);
int flash_seg_size(const struct flash_seg_opts *o, uint64_t *bytes);
int flash_seg_create(const char *name, const struct flash_seg_opts *o);
int flash_seg_destroy(const char *name);

int flash_open(const char *name, unsigned flags, flash_t **out);
int flash_close(flash_t *h);
int flash_recover(flash_t *h, uint32_t *recovered);
int flash_slot(const flash_t *h);
int flash_seg_opts_get(const flash_t *h, struct flash_seg_opts *out);

int flash_activity_add(flash_t *h, const struct flash_activity *a);
int flash_activity_check(const struct flash_activity *a);
int flash_sku_add(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                  uint64_t units, uint32_t shards);

int flash_order(flash_t *h, const struct flash_order_req *r, struct flash_order_res *res);
int flash_order_many(flash_t *h, const struct flash_order_req *r, uint32_t n,
                     struct flash_order_res *res, int *rcs);
int flash_sync_wait_set(flash_t *h, uint32_t wait_ms);
int flash_durable_wait(flash_t *h, uint64_t lsn, uint32_t wait_ms);
int flash_cancel(flash_t *h, uint64_t order_no, uint32_t *units_returned);
int flash_restock(flash_t *h, uint32_t activity_id, uint32_t sku_id, int64_t delta);

int flash_token_issue(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                      uint64_t user_id, uint32_t ttl_ms, uint64_t *token);
int flash_token_redeem(flash_t *h, uint32_t activity_id, uint32_t sku_id,
                       uint64_t user_id, uint64_t token);

int flash_lock_acquire(flash_t *h, const char *name, uint64_t owner,
                       uint32_t lease_ms, uint64_t *fence);
int flash_lock_renew(flash_t *h, const char *name, uint64_t owner, uint32_t lease_ms);
int flash_lock_release(flash_t *h, const char *name, uint64_t owner);

int flash_sku_get(flash_t *h, uint32_t activity_id, uint32_t sku_id, struct flash_sku_info *out);
int flash_activity_at(flash_t *h, uint32_t index, struct flash_activity *out);
int flash_sku_at(flash_t *h, uint32_t index, struct flash_sku_info *out);
int flash_order_get(flash_t *h, uint64_t order_no, struct flash_order_info *out);
uint64_t flash_orders_max(flash_t *h);
int flash_stats_get(flash_t *h, struct flash_stats *out);
int flash_ident_get(flash_t *h, struct flash_ident *out);
int flash_quiet_get(flash_t *h, struct flash_quiet *out);

uint64_t flash_obs_bucket_le_ns(unsigned b);
const char *flash_op_name(unsigned op);
int flash_obs_get(flash_t *h, struct flash_obs *out);

void flash_feed_opts_default(struct flash_feed_opts *o);
int flash_feed_open(const char *wal_dir, const char *consumer, const struct flash_feed_opts *o,
                    flash_feed_t **out);
int flash_feed_next(flash_feed_t *f, struct flash_feed_rec *out, uint32_t wait_ms);
int flash_feed_commit(flash_feed_t *f, uint64_t lsn);
int flash_feed_rewind(flash_feed_t *f);
int flash_feed_close(flash_feed_t *f);
int flash_feed_list(const char *wal_dir, struct flash_feed_info *out, size_t cap, size_t *n);
int flash_feed_info_get(flash_feed_t *f, struct flash_feed_info *out);
int flash_feed_drop(const char *wal_dir, const char *consumer);
"""

# `#define FLASH_ESOLD_OUT -1` and the like: the result codes.
CODE_RE = re.compile(r"^#define\s+(FLASH_E[A-Z0-9_]+)\s+(-[0-9]+)\b", re.M)


def header_codes(header_text):
    """[(name, value)] of every result code the header defines."""
    return [(m.group(1), int(m.group(2))) for m in CODE_RE.finditer(header_text)]


def make_ffi(header_text, **build_args):
    """The FFI of flashstock._native for the header text `header_text`:
    the cdef, every FLASH_E* code of the header, and the module's source
    (build_args: include_dirs, libraries, ... for setuptools)."""
    codes = header_codes(header_text)
    if not codes:
        raise ValueError("no FLASH_E* code in the header")
    ffi = cffi.FFI()
    ffi.cdef(CDEF + "".join("#define %s ...\n" % name for name, _ in codes))
    # the names of the codes, for the error mapping: a C array the module exports
    names = ", ".join('"%s"' % name for name, _ in codes)
    ffi.cdef("static const char *const flash_py_code_names[%d];" % len(codes))
    # the module's init function is defined by cffi's code; its prototype
    # here keeps -Wmissing-prototypes (and so -Werror) satisfied
    ffi.set_source("flashstock._native",
                   '#include "flashstock.h"\n'
                   "PyMODINIT_FUNC PyInit__native(void);\n"
                   "static const char *const flash_py_code_names[%d] = { %s };\n"
                   % (len(codes), names), **build_args)
    return ffi


class PkgConfigError(RuntimeError):
    pass


def pkg_config(*args):
    """`pkg-config ARGS flashstock`'s output, stripped; PkgConfigError when
    pkg-config is missing or does not know flashstock."""
    try:
        p = subprocess.run(["pkg-config", *args, "flashstock"], capture_output=True, text=True)
    except OSError as e:
        raise PkgConfigError("cannot run pkg-config (Debian: apt-get install pkg-config): %s" % e)
    if p.returncode != 0:
        raise PkgConfigError(
            "pkg-config does not find flashstock (%s): install libflashstock first "
            "(cmake --install BUILD --prefix P) and set "
            "PKG_CONFIG_PATH=P/lib/pkgconfig (P/lib/<multiarch>/pkgconfig on Debian's "
            "default layout)" % (" ".join(p.stderr.split()) or "exit %d" % p.returncode))
    return p.stdout.strip()


def installed_library():
    """(version, includedir, libdir) of the libflashstock pkg-config finds."""
    version = pkg_config("--modversion")
    inc = os.path.realpath(pkg_config("--variable=includedir"))
    libdir = os.path.realpath(pkg_config("--variable=libdir"))
    return version, inc, libdir


def ffi_from_pkgconfig():
    """For setup.py (cffi_modules): the module built against the installed
    libflashstock that pkg-config finds -- its header, and its library found
    at run time by the extension's run path (no LD_LIBRARY_PATH)."""
    _, inc, libdir = installed_library()
    header = os.path.join(inc, "flashstock.h")
    try:
        with open(header, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise PkgConfigError("pkg-config names includedir %s, but: %s" % (inc, e))
    return make_ffi(text, include_dirs=[inc], library_dirs=[libdir], libraries=["flashstock"],
                    runtime_library_dirs=[libdir])


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: build_ffi.py HEADER OUT.c\n")
        return 2
    header, out = argv[1], argv[2]
    with open(header, encoding="utf-8") as f:
        text = f.read()
    try:
        ffi = make_ffi(text)
    except ValueError as e:
        sys.stderr.write("build_ffi.py: %s: %s\n" % (header, e))
        return 1
    ffi.emit_c_code(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
