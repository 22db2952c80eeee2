/*
 * feed_refill_plugin.c -- the refill plug-in's one export: the table of
 * feed_refill_mysql.c's functions that libflashstock.so calls through
 * (feed_refill_dl.c).  Built with feed_refill_mysql.c, mysql_apply.c and
 * mysql_err.c into FEED_REFILL_PLUGIN, the only part of the shared
 * library's feed that links libmariadb.
 */
#include "feed.h"

__attribute__((visibility("default"))) extern const struct feed_refill_ops flashstock_refill_ops;

const struct feed_refill_ops flashstock_refill_ops = {
	.size     = sizeof(struct feed_refill_ops),
	.rec_size = sizeof(struct flash_feed_rec),
	.check    = feed_refill_check,
	.open     = feed_refill_open,
	.close    = feed_refill_close,
	.fetch    = feed_refill_fetch,
};
