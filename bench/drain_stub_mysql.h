/* drain_stub_mysql.h -- the applier that applies nothing (drain_stub_mysql.c). */
#ifndef FLASH_DRAIN_STUB_MYSQL_H
#define FLASH_DRAIN_STUB_MYSQL_H

#include "mysql_pump.h"

extern const struct mdb_applier drain_stub_applier;

#endif
