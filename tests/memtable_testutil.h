// Shared by memtable_test.cc and memtable_index_test.cc: values derived
// from their internal key, and memtable_get's answer as one struct.
#pragma once

#include <cstdint>
#include <string>

extern "C" {
#include "memtable/memtable.h"
#include "util/slice.h"
}

namespace memtable_testutil {

inline slice_t Sl(const std::string &s) { return slice_make(s.data(), s.size()); }

// Value derived from the internal key, so every entry can be checked.
inline std::string ValueFor(const std::string &user, uint64_t seq) {
    return "v" + std::to_string(seq) + "/" + user + std::string(seq % 7, 'x');
}

struct Got {
    int found;
    unsigned type;
    uint64_t seq;
    std::string value;
};

inline Got Get(memtable_t *m, const std::string &user, uint64_t snap) {
    Got g = {0, 999, 0, ""};
    slice_t v = slice_make("", 0);
    g.found = memtable_get(m, Sl(user), snap, &g.type, &g.seq, &v);
    if (g.found) g.value = std::string(v.data, v.size);
    return g;
}

}  // namespace memtable_testutil
