/*
 * fuzz_manifest: manifest_decode (version/manifest.h). Input: mode byte,
 * then either the raw file (mode & 1 == 0) or a body that the harness
 * frames with the magic, the format version 1 + ((mode >> 1) & 3) (1 to 4:
 * positional or tagged column-family options) and a correct checksum, so
 * mutations reach every structural check. A manifest that decodes must re-encode and
 * decode again.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "util/checksum.h"
#include "util/coding.h"
#include "version/manifest.h"

/* Decoded versions are dropped without deleting anything. */
static void no_obsolete(void *ctx, uint64_t n) {
    (void)ctx;
    (void)n;
}

/* One input: decode (and re-encode) a manifest. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    buf_t in = {0};
    if (data[0] & 1) {
        char ver[4];
        enc_fixed32(ver, 1u + (uint32_t)((data[0] >> 1) & 3));
        if (buf_append(&in, "TDBMANIF", 8) || buf_append(&in, ver, 4) || buf_append(&in, data + 1, size - 1)) goto out;
        char ck[4];
        enc_fixed32(ck, tdb_checksum(in.data, in.size));
        if (buf_append(&in, ck, 4)) goto out;
    } else if (buf_append(&in, data + 1, size - 1)) {
        goto out;
    }
    manifest_t m;
    int rc = manifest_decode(buf_slice(&in), &m, no_obsolete, NULL);
    if (rc == TDB_OK) {
        buf_t enc = {0};
        if (manifest_encode(&m, &enc) == TDB_OK) {
            manifest_t m2;
            if (manifest_decode(buf_slice(&enc), &m2, no_obsolete, NULL) != TDB_OK)
                fuzz_fail("a decoded manifest does not survive re-encoding");
            manifest_free(&m2);
        }
        buf_free(&enc);
        manifest_free(&m);
    } else if (m.ncf != 0 || m.cfs != NULL) {
        fuzz_fail("failed decode left a non-empty manifest");
    }
out:
    buf_free(&in);
    return 0;
}
