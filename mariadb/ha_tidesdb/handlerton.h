/*
 * handlerton: the engine's transaction callbacks, as the server calls them,
 * and the binding of a connection (THD) to its Trx. plugin.cc puts these
 * functions into the handlerton; XA (prepare, recover, commit/rollback by
 * xid) belongs here too. Invariants at the top of handlerton.cc.
 */
#ifndef TIDESQL_HANDLERTON_H
#define TIDESQL_HANDLERTON_H

#include "trx.h"

namespace tidesql {

/* The THD's transaction object (created on first use). */
Trx *trx_get(THD *thd);
/* Begin (if needed) and register the engine in the statement (and the
 * transaction) of thd. */
int trx_register(THD *thd, Trx *trx);

/* Handlerton callbacks. */
int trx_hton_commit(handlerton *hton, THD *thd, bool all);
void trx_hton_commit_ordered(handlerton *hton, THD *thd, bool all);
int trx_hton_rollback(handlerton *hton, THD *thd, bool all);
int trx_hton_close_connection(handlerton *hton, THD *thd);
int trx_hton_savepoint_set(handlerton *hton, THD *thd, void *sv);
int trx_hton_savepoint_rollback(handlerton *hton, THD *thd, void *sv);
int trx_hton_savepoint_release(handlerton *hton, THD *thd, void *sv);
int trx_hton_start_consistent_snapshot(handlerton *hton, THD *thd);
void trx_hton_kill_query(handlerton *hton, THD *thd, enum thd_kill_levels level);
/* The library's lock-wait hook (tdb_set_lock_wait_hook, installed at
 * plugin init): a transaction about to wait for a row lock reports each
 * transaction ahead of it to the server (thd_rpl_deadlock_check), which
 * kills a parallel-replication worker that must commit after the waiter
 * (invariant 5 of handlerton.cc). */
void trx_lock_wait_hook(void *ctx, const tdb_lock_block_t *b);

/* XA / two-phase commit (handlerton.cc, invariant 4). */
int trx_hton_prepare(handlerton *hton, THD *thd, bool all);
int trx_hton_recover(handlerton *hton, XID *xid_list, uint len);
int trx_hton_commit_by_xid(handlerton *hton, XID *xid);
int trx_hton_rollback_by_xid(handlerton *hton, XID *xid);
/* An XID as the name of a library prepared transaction, and back (false:
 * not a name xid_pack made). */
std::string xid_pack(const XID *x);
bool xid_unpack(const void *p, size_t n, XID *x);

}  // namespace tidesql

#endif
