"""Build of the tidesdb C extension.

The extension links this repository's libtidesdb.a statically, so the
installed package needs only the compression/hash shared libraries the
library itself uses (liblz4, libzstd, libxxhash, libsnappy). Where the
library comes from:
  - TIDESDB_BUILD_DIR=<dir>: an existing CMake build of this repository
    (e.g. build/ of scripts/test.sh); the `tidesdb_static` target is
    brought up to date in it;
  - otherwise <repo>/build/python-lib, configured (Release, no tests or
    tools) and built here with cmake.
The repository root is found from this file (bindings/python/../..) or
TIDESDB_SOURCE_DIR. pip builds a local directory in place, so
`pip install ./bindings/python` works on a fresh clone.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def source_dir():
    root = os.environ.get("TIDESDB_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))
    if not os.path.exists(os.path.join(root, "include", "tidesdb", "tidesdb.h")):
        raise RuntimeError("TidesDB sources not found at %s (set TIDESDB_SOURCE_DIR)" % root)
    return root


def build_library(root):
    """Configure if needed and build libtidesdb.a; return its directory."""
    bdir = os.environ.get("TIDESDB_BUILD_DIR") or os.path.join(root, "build", "python-lib")
    bdir = os.path.abspath(bdir)
    jobs = os.environ.get("TIDESDB_BUILD_JOBS", str(os.cpu_count() or 2))
    if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        cmd = ["cmake", "-S", root, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
               "-DTDB_BUILD_TESTS=OFF", "-DTDB_BUILD_TOOLS=OFF"]
        if shutil.which("ninja"):
            cmd[1:1] = ["-G", "Ninja"]
        subprocess.check_call(cmd)
    subprocess.check_call(["cmake", "--build", bdir, "--target", "tidesdb_static", "-j", jobs])
    lib = os.path.join(bdir, "libtidesdb.a")
    if not os.path.exists(lib):
        raise RuntimeError("cmake did not produce %s" % lib)
    return lib


class BuildExt(build_ext):
    """build_ext that first builds the C library with CMake."""

    def build_extensions(self):
        root = source_dir()
        lib = build_library(root)
        for ext in self.extensions:
            ext.include_dirs.append(os.path.join(root, "include"))
            ext.extra_objects.append(lib)
            ext.depends.append(lib)
        super().build_extensions()


SOURCES = ["module.c", "db.c", "cf.c", "snapshot.c", "batch.c", "iter.c", "txn.c"]

setup(
    ext_modules=[
        Extension(
            "tidesdb._tidesdb",
            sources=[os.path.join("src", "tidesdb", s) for s in SOURCES],
            depends=[os.path.join("src", "tidesdb", "_tdbpy.h")],
            libraries=["lz4", "zstd", "xxhash", "snappy", "pthread", "m"],
            extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
