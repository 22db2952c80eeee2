/*
 * crash.h -- crash points in persist/ (test builds only).
 *
 * PERSIST_CRASH(op, step) is one crash point, counted by the same counter
 * as the engine's FS_CRASH(op, step) (engine/crashpoint.c: crash_arm(n)
 * makes the n-th point reached end the process with _exit(77)).  This header
 * declares only that one hook, so persist/ needs nothing of engine/fs.h.
 * Without FLASH_CRASHPOINTS every point compiles to nothing.
 *
 * Operations and their points (the step numbers name the place; a point
 * inside a loop is reached once per pass):
 *   wal_append   1 arguments checked, nothing buffered
 *                2 the frame is in the pending buffer, its LSN handed out
 *   wal_commit   1 the writer took the pending batch (nothing written yet)
 *                2 after a pwrite of whole frames, before their fdatasync
 *                3 after an fdatasync, before the durable LSN is published
 *                  (or before the next file is created, mid-batch)
 *                4 the durable LSN is published, followers not yet woken
 *   wal_roll     1 <lsn>.tmp created     2 preallocated     3 header written
 *                4 fdatasync'd           5 renamed to .log   6 directory fsync'd
 *   serve_round  1 a record drained, not yet appended
 *                2 the record appended (pending, not durable)
 *                3 the records' fdatasync returned, nothing marked durable
 *                4 one slot marked durable (flash_durable_advance)
 *                5 the records handed to the MySQL pump
 *                6 the round written (wal_write) and its ring room freed
 *                  (flash_ring_release), not yet durable
 *   rebuild      1 the temporary segment made (restored or created)
 *                2 its memory reserved      3 one WAL record applied to it
 *                4 complete, not yet renamed 5 renamed: it has the real name
 *   apply_batch  1 START TRANSACTION sent, applied_lsn not read
 *                2 one statement of a multi-statement round trip answered
 *                  (orders INSERTs, cancels, stock UPDATEs)
 *                3 the fast path done: orders and stock updates in
 *                4 the slow path applied one record
 *                5 applied_lsn updated: the last point before COMMIT
 *                6 COMMIT returned
 */
#ifndef FLASH_PERSIST_CRASH_H
#define FLASH_PERSIST_CRASH_H

#ifdef FLASH_CRASHPOINTS
/* Defined in engine/crashpoint.c (the engine's crash-point counter). */
void fs_crashpoint(const char *op, int step);
#define PERSIST_CRASH(op, step) fs_crashpoint(op, step)
#else
#define PERSIST_CRASH(op, step) ((void)0)
#endif

#endif /* FLASH_PERSIST_CRASH_H */
