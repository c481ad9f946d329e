#!/usr/bin/env bash
# Cross-host comparison on namespace hosts: oxmpi-bench latency (1 B) and bw (4 MiB) between
# two network-namespace hosts joined by two veth rails, against `oxmpi-bench rawtcp` between
# the same namespaces, interleaved round by round. Needs root and `ip`; builds nothing (run
# `cargo build --release --workspace --bins` first).
#
#   crates/oxmpi-bench/netns-compare.sh [ROUNDS] [EXTRA ENV ...]   e.g. 3 OXMPI_SPIN_COUNT=16
#
# Prints one line per measurement and a table of medians.
set -euo pipefail
ROUNDS=${1:-3}; shift || true
EXTRA=("$@")
T=${TARGET:-$(cd "$(dirname "$0")/../.." && pwd)/target/release}
P=oxb$$
H1=${P}h1 H2=${P}h2 H3=${P}h3
cleanup() { for h in $H1 $H2 $H3; do ip netns del "$h" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
for h in $H1 $H2 $H3; do ip netns add "$h"; ip -n "$h" link set lo up; done
link() { # host-a if-a host-b if-b net
  ip link add name "$2" netns "$1" type veth peer name "$4" netns "$3"
  ip -n "$1" addr add "10.77.$5.${1: -1}/24" dev "$2"; ip -n "$1" link set "$2" up
  ip -n "$3" addr add "10.77.$5.${3: -1}/24" dev "$4"; ip -n "$3" link set "$4" up
}
link $H1 rail0 $H2 rail0 12
link $H1 rail1 $H2 rail1 112
link $H1 to-h3 $H3 to-h1 13
link $H2 to-h3 $H3 to-h2 23

mpi() { # rails-cidr benchmark size
  env OXMPI_TCP_IF="$1" "${EXTRA[@]}" timeout 120 ip netns exec $H3 "$T/oxrun" \
    --launcher 'ip netns exec {host}' --timeout 100 --host $H1:1,$H2:1 -n 2 \
    "$T/oxmpi-bench" "$2" --min "$3" --max "$3" | awk -v s="$3" '$1==s {print $2}'
}
raw() { # which: lat|bw
  local port=$((20000 + RANDOM % 20000))
  timeout 120 ip netns exec $H1 "$T/oxmpi-bench" rawtcp --serve 10.77.12.1:$port >/dev/null &
  local srv=$!
  sleep 0.3
  local out
  out=$(timeout 120 ip netns exec $H2 "$T/oxmpi-bench" rawtcp --connect 10.77.12.1:$port \
        --lat-sizes 1 --bw-sizes 4194304 --iters 10000 --stream-bytes 1073741824)
  wait $srv || true
  if [ "$1" = lat ]; then echo "$out" | awk '/ping-pong/{p=1} p && $1=="1"{print $2; exit}'
  else echo "$out" | awk '/stream/{p=1} p && $1=="4194304"{print $2; exit}'; fi
}
ONE=10.77.12.0/24 TWO=10.77.12.0/24,10.77.112.0/24
RES=$(mktemp)
for r in $(seq 1 "$ROUNDS"); do
  for m in "raw-lat" "mpi1-lat" "mpi2-lat" "raw-bw" "mpi1-bw" "mpi2-bw"; do
    case $m in
      raw-lat) v=$(raw lat) ;; raw-bw) v=$(raw bw) ;;
      mpi1-lat) v=$(mpi $ONE latency 1) ;; mpi2-lat) v=$(mpi $TWO latency 1) ;;
      mpi1-bw) v=$(mpi $ONE bw 4194304) ;; mpi2-bw) v=$(mpi $TWO bw 4194304) ;;
    esac
    echo "round $r $m $v"; echo "$m $v" >>"$RES"
  done
done
med() { grep "^$1 " "$RES" | awk '{print $2}' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo
echo "| measure (median of $ROUNDS, ${EXTRA[*]:-default env}) | raw TCP | oxmpi 1 rail | oxmpi 2 rails |"
echo "|---|---|---|---|"
echo "| 1 B latency (us) | $(med raw-lat) | $(med mpi1-lat) | $(med mpi2-lat) |"
echo "| 4 MiB bandwidth (MB/s) | $(med raw-bw) | $(med mpi1-bw) | $(med mpi2-bw) |"
rm -f "$RES"
