#!/usr/bin/env bash
# install-build-deps.sh — the system libraries the default build links: hwloc (oxmpi-pmi's
# `hwloc` feature, through the hwlocality crate, found with pkg-config; its static link line
# also names libudev).
#
# Idempotent: does nothing when `pkg-config --exists hwloc` and libudev's link name are there.
# Otherwise installs Debian's libhwloc-dev, libudev-dev and pkg-config (needs root and apt-get).
# Where that is impossible it says so and exits 1; build with `--no-default-features` on
# oxrun and oxmpi then (topology from sysfs only).
set -euo pipefail

have() {
    command -v pkg-config >/dev/null 2>&1 && pkg-config --exists 'hwloc >= 2.0' &&
        pkg-config --exists libudev
}

if have; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-build-deps: libhwloc-dev, libudev-dev and pkg-config are missing and cannot be installed here (needs root and apt-get); build with --no-default-features" >&2
    exit 1
fi
pkgs=(libhwloc-dev libudev-dev pkg-config)
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${pkgs[@]}" >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends "${pkgs[@]}" >&2; }
have
