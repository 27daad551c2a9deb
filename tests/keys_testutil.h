// White-box helpers shared by the unit tests of internals: slices over
// strings and the internal-key builder (user key + fixed64 of the packed
// sequence and type, util/ikey.h), instead of a copy in every test file.
#pragma once

#include <cstdint>
#include <string>

extern "C" {
#include "util/coding.h"
#include "util/ikey.h"
#include "util/slice.h"
}

namespace tdbtest {

// A slice over s (valid while s is).
inline slice_t S(const std::string &s) { return slice_make(s.data(), s.size()); }

// The internal key of user key uk at sequence seq with entry type `type`.
inline std::string IK(const std::string &uk, uint64_t seq, unsigned type = KT_PUT) {
    std::string k = uk;
    char t[8];
    enc_fixed64(t, ikey_pack(seq, type));
    k.append(t, 8);
    return k;
}

}  // namespace tdbtest
