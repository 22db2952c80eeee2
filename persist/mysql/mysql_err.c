/*
 * mysql_err.c -- MariaDB error numbers into classes (contract and the
 * table of classes in mysql_err.h).
 *
 * One switch, by number: Connector/C's CR_* codes as much as the server's
 * ER_*, since a range of client codes holds both a lost connection (2013)
 * and a bug of the caller (2014).  A number not listed is FATAL, so a new
 * error is never retried forever by accident.
 */
#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "mysql_err.h"

enum mdb_err mdb_err_class(unsigned e)
{
	switch (e) {
	case 0:
		return MDB_ERR_NONE;

	/* the client cannot reach the server, or lost it */
	case CR_UNKNOWN_ERROR:
	case CR_SOCKET_CREATE_ERROR:    /* out of descriptors, for now */
	case CR_CONNECTION_ERROR:       /* nobody listens on the socket / port */
	case CR_CONN_HOST_ERROR:
	case CR_IPSOCK_ERROR:
	case CR_UNKNOWN_HOST:           /* a name that does not resolve now may later */
	case CR_SERVER_GONE_ERROR:      /* gone between two statements */
	case CR_SERVER_HANDSHAKE_ERR:
	case CR_SERVER_LOST:            /* gone during one: its fate unknown */
	case CR_SERVER_LOST_EXTENDED:
	case CR_ERR_NET_READ:
	case CR_ERR_NET_WRITE:
	/* the server closes the connection */
	case ER_SERVER_SHUTDOWN:
	case ER_CONNECTION_KILLED:      /* KILL of a connection in a statement */
	case ER_NET_READ_ERROR:
	case ER_NET_READ_INTERRUPTED:
	case ER_NET_ERROR_ON_WRITE:
	case ER_NET_WRITE_INTERRUPTED:
		return MDB_ERR_CONN;

	/* a Galera node outside a primary component, or joining, answers
	 * 1047 to everything but SET and SHOW: down for a while, not wrong */
	case ER_UNKNOWN_COM_ERROR:
	case ER_CON_COUNT_ERROR:
	case ER_TOO_MANY_USER_CONNECTIONS:
		return MDB_ERR_NODE;

	case ER_LOCK_DEADLOCK:          /* also a Galera certification failure */
	case ER_LOCK_WAIT_TIMEOUT:      /* only the statement is rolled back */
	case ER_QUERY_INTERRUPTED:      /* KILL QUERY: the connection lives */
	case ER_STATEMENT_TIMEOUT:      /* max_statement_time */
	case ER_CHECKREAD:              /* innodb_snapshot_isolation's write conflict */
		return MDB_ERR_TXN;

	case ER_DUP_KEY:
	case ER_DUP_ENTRY:
	case ER_DUP_ENTRY_WITH_KEY_NAME:
		return MDB_ERR_DUP;

	case ER_BAD_NULL_ERROR:
	case ER_NO_REFERENCED_ROW:
	case ER_ROW_IS_REFERENCED:
	case ER_WARN_DATA_OUT_OF_RANGE:
	case ER_ROW_IS_REFERENCED_2:
	case ER_NO_REFERENCED_ROW_2:
	case ER_DATA_OUT_OF_RANGE:
	case ER_CONSTRAINT_FAILED:      /* a CHECK constraint */
		return MDB_ERR_ROW;

	default:
		return MDB_ERR_FATAL;
	}
}

int mdb_err_retryable(unsigned e)
{
	enum mdb_err k = mdb_err_class(e);
	return k == MDB_ERR_CONN || k == MDB_ERR_NODE || k == MDB_ERR_TXN;
}
