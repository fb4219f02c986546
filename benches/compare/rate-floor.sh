#!/usr/bin/env bash
# benches/compare/rate-floor.sh — where the 8 B message rate goes, layer by
# layer, for ferry and for UCX, in alternating runs on this machine:
#   ferry-device  shm/examples/device_stream: the shm device alone (fastbox
#                 send, poll, copy out), no engine, no matching, no request;
#   uct-am_bw     ucx_perftest -t am_bw -x sysv: UCX's transport alone (UCT);
#   ucp-tag_bw    ucx_perftest -t tag_bw, UCX_TLS=sysv: UCX with tag matching
#                 (the figure ci/compare.sh reports for UCX sysv);
#   ferry-bw      ferry-bench bw --sizes 8: ferry's whole path in osu_bw's
#                 loop (window 64 + ack).
# Every program runs as two ranks (threads for device_stream) pinned to CPUs
# 0 and 1. M messages/s per run, then the medians.
# Usage: benches/compare/rate-floor.sh [REPS (default 7)]
# Needs ucx-utils (ucx_perftest); installed if missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap benches/compare/rate-floor.sh
reps=${1:-7}
ci_packages_ensure ucx-utils
cargo build --release --locked -q -p ferry-shm --example device_stream
cargo build --release --locked -q -p ferry-bench -p ferry-launch --bin ferry-bench --bin ferryrun
bin=${CARGO_TARGET_DIR:-target}/release
port=13391

# One ucx_perftest pair (server on CPU 0, client on CPU 1); prints M msg/s.
ucx() {
  local server
  UCX_TLS=sysv taskset -c 0 ucx_perftest -p $port "$@" >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  UCX_TLS=sysv taskset -c 1 ucx_perftest localhost -p $port "$@" 2>&1 \
    | awk '/Final/ { printf "%.2f", $9 / 1e6; found = 1 } END { if (!found) printf "fail" }'
  wait "$server" || true
  port=$((port + 1))
}

printf '%-4s %14s %12s %12s %10s\n' rep ferry-device uct-am_bw ucp-tag_bw ferry-bw
rows=()
for ((rep = 1; rep <= reps; rep++)); do
  device=$("$bin/examples/device_stream" 8 5000000 | awk '{ print $3 }')
  uct=$(ucx -t am_bw -d memory -x sysv -n 3000000 -s 8)
  ucp=$(ucx -t tag_bw -n 3000000 -s 8)
  bw=$("$bin/ferryrun" -n 2 "$bin/ferry-bench" bw --sizes 8 --iters 50000 2>/dev/null \
    | awk '!/^#/ { printf "%.2f", $4 / 1e6 }')
  printf '%-4s %14s %12s %12s %10s\n' "$rep" "$device" "$uct" "$ucp" "$bw"
  rows+=("$device $uct $ucp $bw")
done
printf '%s\n' "${rows[@]}" | awk '
  { for (i = 1; i <= 4; i++) v[i, NR] = $i }
  END {
    printf "%-4s", "med"
    for (i = 1; i <= 4; i++) {
      n = 0
      for (r = 1; r <= NR; r++) if (v[i, r] != "fail") a[++n] = v[i, r] + 0
      for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
      m = n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
      printf (i == 1 ? " %14.2f" : i == 4 ? " %10.2f" : " %12.2f"), m
    }
    printf "\n"
  }'
