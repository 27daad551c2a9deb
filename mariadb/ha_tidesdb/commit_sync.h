/*
 * commit_sync: the binary log's commit checkpoints (handlerton
 * commit_checkpoint_request; handlerton.cc, invariant 5). Invariants at the
 * top of commit_sync.cc.
 */
#ifndef TIDESQL_COMMIT_SYNC_H
#define TIDESQL_COMMIT_SYNC_H

#include "tdb_common.h"

namespace tidesql {

/* Start the sync thread (plugin init, g_db open) / serve what is pending
 * and stop it (plugin deinit, before the database is closed). */
void commit_sync_start();
void commit_sync_stop();

/* handlerton commit_checkpoint_request: notify cookie once every commit
 * that finished commit_ordered before this call is durable. */
void commit_sync_request(void *cookie);

/* Checkpoints notified since start (status tidesdb_commit_checkpoints). */
ulonglong commit_sync_notified();

}  // namespace tidesql

#endif
