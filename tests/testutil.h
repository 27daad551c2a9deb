// Shared helpers for the unit tests: temporary directories and key/value
// generators. Every test gets a fresh directory that is removed afterwards.
#pragma once

#include <cstdint>
#include <string>

namespace tdbtest {

// A fresh empty directory under $TMPDIR (or /tmp), removed on destruction.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    const std::string &path() const { return path_; }
    std::string file(const std::string &name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

// Deterministic key "k" + zero-padded i (sorts like i).
std::string Key(uint64_t i, int width = 16);
// Deterministic pseudo-random value of n bytes derived from i.
std::string Value(uint64_t i, size_t n = 100);
// The whole content of the file at path ("" if it cannot be read).
std::string Slurp(const std::string &path);

}  // namespace tdbtest
