#!/bin/sh
# Builds the examples of rsmpi (the `mpi` crate, pinned below, from crates.io) against the
# oxmpi installation $1 (its mpicc, which rsmpi's build probes; bindgen reads its mpi.h) and
# prints the directory holding the example binaries. The cargo target directory is cached
# under ~/.cache/oxmpi/rsmpi, keyed on the installation's mpi.h: a cached build is reused
# at once, a new header rebuilds (bindgen's bindings come from it).
#
# Needs libclang for bindgen (Debian libclang-dev, installed here if missing and we are root).
set -eu
prefix=$1
cargo=${CARGO:-cargo}
ver=0.8.2
cache=${OXMPI_CACHE_DIR:-$HOME/.cache/oxmpi}/rsmpi
key=$(sha256sum "$prefix/include/mpi.h" | cut -c1-12)
target=$cache/target-$key
bins=$target/debug/examples
if [ -f "$target/.built" ]; then
    echo "$bins"
    exit 0
fi
mkdir -p "$cache"
# bindgen loads libclang.so or libclang-N.so; libclang-cpp (another library, which other
# packages pull in) does not count.
have_libclang() {
    for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
        /usr/lib/*/libclang.so* /usr/lib/*/libclang-[0-9]*.so*; do
        [ -e "$f" ] && return 0
    done
    return 1
}
if ! have_libclang; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        { apt-get install -y libclang-dev || { apt-get update && apt-get install -y libclang-dev; }; } >&2
    else
        echo "rsmpi needs libclang (Debian: libclang-dev) for bindgen" >&2
        exit 1
    fi
fi
# The crate's source as published (with its examples and Cargo.lock), through cargo.
src=$cache/mpi-$ver
if [ ! -f "$src/Cargo.toml" ]; then
    fetch=$cache/fetch
    rm -rf "$fetch" "$src"
    mkdir -p "$fetch/src"
    printf '[package]\nname = "fetch-rsmpi"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nmpi = "=%s"\n[workspace]\n' \
        "$ver" >"$fetch/Cargo.toml"
    : >"$fetch/src/lib.rs"
    (cd "$fetch" && "$cargo" vendor --versioned-dirs -q vendor >/dev/null)
    cp -r "$fetch/vendor/mpi-$ver" "$src"
    rm -rf "$fetch"
fi
# Builds of other headers are stale: only this one is kept.
for old in "$cache"/target-*; do
    [ "$old" = "$target" ] || rm -rf "$old"
done
# `[workspace]` keeps the copy out of any workspace above the cache directory.
grep -q '^\[workspace\]' "$src/Cargo.toml" || printf '\n[workspace]\n' >>"$src/Cargo.toml"
(cd "$src" &&
    PATH="$prefix/bin:$PATH" MPICC="$prefix/bin/mpicc" CARGO_TARGET_DIR="$target" \
        "$cargo" build --locked --examples --features derive,complex >"$cache/build.log" 2>&1) || {
    tail -40 "$cache/build.log" >&2
    exit 1
}
touch "$target/.built"
echo "$bins"
