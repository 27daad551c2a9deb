// Shared helpers for the unit tests: temporary directories and key/value
// generators. Every test gets a fresh directory that is removed afterwards.
#pragma once

#include <cstdint>
#include <functional>
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

// The kill -9 harness of the crash tests: fork; the child runs child()
// (meant to be killed while it works; it exits 0 if child() returns); the
// parent runs before_kill() (a sleep, or a wait until the child is busy),
// sends SIGKILL and reaps the child. Returns the child's wait status
// (WIFSIGNALED if the kill landed first), -1 if fork failed. The caller
// then reopens whatever the child left and checks it.
int KillNine(const std::function<void()> &child, const std::function<void()> &before_kill);

}  // namespace tdbtest
