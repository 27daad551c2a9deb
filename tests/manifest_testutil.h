// The MANIFEST encodings of formats 1-3, kept only in the tests: the code
// writes format 4 (tagged column-family options), and these let a test
// build what an older version wrote, to prove it still reads
// (docs/design/version.md).
#pragma once

#include <cstring>
#include <string>

extern "C" {
#include "util/checksum.h"
#include "util/coding.h"
#include "version/manifest.h"
#include "version/version.h"
}

namespace tdbtest {

// Appends varints, fixed64 and length-prefixed strings to a string.
struct OldEncoder {
    std::string b;
    void v32(uint32_t v) {
        char t[8];
        b.append(t, (size_t)(enc_varint32(t, v) - t));
    }
    void v64(uint64_t v) {
        char t[16];
        b.append(t, (size_t)(enc_varint64(t, v) - t));
    }
    void f64(double d) {
        uint64_t u;
        memcpy(&u, &d, 8);
        char t[8];
        enc_fixed64(t, u);
        b.append(t, 8);
    }
    void str(const char *p, size_t n) {
        v32((uint32_t)n);
        b.append(p, n);
    }
    void str(const std::string &s) { str(s.data(), s.size()); }
};

// A family's options as formats 1-3 stored them: the fields of
// tdb_cf_config_t in their declaration order of then.
inline std::string PositionalOptions(const tdb_cf_config_t &c) {
    OldEncoder e;
    e.v64(c.write_buffer_size);
    e.v32((uint32_t)c.compression);
    e.f64(c.bloom_fpr);
    e.v32((uint32_t)c.sync_mode);
    e.v64(c.sync_interval_us);
    e.v32(c.block_size);
    e.v32(c.value_threshold);
    e.v32((uint32_t)c.l0_queue_stall_threshold);
    e.v32((uint32_t)c.l1_file_count_trigger);
    e.v32((uint32_t)c.level_size_ratio);
    e.f64(c.tombstone_density_trigger);
    e.v64(c.tombstone_density_min_entries);
    return e.b;
}

// The whole MANIFEST of m as format 1, 2 or 3 wrote it (format 1 has no
// num_range_deletes per file).
inline std::string EncodeOldManifest(const manifest_t *m, uint32_t format) {
    OldEncoder e;
    e.b = "TDBMANIF";
    char t[4];
    enc_fixed32(t, format);
    e.b.append(t, 4);
    e.v64(m->next_file_number);
    e.v64(m->last_sequence);
    e.v32(m->next_cf_id);
    e.v32((uint32_t)m->ncf);
    for (int i = 0; i < m->ncf; i++) {
        const manifest_cf_t &cf = m->cfs[i];
        e.v32(cf.id);
        e.str(cf.name, strlen(cf.name));
        std::string opts = PositionalOptions(cf.config);
        e.str(opts.data(), opts.size());
        e.v64(cf.log_number);
        e.v32(cf.version ? (uint32_t)version_total_files(cf.version) : 0);
        for (int l = 1; l < TDB_MAX_LEVELS && cf.version; l++)
            for (int j = 0; j < version_num_files(cf.version, l); j++) {
                const file_meta_t *f = version_file(cf.version, l, j);
                e.v32((uint32_t)l);
                e.v64(f->number);
                e.v64(f->file_size);
                e.str(f->smallest.data, f->smallest.size);
                e.str(f->largest.data, f->largest.size);
                e.v64(f->min_seq);
                e.v64(f->max_seq);
                e.v64(f->num_entries);
                e.v64(f->num_deletes);
                if (format >= 2) e.v64(f->num_range_deletes);
            }
    }
    enc_fixed32(t, tdb_checksum(e.b.data(), e.b.size()));
    e.b.append(t, 4);
    return e.b;
}

}  // namespace tdbtest
