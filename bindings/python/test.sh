#!/usr/bin/env bash
# Build and test the Python binding (bindings/python):
#   - a virtualenv in $TDB_PY_VENV (build/venv-python) with access to the
#     system site-packages, so Debian's python3-pytest, -setuptools and
#     -wheel serve without PyPI (each is fetched from PyPI only if missing);
#   - `pip install --no-build-isolation ./bindings/python`, which builds
#     libtidesdb.a with CMake (reusing $TIDESDB_BUILD_DIR if given, e.g.
#     the build/ of scripts/test.sh) and links it into the extension;
#   - the pytest suite (tests/), about 10 s on 2 cores (16 s in all with the
#     library built; a fresh library build adds about 40 s).
# Needs python3-dev and python3-venv (scripts/setup.sh installs them).
# Usage: bash bindings/python/test.sh [pytest args...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${TDB_PY_VENV:-$root/build/venv-python}"
py="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c 'import pytest' 2>/dev/null; then
    "$venv/bin/python" -m pip install -q pytest
fi
# setuptools and wheel build the extension (--no-build-isolation below).
for mod in setuptools wheel; do
    if ! "$venv/bin/python" -c "import $mod" 2>/dev/null; then
        "$venv/bin/python" -m pip install -q "$mod"
    fi
done
export TIDESDB_BUILD_JOBS="${TIDESDB_BUILD_JOBS:-2}"
"$venv/bin/python" -m pip install -q --no-build-isolation --force-reinstall --no-deps "$here"
# Run from the tests directory so `import tidesdb` is the installed package,
# not the source tree.
cd "$here/tests"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" .
