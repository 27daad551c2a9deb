#include "testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace tdbtest {

TempDir::TempDir() {
    const char *base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tdbtest-XXXXXX";
    char *p = mkdtemp(tmpl.data());
    if (!p) abort();
    path_ = p;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string Key(uint64_t i, int width) {
    char buf[64];
    snprintf(buf, sizeof buf, "k%0*llu", width - 1, (unsigned long long)i);
    return buf;
}

std::string Value(uint64_t i, size_t n) {
    std::string v(n, '\0');
    uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
    for (size_t j = 0; j < n; j++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        v[j] = (char)('a' + (x % 26));
    }
    return v;
}

std::string Slurp(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int KillNine(const std::function<void()> &child, const std::function<void()> &before_kill) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        child();
        _exit(0);
    }
    before_kill();
    kill(pid, SIGKILL);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return status;
}

}  // namespace tdbtest
