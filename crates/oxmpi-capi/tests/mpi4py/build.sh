#!/bin/sh
# Builds mpi4py from PyPI against the oxmpi installation $1 (its mpicc) into a virtualenv cached
# under ~/.cache/oxmpi, keyed on the mpi4py version and the installation's mpi.h, and prints
# the virtualenv's directory. Idempotent: a cached build is reused at once.
#
# mpi.h defines MPI_ABI_VERSION, so mpi4py would assume the standard's whole function set;
# MPI4PY_BUILD_CONFIGURE=1 makes it probe each function and leave out what the library lacks.
# -O0: the generated MPI.c is large, and the tests do not need it fast.
set -eu
prefix=$1
ver=4.1.2
cache=${OXMPI_CACHE_DIR:-$HOME/.cache/oxmpi}
key=$(sha256sum "$prefix/include/mpi.h" | cut -c1-12)
venv=$cache/mpi4py-$ver-$key
if [ ! -f "$venv/.built" ]; then
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q setuptools wheel "cython>=3" >&2
    "$venv/bin/pip" download -q --no-deps --no-binary mpi4py --no-build-isolation \
        "mpi4py==$ver" -d "$venv/src" >&2
    tar xzf "$venv/src/mpi4py-$ver.tar.gz" -C "$venv/src"
    (cd "$venv/src/mpi4py-$ver" &&
        MPICC="$prefix/bin/mpicc" MPI4PY_BUILD_CONFIGURE=1 CFLAGS="-O0" \
            "$venv/bin/pip" install -v --no-build-isolation --no-deps . >"$venv/build.log" 2>&1) || {
        tail -40 "$venv/build.log" >&2
        exit 1
    }
    touch "$venv/.built"
fi
echo "$venv"
