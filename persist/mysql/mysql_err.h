/*
 * mysql_err.h -- what a MariaDB error number means for the code that got it.
 *
 * Every part of the daemon that talks to MariaDB (the applier, the
 * reconciler's queries, the feed's refill, the backstop, the lease
 * database) asks this one function what a failed statement means, so a
 * Galera node that is not ready, a killed connection or a deadlock is the
 * same thing everywhere.  What each part then does with a class is its own
 * policy (the backstop moves to its next URL where the applier, with one
 * URL, waits); the meaning is decided here only.
 *
 *   class  the numbers                           what the caller does
 *   -----  ------------------------------------  ---------------------------------
 *   CONN   the connection is gone or was never   close it; connect again (here or
 *          made: CR_SERVER_GONE_ERROR 2006,      on another node) and run the
 *          CR_SERVER_LOST 2013, CR_CONNECTION_   transaction again.  A statement
 *          ERROR 2002, CR_UNKNOWN_HOST 2005,     in flight may have committed:
 *          ER_CONNECTION_KILLED 1927,            its fate is unknown until read
 *          ER_SERVER_SHUTDOWN 1053, the net      back (an LSN, a lease id)
 *          read/write errors; CR_UNKNOWN_ERROR
 *          2000 (the client failed and cannot
 *          say why: only a new connection is
 *          known to be sound)
 *   NODE   the server answered but does not      nothing was done; try again
 *          serve now: ER_UNKNOWN_COM_ERROR 1047  later, or on another node.  The
 *          (a Galera node outside a primary      connection (if any) may stay
 *          component or still joining: "WSREP
 *          has not yet prepared node"),
 *          ER_CON_COUNT_ERROR 1040,
 *          ER_TOO_MANY_USER_CONNECTIONS 1203
 *   TXN    the server rolled the transaction     ROLLBACK, then run the
 *          (or the statement) back: ER_LOCK_     transaction again on the same
 *          DEADLOCK 1213 (also Galera's          connection
 *          certification failure), ER_LOCK_
 *          WAIT_TIMEOUT 1205, ER_QUERY_
 *          INTERRUPTED 1317, ER_STATEMENT_
 *          TIMEOUT 1969, ER_CHECKREAD 1020
 *   DUP    a unique key refused the row:         the caller decides (a slot
 *          ER_DUP_ENTRY 1062 and its kin         taken, a row already written)
 *   ROW    the schema refused the row: a CHECK   the caller decides (the
 *          constraint, NOT NULL, a value out of  applier records a conflict)
 *          range, a foreign key
 *   FATAL  anything else: the statement, the     retrying the same statement
 *          schema, the rights or the client      gets the same answer: log it
 *          program is wrong (ER_PARSE_ERROR,
 *          ER_NO_SUCH_TABLE, ER_ACCESS_DENIED_
 *          ERROR, CR_COMMANDS_OUT_OF_SYNC 2014,
 *          CR_OUT_OF_MEMORY 2008, ...)
 *
 * Client errors (2000-2999, 5000-) are classified by number like the
 * server's: most of them are not a lost connection (2014 is a result left
 * unread, 2008 a failed malloc), so no range means "connection gone".
 *
 * After a failure of any class, send ROLLBACK if a transaction was open (a
 * lock wait timeout rolls back only the statement), and close the
 * connection if the ROLLBACK fails too: the server rolls back what a closed
 * connection had open, whatever state the client was in (2014).
 *
 * Left FATAL on purpose: ER_OPTION_PREVENTS_STATEMENT 1290 and
 * ER_READ_ONLY_MODE 1836 (a read-only server: no flashstock deployment
 * fails over by flipping read_only -- every Galera node takes writes, and
 * one that cannot says 1047 -- and 1290 is also --secure-file-priv and
 * the like, which no retry cures); 4031, which is MySQL 8's
 * ER_CLIENT_INTERACTION_TIMEOUT but MariaDB's ER_REFERENCED_TRG_DOES_NOT_
 * EXIST (MySQL closes the connection after it: the next statement says
 * CR_SERVER_GONE_ERROR).
 *
 * Threads: pure functions of the number.
 */
#ifndef MDB_ERR_H
#define MDB_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

enum mdb_err {
	MDB_ERR_NONE  = 0,   /* 0: no error */
	MDB_ERR_CONN  = 1,   /* connection gone or not made: reconnect, fate unknown */
	MDB_ERR_NODE  = 2,   /* server up but not serving now: later, or another node */
	MDB_ERR_TXN   = 3,   /* transaction rolled back: run it again here */
	MDB_ERR_DUP   = 4,   /* duplicate key: the caller decides */
	MDB_ERR_ROW   = 5,   /* a row refused by the schema: the caller decides */
	MDB_ERR_FATAL = 6    /* a retry gets the same answer */
};

/** The class of MariaDB error number @p e (mysql_errno(), a server's
 *  ER_* or Connector/C's CR_*); MDB_ERR_NONE for 0. */
enum mdb_err mdb_err_class(unsigned e);

/** 1 if @p e is of class CONN, NODE or TXN: the same work may succeed if
 *  tried again (after a reconnect for CONN). */
int mdb_err_retryable(unsigned e);

#ifdef __cplusplus
}
#endif
#endif /* MDB_ERR_H */
