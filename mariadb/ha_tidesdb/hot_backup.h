/*
 * hot_backup: hot backup of every TidesDB table from SQL,
 *   SET GLOBAL tidesdb_backup_dir = '/path';
 * (docs/design/backup.md). Invariants at the top of hot_backup.cc.
 */
#ifndef TIDESQL_HOT_BACKUP_H
#define TIDESQL_HOT_BACKUP_H

#include "tdb_common.h"

namespace tidesql {

/* Check function of tidesdb_backup_dir: takes the backup into the named
 * directory; the default update then stores the path as the variable's
 * value, so it names the last backup that succeeded. Returns 0 on
 * success, 1 with the error set (ER_WRONG_VALUE_FOR_VAR and the reason for
 * a bad directory, the server's or the library's error otherwise). */
int backup_dir_check(THD *thd, struct st_mysql_sys_var *var, void *save, struct st_mysql_value *value);

/* Name of the file, in the backup directory, that holds the backup point
 * (binary log file and position, GTID position, library sequence). It is
 * written last: a backup directory without it is not a backup. */
extern const char *const BACKUP_POS_FILE;

}  // namespace tidesql

#endif
