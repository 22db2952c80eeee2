/*
 * layout_probe.c -- prints the C compiler's sizes and offsets of every
 * struct the Java binding mirrors, one "Class.FIELD value" line each, in
 * the names of flashstock/Layout.java.  The test java_layout compares the
 * two both ways: every line here has its constant there with the same
 * value, and every constant there is printed here.
 */
#include <stddef.h>
#include <stdio.h>

#include "flashstock.h"
#include "fj_io.h"

#define SIZE(cls, type) printf("%s.SIZE %zu\n", cls, sizeof(type))
#define OFF(cls, NAME, type, member) printf("%s.%s %zu\n", cls, NAME, offsetof(type, member))

int main(void)
{
	SIZE("SegOpts", struct flash_seg_opts);
	OFF("SegOpts", "MAX_ACTIVITIES", struct flash_seg_opts, max_activities);
	OFF("SegOpts", "MAX_SKUS", struct flash_seg_opts, max_skus);
	OFF("SegOpts", "MAX_SHARDS", struct flash_seg_opts, max_shards);
	OFF("SegOpts", "MAX_USERS", struct flash_seg_opts, max_users);
	OFF("SegOpts", "MAX_TOKENS", struct flash_seg_opts, max_tokens);
	OFF("SegOpts", "MAX_ORDERS", struct flash_seg_opts, max_orders);
	OFF("SegOpts", "MAX_REQUESTS", struct flash_seg_opts, max_requests);
	OFF("SegOpts", "MAX_LOCKS", struct flash_seg_opts, max_locks);
	OFF("SegOpts", "MAX_PROCS", struct flash_seg_opts, max_procs);
	OFF("SegOpts", "RING_RECORDS", struct flash_seg_opts, ring_records);
	OFF("SegOpts", "MODE", struct flash_seg_opts, mode);
	OFF("SegOpts", "GID", struct flash_seg_opts, gid);
	OFF("SegOpts", "DURABILITY", struct flash_seg_opts, durability);

	SIZE("Activity", struct flash_activity);
	OFF("Activity", "ID", struct flash_activity, id);
	OFF("Activity", "LIMIT_PER_USER", struct flash_activity, limit_per_user);
	OFF("Activity", "MAX_QTY", struct flash_activity, max_qty);
	OFF("Activity", "SCOPE", struct flash_activity, scope);
	OFF("Activity", "FLAGS", struct flash_activity, flags);
	OFF("Activity", "DAY_OFFSET_S", struct flash_activity, day_offset_s);
	OFF("Activity", "START_NS", struct flash_activity, start_ns);
	OFF("Activity", "END_NS", struct flash_activity, end_ns);

	SIZE("OrderReq", struct flash_order_req);
	OFF("OrderReq", "ACTIVITY_ID", struct flash_order_req, activity_id);
	OFF("OrderReq", "SKU_ID", struct flash_order_req, sku_id);
	OFF("OrderReq", "USER_ID", struct flash_order_req, user_id);
	OFF("OrderReq", "QTY", struct flash_order_req, qty);
	OFF("OrderReq", "RESERVED", struct flash_order_req, _reserved);
	OFF("OrderReq", "TOKEN", struct flash_order_req, token);
	OFF("OrderReq", "REQUEST_ID", struct flash_order_req, request_id);

	SIZE("OrderRes", struct flash_order_res);
	OFF("OrderRes", "ORDER_NO", struct flash_order_res, order_no);
	OFF("OrderRes", "FIRST_RC", struct flash_order_res, first_rc);
	OFF("OrderRes", "LIMIT_SLOT", struct flash_order_res, limit_slot);
	OFF("OrderRes", "LSN", struct flash_order_res, lsn);

	SIZE("SkuInfo", struct flash_sku_info);
	OFF("SkuInfo", "ACTIVITY_ID", struct flash_sku_info, activity_id);
	OFF("SkuInfo", "SKU_ID", struct flash_sku_info, sku_id);
	OFF("SkuInfo", "SHARDS", struct flash_sku_info, shards);
	OFF("SkuInfo", "PAD", struct flash_sku_info, _pad);
	OFF("SkuInfo", "TOTAL", struct flash_sku_info, total);
	OFF("SkuInfo", "AVAILABLE", struct flash_sku_info, available);

	SIZE("OrderInfo", struct flash_order_info);
	OFF("OrderInfo", "ORDER_NO", struct flash_order_info, order_no);
	OFF("OrderInfo", "USER_ID", struct flash_order_info, user_id);
	OFF("OrderInfo", "ACTIVITY_ID", struct flash_order_info, activity_id);
	OFF("OrderInfo", "SKU_ID", struct flash_order_info, sku_id);
	OFF("OrderInfo", "QTY", struct flash_order_info, qty);
	OFF("OrderInfo", "STATE", struct flash_order_info, state);
	OFF("OrderInfo", "LIMIT_SLOT", struct flash_order_info, limit_slot);
	OFF("OrderInfo", "BIZ_DAY", struct flash_order_info, biz_day);
	OFF("OrderInfo", "CREATED_NS", struct flash_order_info, created_ns);

	SIZE("Stats", struct flash_stats);
	OFF("Stats", "ORDERS", struct flash_stats, orders);
	OFF("Stats", "CANCELS", struct flash_stats, cancels);
	OFF("Stats", "SOLD_OUT", struct flash_stats, sold_out);
	OFF("Stats", "LIMIT_HITS", struct flash_stats, limit_hits);
	OFF("Stats", "TOKEN_REJECTS", struct flash_stats, token_rejects);
	OFF("Stats", "DUPLICATES", struct flash_stats, duplicates);
	OFF("Stats", "CAS_RETRIES", struct flash_stats, cas_retries);
	OFF("Stats", "RECOVERIES", struct flash_stats, recoveries);
	OFF("Stats", "ROLLED_BACK", struct flash_stats, rolled_back);
	OFF("Stats", "ROLLED_FORWARD", struct flash_stats, rolled_forward);
	OFF("Stats", "ACTIVITIES", struct flash_stats, activities);
	OFF("Stats", "ACTIVITIES_CAP", struct flash_stats, activities_cap);
	OFF("Stats", "SKUS", struct flash_stats, skus);
	OFF("Stats", "SKUS_CAP", struct flash_stats, skus_cap);
	OFF("Stats", "SHARDS", struct flash_stats, shards);
	OFF("Stats", "SHARDS_CAP", struct flash_stats, shards_cap);
	OFF("Stats", "USERS", struct flash_stats, users);
	OFF("Stats", "USERS_CAP", struct flash_stats, users_cap);
	OFF("Stats", "TOKENS", struct flash_stats, tokens);
	OFF("Stats", "TOKENS_CAP", struct flash_stats, tokens_cap);
	OFF("Stats", "REQUESTS", struct flash_stats, requests);
	OFF("Stats", "REQUESTS_CAP", struct flash_stats, requests_cap);
	OFF("Stats", "LOCKS", struct flash_stats, locks);
	OFF("Stats", "LOCKS_CAP", struct flash_stats, locks_cap);
	OFF("Stats", "PROCS", struct flash_stats, procs);
	OFF("Stats", "PROCS_CAP", struct flash_stats, procs_cap);
	OFF("Stats", "ORDERS_USED", struct flash_stats, orders_used);
	OFF("Stats", "ORDERS_CAP", struct flash_stats, orders_cap);
	OFF("Stats", "SEGMENT_BYTES", struct flash_stats, segment_bytes);
	OFF("Stats", "DURABILITY", struct flash_stats, durability);
	OFF("Stats", "PAD", struct flash_stats, _pad);

	SIZE("Ident", struct flash_ident);
	OFF("Ident", "INCARNATION", struct flash_ident, incarnation);
	OFF("Ident", "WAL_LSN", struct flash_ident, wal_lsn);
	OFF("Ident", "CONSUMER_PID", struct flash_ident, consumer_pid);
	OFF("Ident", "CONSUMER_SLOT", struct flash_ident, consumer_slot);

	SIZE("Quiet", struct flash_quiet);
	OFF("Quiet", "OPS", struct flash_quiet, ops);
	OFF("Quiet", "CONSUMED", struct flash_quiet, consumed);
	OFF("Quiet", "PENDING", struct flash_quiet, pending);
	OFF("Quiet", "IN_FLIGHT", struct flash_quiet, in_flight);
	OFF("Quiet", "PAD", struct flash_quiet, _pad);

	SIZE("Io", union fj_io);
	OFF("Io", "ORDER_REQ", union fj_io, order.req);
	OFF("Io", "ORDER_RES", union fj_io, order.res);
	OFF("Io", "U64", union fj_io, u64);
	printf("Batch.ORDER_BYTES %zu\n", FJ_BATCH_ORDER_BYTES);
	printf("Batch.RC_SIZE %zu\n", sizeof(int));
	printf("Batch.MAX %u\n", FJ_BATCH_MAX);

	SIZE("Record", struct flash_record);
	OFF("Record", "TYPE", struct flash_record, type);
	OFF("Record", "SLOT", struct flash_record, slot);
	OFF("Record", "ACTIVITY_ID", struct flash_record, activity_id);
	OFF("Record", "SKU_ID", struct flash_record, sku_id);
	OFF("Record", "QTY", struct flash_record, qty);
	OFF("Record", "ORDER_NO", struct flash_record, order_no);
	OFF("Record", "USER_ID", struct flash_record, user_id);
	OFF("Record", "VALUE", struct flash_record, value);
	OFF("Record", "TS_NS", struct flash_record, ts_ns);
	OFF("Record", "BIZ_DAY", struct flash_record, biz_day);
	OFF("Record", "LIMIT_SLOT", struct flash_record, limit_slot);
	OFF("Record", "FLAGS", struct flash_record, flags);
	OFF("Record", "REQUEST_ID", struct flash_record, request_id);

	SIZE("FeedRec", struct flash_feed_rec);
	OFF("FeedRec", "LSN", struct flash_feed_rec, fr_lsn);
	OFF("FeedRec", "SEQ", struct flash_feed_rec, fr_seq);
	OFF("FeedRec", "REC", struct flash_feed_rec, fr_rec);
	OFF("FeedRec", "SOURCE", struct flash_feed_rec, fr_source);
	OFF("FeedRec", "MISSING", struct flash_feed_rec, fr_missing);
	OFF("FeedRec", "GAP", struct flash_feed_rec, fr_gap);

	SIZE("FeedInfo", struct flash_feed_info);
	OFF("FeedInfo", "NAME", struct flash_feed_info, fi_name);
	OFF("FeedInfo", "STATE", struct flash_feed_info, fi_state);
	OFF("FeedInfo", "OPEN", struct flash_feed_info, fi_open);
	OFF("FeedInfo", "COMMITTED_LSN", struct flash_feed_info, fi_committed_lsn);
	OFF("FeedInfo", "DURABLE_LSN", struct flash_feed_info, fi_durable_lsn);
	OFF("FeedInfo", "FIRST_LSN", struct flash_feed_info, fi_first_lsn);
	OFF("FeedInfo", "LAG_RECORDS", struct flash_feed_info, fi_lag_records);
	OFF("FeedInfo", "LAG_NS", struct flash_feed_info, fi_lag_ns);
	OFF("FeedInfo", "CREATED_NS", struct flash_feed_info, fi_created_ns);
	OFF("FeedInfo", "COMMIT_NS", struct flash_feed_info, fi_commit_ns);
	printf("FeedInfo.NAME_MAX %u\n", FLASH_FEED_NAME_MAX);

	SIZE("Hist", struct flash_hist);
	OFF("Hist", "BUCKET", struct flash_hist, bucket);
	OFF("Hist", "COUNT", struct flash_hist, count);
	OFF("Hist", "SUM_NS", struct flash_hist, sum_ns);
	printf("Hist.BUCKETS %d\n", FLASH_OBS_BUCKETS);

	SIZE("Obs", struct flash_obs);
	OFF("Obs", "TIME", struct flash_obs, time);
	OFF("Obs", "RESULTS", struct flash_obs, results);
	printf("Obs.TIMES %d\n", FLASH_TIMES);
	printf("Obs.OPS %d\n", FLASH_OP_COUNT);
	printf("Obs.CODES %d\n", FLASH_OBS_CODES);
	printf("Obs.LOCK_WAIT %d\n", FLASH_TIME_LOCK_WAIT);
	printf("Obs.LOCK_HOLD %d\n", FLASH_TIME_LOCK_HOLD);

	SIZE("FeedIo", union fj_feed_io);
	OFF("FeedIo", "REC", union fj_feed_io, rec);
	OFF("FeedIo", "INFO", union fj_feed_io, info);
	return 0;
}
