#!/bin/sh
# ci/vm/perftest-bench.sh — the in-VM half of ci/perftest-vm.sh (busybox ash).
#
# Usage (inside the VM):
#   sh perftest-bench.sh MODE REPS LAT_ITERS_SMALL LAT_ITERS_LARGE BW_ITERS [FERRY_CMD_FILE]...
# MODE poll:   completion polling (perftest's default); with >= 2 vCPUs the server
#              is pinned to vCPU 0 and the client to vCPU 1.
# MODE events: -e (completion events) for the tools that support it (send_lat,
#              read_lat, send_bw, read_bw); ib_write_lat and ib_write_bw poll
#              (perftest refuses -e for WRITE), no pinning.
#
# For each repetition it runs every perftest case once (block A), then each
# ferry command file once (block B, C, ...): A B A B ... in one boot, so slow
# drift of the emulator or of the host load hits both sides alike.
#
# Output protocol (parsed by ci/perftest-vm.sh on the host; everything else on
# the console is ignored):
#   @@CPUS <n>                           vCPUs seen by the guest
#   @@P <rep> <tool> <size> <value>      perftest: lat = t_typical (us), bw = BW average (MB/s)
#   @@F <idx> <rep> <line>               one stdout line of ferry command number <idx>
#   @@BAD <what>: <value> ...            bad clock calibration 3 times, dropped; its output follows
#   @@FAIL <what>                        a run failed (its output follows, unprefixed)
# Exit status: 0 if every run succeeded, 1 otherwise (all runs are still attempted).
set -u
MODE=$1 REPS=$2 NS=$3 NL=$4 NB=$5
shift 5
DEV=${RDMA_DEV:-rxe0}
PORT=18515
FAILED=0
# Two spinning processes on one vCPU wait a scheduler tick (~4 ms) per message;
# pinning them to different vCPUs keeps the guest scheduler from doing that.
PIN_S="" PIN_C=""
if [ "$MODE" = poll ] && [ "$(nproc)" -ge 2 ]; then PIN_S="taskset 1" PIN_C="taskset 2"; fi

# True once something listens on TCP port $1 (perftest's out-of-band exchange).
# Polling /proc avoids both a fixed sleep (too short under a loaded TCG host)
# and client retries.
listening() {
  hex=$(printf '%04X' "$1")
  grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# attempt TOOL SIZE ITERS: one server/client pair on a fresh port. Sets $v to the
# result; returns 0 (good), 1 (bad clock calibration, worth a retry), 2 (failed).
attempt() {
  tool=$1 size=$2 iters=$3
  PORT=$((PORT + 1))
  # -F: no cpufreq warning (the guest has no cpufreq).
  set -- -d "$DEV" -F -p "$PORT" -s "$size" -n "$iters"
  if [ "$MODE" = events ]; then
    case $tool in ib_write_*) ;; *) set -- "$@" -e;; esac
  fi
  $PIN_S timeout 120 "$tool" "$@" > /tmp/pt-server.log 2>&1 &
  spid=$!
  i=0
  until listening "$PORT"; do
    i=$((i + 1))
    if [ $i -gt 300 ]; then break; fi
    sleep 0.1
  done
  v=""
  if ! $PIN_C timeout 120 "$tool" "$@" 127.0.0.1 > /tmp/pt-client.log 2>&1; then
    wait $spid 2>/dev/null
    return 2
  fi
  wait $spid || return 2
  case $tool in
    *_lat) col=5;;   # #bytes #iterations t_min t_max t_typical ...
    *_bw) col=4;;    # #bytes #iterations BW_peak BW_average MsgRate
  esac
  v=$(awk -v s="$size" -v c="$col" '$1 == s && NF >= c && $2 ~ /^[0-9]+$/ {print $c; exit}' /tmp/pt-client.log)
  # perftest converts TSC cycles with a CPU clock it calibrates against
  # gettimeofday; when the host steals the vCPU during calibration it reports
  # "Correlation coefficient r^2: ... < 0.9" and uses 0 MHz: latency inf, BW 0.00.
  if grep -q 'Correlation coefficient' /tmp/pt-client.log; then return 1; fi
  case $v in
    [0-9]*) return 0;;
    ?*) return 1;;
    *) return 2;;
  esac
}

# perftest TOOL SIZE ITERS REP: a measurement, retried twice on a bad calibration.
perftest() {
  n=1
  while :; do
    attempt "$1" "$2" "$3"
    st=$?
    case $st in
      0) echo "@@P $4 $1 $2 $v"; return 0;;
      1) if [ $n -ge 3 ]; then
           # Not a failure of the RDMA path: drop the sample, keep the log.
           echo "@@BAD $1 -s $2 (rep $4): $v after $n attempts"
           cat /tmp/pt-client.log
           return 0
         fi;;
      *) echo "@@FAIL $1 -s $2 (rep $4)"
         cat /tmp/pt-client.log /tmp/pt-server.log
         FAILED=1
         return 0;;
    esac
    n=$((n + 1))
  done
}

echo "@@CPUS $(nproc)"
rep=1
while [ $rep -le "$REPS" ]; do
  echo "[bench] repetition $rep/$REPS at $(cut -d' ' -f1 /proc/uptime)s"
  for tool in ib_send_lat ib_write_lat ib_read_lat; do
    perftest "$tool" 8 "$NS" "$rep"
    perftest "$tool" 65536 "$NL" "$rep"
  done
  for tool in ib_send_bw ib_write_bw ib_read_bw; do
    perftest "$tool" 1048576 "$NB" "$rep"
  done
  idx=1
  for f in "$@"; do
    # stdout is the result (ferry-bench format); stderr goes to the console as is.
    if sh -e "$f" > /tmp/ferry.log; then
      sed "s/^/@@F $idx $rep /" /tmp/ferry.log
    else
      echo "@@FAIL ferry command $idx (rep $rep)"
      cat /tmp/ferry.log
      FAILED=1
    fi
    idx=$((idx + 1))
  done
  rep=$((rep + 1))
done
exit $FAILED
