/*
 * fuzz_footer: the SST footer decoder, the properties-block decoder and the
 * record trailer check (sst/format.h), on raw bytes. The footer is decoded
 * from the last 64 bytes both as given and with its checksum corrected (so
 * mutated handles and versions get past the checksum).
 */
#include <string.h>

#include "fuzz_common.h"
#include "sst/format.h"
#include "util/checksum.h"

/* One input: decode footer, properties and trailer. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size >= SST_FOOTER_SIZE) {
        char f[SST_FOOTER_SIZE];
        memcpy(f, data + size - SST_FOOTER_SIZE, SST_FOOTER_SIZE);
        sst_footer_t ft;
        sst_footer_decode(f, &ft, "fuzz");
        enc_fixed32(f + 52, tdb_checksum(f, 52));
        if (sst_footer_decode(f, &ft, "fuzz") == TDB_OK && ft.version != SST_FORMAT_VERSION)
            fuzz_fail("footer accepted an unknown version");
    }
    sst_props_t p;
    sst_props_ext_t x;
    memset(&p, 0, sizeof p);
    memset(&x, 0, sizeof x);
    int rc = sst_props_decode(slice_make(data, size), &p, &x, "fuzz");
    if (rc != TDB_OK && rc != TDB_ERR_CORRUPTION && rc != TDB_ERR_NOMEM) fuzz_fail("props: unexpected error code");
    fuzz_touch(p.smallest.data, p.smallest.size);
    fuzz_touch(p.largest.data, p.largest.size);
    sst_props_free(&p);
    if (size >= SST_TRAILER_SIZE) {
        unsigned type;
        sst_check_record((const char *)data, size - SST_TRAILER_SIZE, &type, "fuzz", "record", 0);
    }
    return 0;
}
