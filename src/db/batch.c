/* db/batch: atomic write batches; the encoding is the WAL record payload. */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

/* Reset the representation to an empty header. */
static int batch_reset(tdb_batch_t *b) {
    buf_clear(&b->rep);
    b->wal_marker = NULL;
    b->wal_only = false;
    b->ncfs = 0;
    b->user_bytes = 0;
    char hdr[BATCH_HEADER] = {0};
    return buf_append(&b->rep, hdr, sizeof hdr);
}

int tdb_batch_create(tdb_batch_t **out) {
    if (!out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_batch_create: out is NULL");
    tdb_batch_t *b = (tdb_batch_t *)calloc(1, sizeof *b);
    if (!b) return tdb_err(TDB_ERR_NOMEM, "batch");
    if (batch_reset(b) != TDB_OK) {
        free(b);
        return TDB_ERR_NOMEM;
    }
    *out = b;
    return TDB_OK;
}

void tdb_batch_destroy(tdb_batch_t *b) {
    if (!b) return;
    buf_free(&b->rep);
    free(b->cfs);
    free(b);
}

void tdb_batch_clear(tdb_batch_t *b) {
    if (b) batch_reset(b);
}

size_t tdb_batch_count(const tdb_batch_t *b) { return b ? dec_fixed32(b->rep.data + 8) : 0; }

/* Remember a family the batch touches. */
static int batch_note_cf(tdb_batch_t *b, tdb_cf_t *cf) {
    for (int i = 0; i < b->ncfs; i++)
        if (b->cfs[i] == cf) return TDB_OK;
    if (b->ncfs == b->capcfs) {
        int nc = b->capcfs ? b->capcfs * 2 : 4;
        tdb_cf_t **p = (tdb_cf_t **)realloc(b->cfs, (size_t)nc * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "batch");
        b->cfs = p;
        b->capcfs = nc;
    }
    b->cfs[b->ncfs++] = cf;
    return TDB_OK;
}

/* An entry starts with its type byte; the family id (varint) follows
 * unless the byte carries BATCH_DEFAULT_CF (family 0, the usual case: one
 * byte less per entry in the WAL). */
#define BATCH_DEFAULT_CF 0x40u

static int put_type_and_cf(buf_t *rep, unsigned type, uint32_t cf_id) {
    char t = (char)(cf_id == 0 ? type | BATCH_DEFAULT_CF : type);
    int rc = buf_append(rep, &t, 1);
    if (rc == TDB_OK && cf_id != 0) rc = put_varint32(rep, cf_id);
    return rc;
}

/* Validate and append one entry. */
static int batch_add(tdb_batch_t *b, unsigned type, tdb_cf_t *cf, const void *key, size_t klen,
                     const void *val, size_t vlen, int64_t ttl) {
    if (!b || !cf) return tdb_err(TDB_ERR_INVALID_ARG, "batch or column family is NULL");
    if (!key || klen == 0) return tdb_err(TDB_ERR_INVALID_ARG, "empty key");
    if (klen > TDB_MAX_KEY_SIZE) return tdb_err(TDB_ERR_TOO_LARGE, "key of %zu bytes exceeds %u", klen, TDB_MAX_KEY_SIZE);
    if (vlen > TDB_MAX_VALUE_SIZE)
        return tdb_err(TDB_ERR_TOO_LARGE, "value of %zu bytes exceeds %u", vlen, TDB_MAX_VALUE_SIZE);
    if (vlen && !val) return tdb_err(TDB_ERR_INVALID_ARG, "value is NULL with length %zu", vlen);
    if (ttl < 0) return tdb_err(TDB_ERR_INVALID_ARG, "negative ttl");
    if (atomic_load(&cf->dropped)) return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    if (b->rep.size + klen + vlen > ((size_t)1 << 30))
        return tdb_err(TDB_ERR_TOO_LARGE, "batch exceeds 1 GiB");
    int rc = TDB_OK;
    size_t mark = b->rep.size;
    if (ttl > 0 && type == KT_PUT) type = KT_PUT_TTL;
    TRY(batch_note_cf(b, cf));
    TRY(put_type_and_cf(&b->rep, type, cf->id));
    TRY(put_lenprefixed(&b->rep, slice_make(key, klen)));
    if (type == KT_PUT || type == KT_RANGE_DELETE) { /* a range delete's value is its end key */
        TRY(put_lenprefixed(&b->rep, slice_make(val, vlen)));
    } else if (type == KT_PUT_TTL) {
        TRY(put_varint32(&b->rep, (uint32_t)(vlen + 8)));
        TRY(put_fixed64(&b->rep, (uint64_t)(db_now_unix() + ttl)));
        TRY(buf_append(&b->rep, val, vlen));
    }
    enc_fixed32(b->rep.data + 8, dec_fixed32(b->rep.data + 8) + 1);
    b->user_bytes += klen + vlen;
    return TDB_OK;
err:
    b->rep.size = mark;
    return rc;
}

int tdb_batch_put(tdb_batch_t *b, tdb_cf_t *cf, const void *key, size_t klen, const void *val, size_t vlen,
                  int64_t ttl_seconds) {
    return batch_add(b, KT_PUT, cf, key, klen, val, vlen, ttl_seconds);
}

int tdb_batch_delete(tdb_batch_t *b, tdb_cf_t *cf, const void *key, size_t klen) {
    return batch_add(b, KT_DELETE, cf, key, klen, NULL, 0, 0);
}

int tdb_batch_single_delete(tdb_batch_t *b, tdb_cf_t *cf, const void *key, size_t klen) {
    return batch_add(b, KT_SINGLE_DELETE, cf, key, klen, NULL, 0, 0);
}

/* One range tombstone: key = start, value = end (see docs/design/deletes.md). */
int tdb_batch_delete_range(tdb_batch_t *b, tdb_cf_t *cf, const void *start, size_t slen, const void *end,
                           size_t elen) {
    if (!end || elen == 0) return tdb_err(TDB_ERR_INVALID_ARG, "delete_range: empty end key");
    if (elen > TDB_MAX_KEY_SIZE)
        return tdb_err(TDB_ERR_TOO_LARGE, "delete_range: end key of %zu bytes exceeds %u", elen, TDB_MAX_KEY_SIZE);
    if (start && slen && slice_compare(slice_make(start, slen), slice_make(end, elen)) >= 0)
        return tdb_err(TDB_ERR_INVALID_ARG, "delete_range: start must sort before end");
    return batch_add(b, KT_RANGE_DELETE, cf, start, slen, end, elen, 0);
}

/* Set up b over stack (stack_bytes; or one allocation) with room for one
 * entry of a klen-byte key and a vlen-byte value (bounds rejected later by
 * batch_add need no room). cf1: room for the family. */
int batch_init_single(tdb_batch_t *b, char *stack, size_t stack_bytes, tdb_cf_t **cf1, size_t klen, size_t vlen) {
    memset(b, 0, sizeof *b);
    size_t need = BATCH_HEADER;
    if (klen <= TDB_MAX_KEY_SIZE && vlen <= TDB_MAX_VALUE_SIZE) /* type, family, lengths, TTL, key, value */
        need += 1 + 3 * VARINT32_MAX + 8 + klen + vlen;
    b->rep.data = need <= stack_bytes ? stack : (char *)malloc(need);
    if (!b->rep.data) return tdb_err(TDB_ERR_NOMEM, "write of a %zu-byte key and a %zu-byte value", klen, vlen);
    b->rep.cap = need; /* exact bound: the buffer never grows (never reallocated) */
    b->cfs = cf1;
    b->capcfs = 1;
    return batch_reset(b);
}

/* Release what batch_init_single allocated (nothing if it used stack). */
void batch_release_single(tdb_batch_t *b, const char *stack) {
    if (b->rep.data != stack) free(b->rep.data);
}

int batch_add_raw(tdb_batch_t *b, tdb_cf_t *cf, unsigned type, slice_t key, slice_t value) {
    int rc = TDB_OK;
    size_t mark = b->rep.size;
    TRY(batch_note_cf(b, cf));
    TRY(put_type_and_cf(&b->rep, type, cf->id));
    TRY(put_lenprefixed(&b->rep, key));
    if (kt_is_value(type) || type == KT_RANGE_DELETE) TRY(put_lenprefixed(&b->rep, value));
    enc_fixed32(b->rep.data + 8, dec_fixed32(b->rep.data + 8) + 1);
    b->user_bytes += key.size + value.size;
    return TDB_OK;
err:
    b->rep.size = mark;
    return rc;
}

slice_t batch_rep(tdb_batch_t *b) { return buf_slice(&b->rep); }

/* Zigzag: small signed differences as small unsigned numbers. */
static uint64_t zigzag(int64_t d) { return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63); }
static int64_t unzigzag(uint64_t z) { return (int64_t)(z >> 1) ^ -(int64_t)(z & 1); }

slice_t batch_wal_payload(tdb_batch_t *b, uint64_t *expected) {
    uint64_t seq = dec_fixed64(b->rep.data);
    uint32_t count = dec_fixed32(b->rep.data + 8);
    buf_t *rec = &b->rep;
    size_t spare_end = BATCH_HEADER;
    if (b->wal_marker) { /* a transaction record (batch.h) in place of the entries */
        rec = b->wal_marker;
        spare_end = BATCH_WAL_SPARE;
        if (b->wal_only) {
            seq = *expected;
            count = 0;
        }
    }
    char hdr[BATCH_WAL_SPARE];
    char *p = enc_varint64(hdr, zigzag((int64_t)(seq - *expected)));
    p = enc_varint32(p, count);
    size_t k = (size_t)(p - hdr);
    char *start = rec->data + spare_end - k;
    memcpy(start, hdr, k);
    *expected = seq + count;
    return slice_make(start, rec->size - spare_end + k);
}

int batch_relog_marker(buf_t *out, int kind, uint64_t number) {
    char rec[2 + 2 + 1 + 8];
    char *p = enc_varint64(rec, 0);
    p = enc_varint32(p, 0);
    *p++ = (char)BATCH_TXN_RECORD;
    *p++ = (char)kind;
    *p++ = 8;
    enc_fixed64(p, number);
    buf_clear(out);
    return buf_append(out, rec, (size_t)(p + 8 - rec));
}

int batch_put_entry(buf_t *out, unsigned type, uint32_t cf_id, slice_t key, slice_t value) {
    TDB_RET(put_type_and_cf(out, type, cf_id));
    TDB_RET(put_lenprefixed(out, key));
    if (kt_is_value(type) || type == KT_RANGE_DELETE) TDB_RET(put_lenprefixed(out, value));
    return TDB_OK;
}

int batch_wal_record(buf_t *out, uint64_t *expected, uint64_t seq, uint32_t count, slice_t entries) {
    char hdr[BATCH_WAL_SPARE];
    char *p = enc_varint64(hdr, zigzag((int64_t)(seq - *expected)));
    p = enc_varint32(p, count);
    buf_clear(out);
    TDB_RET(buf_append(out, hdr, (size_t)(p - hdr)));
    TDB_RET(buf_append(out, entries.data, entries.size));
    *expected = seq + count;
    return TDB_OK;
}

int batch_txn_marker(buf_t *out, int kind, slice_t xid, tdb_batch_t *data) {
    char head[BATCH_WAL_SPARE + 2] = {0};
    head[BATCH_WAL_SPARE] = (char)BATCH_TXN_RECORD;
    head[BATCH_WAL_SPARE + 1] = (char)kind;
    buf_clear(out);
    TDB_RET(buf_append(out, head, sizeof head));
    TDB_RET(put_lenprefixed(out, xid));
    if (kind != BATCH_TXN_PREPARE) return TDB_OK;
    TDB_RET(put_varint32(out, dec_fixed32(data->rep.data + 8)));
    return buf_append(out, data->rep.data + BATCH_HEADER, data->rep.size - BATCH_HEADER);
}

int batch_txn_record(slice_t payload, uint64_t *expected, batch_txn_rec_t *out) {
    const char *p = payload.data, *limit = payload.data + payload.size;
    uint64_t z;
    uint32_t count;
    if (!(p = dec_varint64(p, limit, &z)) || !(p = dec_varint32(p, limit, &count)) || p == limit ||
        (unsigned char)*p != BATCH_TXN_RECORD)
        return 0; /* a batch (batch_from_wal judges its header) */
    memset(out, 0, sizeof *out);
    p++;
    out->kind = p < limit ? (unsigned char)*p++ : 0;
    if (out->kind < BATCH_TXN_PREPARE || out->kind > BATCH_RELOG_GEN)
        return tdb_err(TDB_ERR_CORRUPTION, "transaction record of unknown kind %d", out->kind);
    if (!(p = dec_lenprefixed(p, limit, &out->xid)) || out->xid.size == 0 || out->xid.size > BATCH_MAX_XID)
        return tdb_err(TDB_ERR_CORRUPTION, "transaction record: malformed xid");
    if (out->kind >= BATCH_RELOG_HEAD) {
        if (out->xid.size != 8) return tdb_err(TDB_ERR_CORRUPTION, "relog record: malformed log number");
        out->number = dec_fixed64(out->xid.data);
    }
    if (out->kind != BATCH_TXN_COMMIT) {
        if (z != 0 || count != 0)
            return tdb_err(TDB_ERR_CORRUPTION, "transaction record: numbered prepare or rollback");
        if (out->kind == BATCH_TXN_PREPARE) {
            if (!(p = dec_varint32(p, limit, &out->count)))
                return tdb_err(TDB_ERR_CORRUPTION, "prepare record: malformed count");
            out->entries = slice_make(p, (size_t)(limit - p));
            return 1;
        }
    } else {
        uint64_t seq = *expected + (uint64_t)unzigzag(z);
        if (seq == 0 || seq > SEQ_MAX || count > SEQ_MAX - seq + 1)
            return tdb_err(TDB_ERR_CORRUPTION, "commit record: sequence %llu with %u entries is out of range",
                           (unsigned long long)seq, count);
        out->seq = seq;
        out->count = count;
        *expected = seq + count;
    }
    if (p != limit) return tdb_err(TDB_ERR_CORRUPTION, "transaction record: %zu trailing bytes", (size_t)(limit - p));
    return 1;
}

/* A rep in out: the in-memory header for (seq, count), then the entries. */
static int rep_build(buf_t *out, uint64_t seq, uint32_t count, slice_t entries) {
    buf_clear(out);
    char hdr[BATCH_HEADER] = {0};
    enc_fixed64(hdr, seq);
    enc_fixed32(hdr + 8, count);
    if (buf_append(out, hdr, sizeof hdr) != TDB_OK || buf_append(out, entries.data, entries.size) != TDB_OK)
        return tdb_err(TDB_ERR_NOMEM, "batch of %zu bytes", entries.size);
    return TDB_OK;
}

int batch_from_wal(slice_t payload, uint64_t *expected, buf_t *out) {
    const char *p = payload.data, *limit = payload.data + payload.size;
    uint64_t z;
    uint32_t count;
    if (!(p = dec_varint64(p, limit, &z)) || !(p = dec_varint32(p, limit, &count)))
        return tdb_err(TDB_ERR_CORRUPTION, "batch: malformed header");
    uint64_t seq = *expected + (uint64_t)unzigzag(z);
    if (seq == 0 || seq > SEQ_MAX || count > SEQ_MAX - seq + 1)
        return tdb_err(TDB_ERR_CORRUPTION, "batch: sequence %llu with %u entries is out of range",
                       (unsigned long long)seq, count);
    int rc = rep_build(out, seq, count, slice_make(p, (size_t)(limit - p)));
    if (rc == TDB_OK) *expected = seq + count;
    return rc;
}
void batch_set_seq(tdb_batch_t *b, uint64_t seq) { enc_fixed64(b->rep.data, seq); }
uint32_t batch_count_raw(slice_t rep) { return rep.size >= BATCH_HEADER ? dec_fixed32(rep.data + 8) : 0; }
uint64_t batch_user_bytes(const tdb_batch_t *b) { return b->user_bytes; }

int batch_cfs(const tdb_batch_t *b, tdb_cf_t ***cfs) {
    *cfs = b->cfs;
    return b->ncfs;
}

int batch_from_wal_fixed(slice_t payload, buf_t *out) {
    if (payload.size < 12) return tdb_err(TDB_ERR_CORRUPTION, "batch shorter than its header");
    return rep_build(out, dec_fixed64(payload.data), dec_fixed32(payload.data + 8),
                     slice_make(payload.data + 12, payload.size - 12));
}

/* Decode every entry of a batch rep (bytes may come from disk, through
 * batch_from_wal). */
int batch_iterate(slice_t rep, batch_visit_fn fn, void *ctx) {
    if (rep.size < BATCH_HEADER) return tdb_err(TDB_ERR_CORRUPTION, "batch shorter than its header");
    uint64_t seq = dec_fixed64(rep.data);
    uint32_t count = dec_fixed32(rep.data + 8);
    const char *p = rep.data + BATCH_HEADER, *limit = rep.data + rep.size;
    for (uint32_t i = 0; i < count; i++) {
        batch_entry_t e;
        if (p >= limit) return tdb_err(TDB_ERR_CORRUPTION, "batch: %u entries declared, %u present", count, i);
        e.type = (unsigned char)*p++;
        e.cf_id = 0;
        if (e.type & BATCH_DEFAULT_CF) {
            e.type &= ~BATCH_DEFAULT_CF;
        } else if (!(p = dec_varint32(p, limit, &e.cf_id))) {
            return tdb_err(TDB_ERR_CORRUPTION, "batch: malformed entry %u", i);
        }
        if (!(p = dec_lenprefixed(p, limit, &e.key))) return tdb_err(TDB_ERR_CORRUPTION, "batch: malformed entry %u", i);
        e.value = slice_make(NULL, 0);
        if (e.type == KT_PUT || e.type == KT_PUT_TTL || e.type == KT_RANGE_DELETE) {
            if (!(p = dec_lenprefixed(p, limit, &e.value)))
                return tdb_err(TDB_ERR_CORRUPTION, "batch: malformed value in entry %u", i);
            if (e.type == KT_PUT_TTL && e.value.size < 8)
                return tdb_err(TDB_ERR_CORRUPTION, "batch: TTL value too short in entry %u", i);
            if (e.type == KT_RANGE_DELETE && slice_compare(e.key, e.value) >= 0)
                return tdb_err(TDB_ERR_CORRUPTION, "batch: range delete with start >= end in entry %u", i);
        } else if (e.type != KT_DELETE && e.type != KT_SINGLE_DELETE) {
            return tdb_err(TDB_ERR_CORRUPTION, "batch: unknown entry type %u", e.type);
        }
        if (e.key.size == 0) return tdb_err(TDB_ERR_CORRUPTION, "batch: empty key in entry %u", i);
        TDB_RET(fn(ctx, seq + i, &e));
    }
    if (p != limit) return tdb_err(TDB_ERR_CORRUPTION, "batch: %zu trailing bytes", (size_t)(limit - p));
    return TDB_OK;
}
