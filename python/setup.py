"""Builds cflux's Python module: the library from the repository this directory is in
(with its own CMake build, into setuptools' build directory), linked statically into
one CPython extension over the C API (include/cflux.h).

`pip install ./python` from the repository's root. Needs what the library needs (a C
compiler, CMake, pkg-config, and Debian's libcjson-dev, zlib1g-dev, libpng-dev,
libjpeg-dev, libopenblas-dev: `make deps` installs them) and Python's headers
(python3-dev). CFLUX_SOURCE_DIR names the repository when this directory was copied
elsewhere; CFLUX_BLAS=OFF builds without OpenBLAS (the built-in matrix product)."""
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def source_dir():
    src = Path(os.environ.get("CFLUX_SOURCE_DIR", HERE.parent)).resolve()
    if not (src / "include" / "cflux.h").is_file() or not (src / "CMakeLists.txt").is_file():
        sys.exit(f"cflux: {src} is not cflux's repository (no include/cflux.h and CMakeLists.txt); "
                 "install with `pip install ./python` from the repository, or set CFLUX_SOURCE_DIR to it")
    return src


def run(cmd, **kw):
    print("cflux:", " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


class BuildCflux(build_ext):
    """Build libcflux.a with CMake first, then the extension against it."""

    def build_extension(self, ext):
        src = source_dir()
        lib = Path(self.build_temp).resolve() / "cflux-lib"
        lib.mkdir(parents=True, exist_ok=True)
        blas = os.environ.get("CFLUX_BLAS", "ON")
        run(["cmake", "-S", src, "-B", lib, "-DCMAKE_BUILD_TYPE=Release", "-DCFLUX_TESTS=OFF", "-DCFLUX_MPI=OFF",
             f"-DCFLUX_BLAS={blas}"], stdout=subprocess.DEVNULL)
        jobs = str(os.cpu_count() or 2)
        run(["cmake", "--build", lib, "--target", "cflux_static", "-j", jobs])
        env = dict(os.environ, PKG_CONFIG_PATH=f"{lib}:{os.environ.get('PKG_CONFIG_PATH', '')}")
        libs = subprocess.run(["pkg-config", "--static", "--libs", "cflux"], check=True, env=env,
                              capture_output=True, text=True).stdout.split()
        ext.include_dirs += [str(src / "include"), numpy.get_include()]
        ext.extra_objects = [str(lib / "libcflux.a")]
        ext.depends = [str(lib / "libcflux.a"), str(src / "include" / "cflux.h")]   # relinked when they change
        ext.libraries += [f[2:] for f in libs if f.startswith("-l") and f != "-lcflux"]
        ext.library_dirs += [f[2:] for f in libs if f.startswith("-L") and Path(f[2:]) != lib]
        ext.extra_compile_args += ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                                   "-Wno-cast-function-type", "-Werror=implicit-function-declaration"]
        super().build_extension(ext)


setup(
    ext_modules=[Extension("cflux._cflux", ["src/_cflux.c"])],
    cmdclass={"build_ext": BuildCflux},
)
