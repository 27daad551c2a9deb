/* information_schema tables of the engine (info_schema.cc):
 * TIDESDB_INDEX_STATS, TIDESDB_TRX, TIDESDB_LOCK_WAITS, TIDESDB_BACKGROUND.
 * Declared as plugins of the library in plugin.cc. */
#ifndef TIDESQL_INFO_SCHEMA_H
#define TIDESQL_INFO_SCHEMA_H

#include "tdb_common.h"

#include <mysql/plugin.h>

namespace tidesql {

int is_index_stats_init(void *p);
int is_trx_init(void *p);
int is_lock_waits_init(void *p);
int is_background_init(void *p);
extern struct st_mysql_information_schema is_plugin_descriptor;

}  // namespace tidesql

#endif
