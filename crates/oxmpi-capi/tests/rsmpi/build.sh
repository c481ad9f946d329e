#!/bin/sh
# Builds rsmpi (the `mpi` crate from crates.io, without default features: no libffi) and its
# examples against the oxmpi installation $1, the way its users do: `mpicc` on PATH, which
# rsmpi's build probes with `mpicc -show`, and bindgen over the installed mpi.h. Cached under
# ~/.cache/oxmpi keyed on the crate version and the installation's mpi.h; prints the
# directory holding the example programs. Idempotent: a cached build is reused at once.
set -eu
prefix=$1
ver=0.8.2
cache=${OXMPI_CACHE_DIR:-$HOME/.cache/oxmpi}
key=$(sha256sum "$prefix/include/mpi.h" | cut -c1-12)
dir=$cache/rsmpi-$ver-$key
if [ ! -f "$dir/.built" ]; then
    rm -rf "$dir"
    mkdir -p "$dir/fetch/src"
    # bindgen loads libclang and needs clang's own headers (stddef.h).
    if ! ls /usr/lib/llvm-*/lib/libclang.so.1 >/dev/null 2>&1 ||
        ! ls /usr/lib/llvm-*/lib/clang/*/include/stddef.h >/dev/null 2>&1; then
        pkgs="libclang1-14 libclang-common-14-dev"
        apt-get install -y $pkgs >&2 || { apt-get update >&2 && apt-get install -y $pkgs >&2; }
    fi
    # The crate's source through cargo's own download.
    cat >"$dir/fetch/Cargo.toml" <<EOF
[package]
name = "rsmpi-fetch"
version = "0.0.0"
edition = "2021"

[dependencies]
mpi = { version = "=$ver", default-features = false }
EOF
    echo "fn main() {}" >"$dir/fetch/src/main.rs"
    (cd "$dir/fetch" && cargo fetch -q >&2)
    src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/mpi-$ver | head -1)
    cp -r "$src" "$dir/mpi"
    (cd "$dir/mpi" && PATH="$prefix/bin:$PATH" MPICC="$prefix/bin/mpicc" \
        cargo build --release --no-default-features --examples >"$dir/build.log" 2>&1) || {
        tail -40 "$dir/build.log" >&2
        exit 1
    }
    touch "$dir/.built"
fi
echo "$dir/mpi/target/release/examples"
