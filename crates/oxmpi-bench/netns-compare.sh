#!/usr/bin/env bash
# Cross-host comparison on namespace hosts: oxmpi-bench latency (1 B) and bw (4 MiB) between
# two network-namespace hosts joined by two veth rails (one rail and both), against
# `oxmpi-bench rawtcp` (its ping-pong both blocking and spinning) and, when installed in
# ~/.cache/oxmpi/peers/mpich (scripts/install-peers.sh mpich), MPICH running the C suite
# over TCP (libfabric's tcp provider, one interface), all between the same namespaces,
# interleaved round by round. Hydra starts its proxies through a launcher that runs them in
# a namespace. Needs root and `ip`; builds nothing of oxmpi (run
# `cargo build --release --workspace --bins` first).
#
#   crates/oxmpi-bench/netns-compare.sh [ROUNDS] [EXTRA ENV ...]   e.g. 3 OXMPI_TCP_SPIN_COUNT=16
#
# PRIO='chrt -f 10' runs every measured program (all of them alike) at a real-time priority,
# so that other load on the machine does not decide the figures.
# Prints one line per measurement, a table of medians and the median of `oxmpi-bench floor`
# taken each round (how near the two cores sit on the host at the time: runs compare only at
# a similar floor).
set -euo pipefail
ROUNDS=${1:-3}; shift || true
EXTRA=("$@")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=${TARGET:-$ROOT/target/release}
MPICH=${MPICH:-$HOME/.cache/oxmpi/peers/mpich}
read -r -a PRE <<<"${PRIO:-}"
P=oxb$$
H1=${P}h1 H2=${P}h2 H3=${P}h3
WORK=$(mktemp -d)
cleanup() { for h in $H1 $H2 $H3; do ip netns del "$h" 2>/dev/null || true; done; rm -rf "$WORK"; }
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
# One address of h3 that both h1 and h2 reach: Hydra's proxies connect back to it.
ip -n $H3 addr add 10.77.99.3/32 dev lo
ip -n $H1 route add 10.77.99.3/32 via 10.77.13.3
ip -n $H2 route add 10.77.99.3/32 via 10.77.23.3

HAVE_MPICH=0
if [ -x "$MPICH/bin/mpicc" ] && [ -x "$MPICH/bin/mpiexec" ] &&
   "$MPICH/bin/mpicc" -O2 -o "$WORK/oxbench-mpich" "$ROOT/bench/c/oxbench.c" 2>"$WORK/cc.log"; then
  HAVE_MPICH=1
  # Hydra's rsh launcher runs `EXEC HOST COMMAND` (COMMAND quoted for a remote shell).
  cat >"$WORK/nsexec" <<'EOS'
#!/bin/sh
[ "$1" = "-x" ] && shift
h=$1; shift
exec ip netns exec "$h" sh -c "$*"
EOS
  chmod +x "$WORK/nsexec"
else
  echo "MPICH not measured: no $MPICH/bin/mpicc and mpiexec (scripts/install-peers.sh mpich) or the C suite did not build" >&2
fi

mpi() { # rails-cidr benchmark size
  env OXMPI_TCP_IF="$1" "${EXTRA[@]}" timeout 120 "${PRE[@]}" ip netns exec $H3 "$T/oxrun" \
    --launcher 'ip netns exec {host}' --timeout 100 --host $H1:1,$H2:1 -n 2 \
    "$T/oxmpi-bench" "$2" --min "$3" --max "$3" | awk -v s="$3" '$1==s {print $2}'
}
raw() { # which: lat|spin|bw (spin: the ping-pong with both sides polling nonblocking sockets)
  local port=$((20000 + RANDOM % 20000))
  timeout 120 "${PRE[@]}" ip netns exec $H1 "$T/oxmpi-bench" rawtcp --serve 10.77.12.1:$port >/dev/null &
  local srv=$!
  sleep 0.3
  local out
  out=$(timeout 120 "${PRE[@]}" ip netns exec $H2 "$T/oxmpi-bench" rawtcp --connect 10.77.12.1:$port \
        --lat-sizes 1 --bw-sizes 4194304 --iters 10000 --stream-bytes 1073741824 --spin)
  wait $srv || true
  if [ "$1" = lat ]; then echo "$out" | awk '/ping-pong/{p=1} p && $1=="1"{print $2; exit}'
  elif [ "$1" = spin ]; then echo "$out" | awk '/spinning/{p=1} p && $1=="1"{print $2; exit}'
  else echo "$out" | awk '/stream/{p=1} p && $1=="4194304"{print $2; exit}'; fi
}
mpich() { # benchmark size: MPICH over rail0 between h1 and h2
  [ "$HAVE_MPICH" = 1 ] || { echo "-"; return; }
  timeout 120 "${PRE[@]}" ip netns exec $H3 "$MPICH/bin/mpiexec" -launcher rsh \
    -launcher-exec "$WORK/nsexec" -localhost 10.77.99.3 -hosts $H1,$H2 -n 2 -ppn 1 \
    -genv MPIR_CVAR_CH4_NETMOD ofi -genv FI_PROVIDER tcp -genv FI_TCP_IFACE rail0 \
    "$WORK/oxbench-mpich" "$1" --min "$2" --max "$2" | awk -v s="$2" '$1==s {print $2}'
}
floor() { # the median of 3 cache-line ping-pongs between cores 0 and 1
  "${PRE[@]}" "$T/oxmpi-bench" floor --repeats 3 | awk '!/^#/' | sort -g | awk 'NR==2'
}
ONE=10.77.12.0/24 TWO=10.77.12.0/24,10.77.112.0/24
RES=$(mktemp)
for r in $(seq 1 "$ROUNDS"); do
  for m in "floor" "raw-lat" "rawspin-lat" "mpi1-lat" "mpi2-lat" "mpich-lat" "raw-bw" "mpi1-bw" "mpi2-bw" "mpich-bw"; do
    case $m in
      floor) v=$(floor) ;;
      mpich-lat) v=$(mpich latency 1) ;; mpich-bw) v=$(mpich bw 4194304) ;;
      raw-lat) v=$(raw lat) ;; rawspin-lat) v=$(raw spin) ;; raw-bw) v=$(raw bw) ;;
      mpi1-lat) v=$(mpi $ONE latency 1) ;; mpi2-lat) v=$(mpi $TWO latency 1) ;;
      mpi1-bw) v=$(mpi $ONE bw 4194304) ;; mpi2-bw) v=$(mpi $TWO bw 4194304) ;;
    esac
    echo "round $r $m $v"; echo "$m $v" >>"$RES"
  done
done
med() { grep "^$1 " "$RES" | awk '{print $2}' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo
echo "| measure (median of $ROUNDS, ${EXTRA[*]:-default env}${PRIO:+, $PRIO}) | raw TCP | raw TCP, spinning | oxmpi 1 rail | oxmpi 2 rails | MPICH 1 rail |"
echo "|---|---|---|---|---|---|"
echo "| 1 B latency (us) | $(med raw-lat) | $(med rawspin-lat) | $(med mpi1-lat) | $(med mpi2-lat) | $(med mpich-lat) |"
echo "| 4 MiB bandwidth (MB/s) | $(med raw-bw) | - | $(med mpi1-bw) | $(med mpi2-bw) | $(med mpich-bw) |"
echo
echo "oxmpi-bench floor (cores 0 and 1, median of $ROUNDS rounds): $(med floor) us"
# The goals: 1 B latency at most 1.2x raw TCP's, 4 MiB bandwidth at least 0.9x.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }
echo "1 B latency / raw spinning: $(ratio "$(med mpi1-lat)" "$(med rawspin-lat)") (1 rail), $(ratio "$(med mpi2-lat)" "$(med rawspin-lat)") (2 rails)"
echo "4 MiB bandwidth / raw stream: $(ratio "$(med mpi1-bw)" "$(med raw-bw)") (1 rail), $(ratio "$(med mpi2-bw)" "$(med raw-bw)") (2 rails)"
rm -f "$RES"
