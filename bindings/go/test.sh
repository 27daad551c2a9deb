#!/usr/bin/env bash
# bindings/go/test.sh: the Go binding's tests, under the race detector.
#   bash bindings/go/test.sh [--build DIR]
# Builds what it needs: the static library (target tidesdb_static) in the
# CMake build directory DIR (default build/, the one scripts/test.sh and
# the README use; configured RelWithDebInfo if it has no CMakeCache.txt),
# then runs `go vet` and `go test -race` in bindings/go, linking
# DIR/libtidesdb.a through CGO_LDFLAGS=-L DIR. Needs the library's build
# dependencies (scripts/setup.sh --build) and Go >= 1.23 (the go on PATH
# or /usr/local/go; else fetched like the SQL tools' Go, as root).
# About 1 minute on 2 cores once the library is built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build="$(realpath -m "$2")"; shift 2 ;;
    --build=*) build="$(realpath -m "${1#--build=}")"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

# A Go toolchain >= 1.23 (range-over-func iterators).
go_ok() { # go-binary
    local v
    v="$("$1" env GOVERSION 2>/dev/null)" || return 1
    v="${v#go}"
    [ "$(printf '%s\n%s\n' 1.23 "$v" | sort -V | head -1)" = 1.23 ]
}
GO=""
for g in "$(command -v go || true)" /usr/local/go/bin/go "$root/build/go/bin/go"; do
    if [ -n "$g" ] && [ -x "$g" ] && go_ok "$g"; then GO="$g"; break; fi
done
if [ -z "$GO" ]; then
    # shellcheck source=../../scripts/mariadb/common.sh
    GO_MIN=1.23
    GO_FETCH_VERSION="${GO_FETCH_VERSION:-1.23.12}"
    source "$root/scripts/mariadb/common.sh"
    ensure_go
fi
echo "go binding: $("$GO" version), library from $build"

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" --target tidesdb_static -j2

cd "$here"
# A bare environment (no HOME) still gets a build cache.
case "$("$GO" env GOCACHE 2>/dev/null)" in ""|off) export GOCACHE="$root/build/go-cache" ;; esac
[ -n "$("$GO" env GOPATH 2>/dev/null)" ] || export GOPATH="$root/build/go-path"
export GOTOOLCHAIN=local
export CGO_ENABLED=1
export CGO_LDFLAGS="-L$build ${CGO_LDFLAGS:-}"
# The module has no dependencies: nothing is downloaded.
"$GO" vet ./...
"$GO" test -race -count=1 -timeout 600s ./...
