/*
 * layout_probe.c -- the C compiler's layout of every struct the Go binding
 * mirrors: one line per struct ("struct NAME SIZE") and one per field
 * ("field STRUCT.FIELD OFFSET SIZE").  TestLayout (layout_test.go) compares
 * each line with the Go mirror, field by field.
 */
#include <stddef.h>
#include <stdio.h>

#include <flashstock.h>

#define S(t)    printf("struct %s %zu\n", #t, sizeof(struct t))
#define F(t, f) printf("field %s.%s %zu %zu\n", #t, #f, offsetof(struct t, f), \
                       sizeof(((struct t *)0)->f))

int main(void)
{
	S(flash_seg_opts);
	F(flash_seg_opts, max_activities); F(flash_seg_opts, max_skus);
	F(flash_seg_opts, max_shards);     F(flash_seg_opts, max_users);
	F(flash_seg_opts, max_tokens);     F(flash_seg_opts, max_orders);
	F(flash_seg_opts, max_requests);   F(flash_seg_opts, max_locks);
	F(flash_seg_opts, max_procs);      F(flash_seg_opts, ring_records);
	F(flash_seg_opts, mode);           F(flash_seg_opts, gid);
	F(flash_seg_opts, durability);

	S(flash_activity);
	F(flash_activity, id);           F(flash_activity, limit_per_user);
	F(flash_activity, max_qty);      F(flash_activity, scope);
	F(flash_activity, flags);        F(flash_activity, day_offset_s);
	F(flash_activity, start_ns);     F(flash_activity, end_ns);

	S(flash_order_req);
	F(flash_order_req, activity_id); F(flash_order_req, sku_id);
	F(flash_order_req, user_id);     F(flash_order_req, qty);
	F(flash_order_req, _reserved);   F(flash_order_req, token);
	F(flash_order_req, request_id);

	S(flash_order_res);
	F(flash_order_res, order_no);    F(flash_order_res, first_rc);
	F(flash_order_res, limit_slot);  F(flash_order_res, lsn);

	S(flash_sku_info);
	F(flash_sku_info, activity_id);  F(flash_sku_info, sku_id);
	F(flash_sku_info, shards);       F(flash_sku_info, _pad);
	F(flash_sku_info, total);        F(flash_sku_info, available);

	S(flash_order_info);
	F(flash_order_info, order_no);   F(flash_order_info, user_id);
	F(flash_order_info, activity_id); F(flash_order_info, sku_id);
	F(flash_order_info, qty);        F(flash_order_info, state);
	F(flash_order_info, limit_slot); F(flash_order_info, biz_day);
	F(flash_order_info, created_ns);

	S(flash_stats);
	F(flash_stats, orders);          F(flash_stats, cancels);
	F(flash_stats, sold_out);        F(flash_stats, limit_hits);
	F(flash_stats, token_rejects);   F(flash_stats, duplicates);
	F(flash_stats, cas_retries);     F(flash_stats, recoveries);
	F(flash_stats, rolled_back);     F(flash_stats, rolled_forward);
	F(flash_stats, activities);      F(flash_stats, activities_cap);
	F(flash_stats, skus);            F(flash_stats, skus_cap);
	F(flash_stats, shards);          F(flash_stats, shards_cap);
	F(flash_stats, users);           F(flash_stats, users_cap);
	F(flash_stats, tokens);          F(flash_stats, tokens_cap);
	F(flash_stats, requests);        F(flash_stats, requests_cap);
	F(flash_stats, locks);           F(flash_stats, locks_cap);
	F(flash_stats, procs);           F(flash_stats, procs_cap);
	F(flash_stats, orders_used);     F(flash_stats, orders_cap);
	F(flash_stats, segment_bytes);   F(flash_stats, durability);
	F(flash_stats, _pad);

	S(flash_ident);
	F(flash_ident, incarnation);     F(flash_ident, wal_lsn);
	F(flash_ident, consumer_pid);    F(flash_ident, consumer_slot);

	S(flash_quiet);
	F(flash_quiet, ops);             F(flash_quiet, consumed);
	F(flash_quiet, pending);         F(flash_quiet, in_flight);
	F(flash_quiet, _pad);

	S(flash_hist);
	F(flash_hist, bucket);           F(flash_hist, count);
	F(flash_hist, sum_ns);

	S(flash_obs);
	F(flash_obs, time);              F(flash_obs, results);

	S(flash_record);
	F(flash_record, type);           F(flash_record, slot);
	F(flash_record, activity_id);    F(flash_record, sku_id);
	F(flash_record, qty);            F(flash_record, order_no);
	F(flash_record, user_id);        F(flash_record, value);
	F(flash_record, ts_ns);          F(flash_record, biz_day);
	F(flash_record, limit_slot);     F(flash_record, flags);
	F(flash_record, request_id);

	S(flash_feed_rec);
	F(flash_feed_rec, fr_lsn);       F(flash_feed_rec, fr_seq);
	F(flash_feed_rec, fr_rec);       F(flash_feed_rec, fr_source);
	F(flash_feed_rec, fr_missing);   F(flash_feed_rec, fr_gap);

	S(flash_feed_info);
	F(flash_feed_info, fi_name);          F(flash_feed_info, fi_state);
	F(flash_feed_info, fi_open);          F(flash_feed_info, fi_committed_lsn);
	F(flash_feed_info, fi_durable_lsn);   F(flash_feed_info, fi_first_lsn);
	F(flash_feed_info, fi_lag_records);   F(flash_feed_info, fi_lag_ns);
	F(flash_feed_info, fi_created_ns);    F(flash_feed_info, fi_commit_ns);
	return 0;
}
