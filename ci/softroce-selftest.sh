#!/usr/bin/env bash
# ci/softroce-selftest.sh — proves ci/softroce.sh: the VM boots, rxe0 works for
# real verbs traffic, and failures inside the VM fail the script.
#
#   1. one VM: ibv_devices lists rxe0, ibv_devinfo shows an active port, an
#      ib_send_lat server/client pair runs over rxe0, FERRY_*/RUST_* variables
#      arrive intact, -f files arrive at the same path;
#   2. a failing command ('true' 'false' 'echo ...') exits 1 and stops the list;
#   3. a command's own status comes back (exit 3 -> 3);
#   4. a VM that never reports (poweroff before the status line) exits 125;
#   5. a hung command hits FERRY_VM_TIMEOUT and exits 124;
#   6. FERRY_VM_SMP=2 boots 2 vCPUs.
# Exits non-zero on the first failed check. Env: FERRY_VM_* as for ci/softroce.sh
# (e.g. FERRY_VM_SMP=2 to run the checks on 2 vCPUs).
# The VM commands are single-quoted on purpose: they expand inside the VM.
# shellcheck disable=SC2016
set -euo pipefail
cd "$(dirname "$0")/.."
VM=ci/softroce.sh

fail() { echo "SELFTEST FAILED: $*" >&2; exit 1; }
ok() { echo "=== ok: $*" >&2; }
# expect STATUS CMD...: run CMD, demand exit status STATUS, keep its stdout in $OUT.
expect() {
  local want=$1 got=0
  shift
  OUT=$("$@") || got=$?
  printf '%s\n' "$OUT"
  [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want"
}

echo "=== 1. rxe0, verbs tools, perftest pair, environment, -f" >&2
me=$(realpath "$0")
# The value has a space, a single and a double quote: it must arrive verbatim.
export FERRY_SELFTEST_VALUE="a b'c\"d"
expect 0 $VM -f "$me" -- \
  'ibv_devices' \
  'ibv_devices | grep -qw rxe0' \
  'ibv_devinfo -d rxe0' \
  'ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE' \
  'test -f '"$me" \
  'test "$FERRY_SELFTEST_VALUE" = "a b'"'"'c\"d"' \
  'test "$RDMA_DEV" = rxe0 && test -n "$FERRY_VM_IP"' \
  'timeout 120 ib_send_lat -d rxe0 -F -s 8 -n 200 > /tmp/server.log 2>&1 & server=$!
   # The client retries until the server listens (no fixed sleep: TCG speed varies).
   n=0
   until timeout 120 ib_send_lat -d rxe0 -F -s 8 -n 200 "$FERRY_VM_IP" > /tmp/client.log 2>&1; do
     n=$((n + 1)); [ $n -lt 30 ] || { cat /tmp/client.log /tmp/server.log; exit 1; }
     sleep 0.2
   done
   wait $server || { echo "server failed"; cat /tmp/server.log; exit 1; }
   cat /tmp/client.log
   echo "PERFTEST-PAIR-OK"'
grep -q PERFTEST-PAIR-OK <<<"$OUT" || fail "perftest pair did not report"
grep -qE '^ *8 +200 ' <<<"$OUT" || fail "no ib_send_lat result row"
ok "rxe0 + ibv_devices + ibv_devinfo + ib_send_lat pair + env + -f"

echo "=== 2. a failing command fails the run and stops the list" >&2
expect 1 $VM -- 'true' 'false' 'echo NOT-REACHED'
! grep -q NOT-REACHED <<<"$OUT" || fail "commands after a failure ran"
ok "'false' -> 1, later commands skipped"

echo "=== 3. the command's own status comes back" >&2
expect 3 $VM -- 'exit 3'
ok "'exit 3' -> 3"

echo "=== 4. no status reported -> 125" >&2
expect 125 $VM -- 'poweroff -f'
ok "VM gone without a status -> 125"

echo "=== 5. hang -> timeout -> 124" >&2
expect 124 env FERRY_VM_TIMEOUT=15 $VM -- 'sleep 600'
ok "hung command -> 124"

echo "=== 6. FERRY_VM_SMP=2 gives 2 vCPUs with rxe0 up" >&2
expect 0 env FERRY_VM_SMP=2 $VM -- 'test "$(nproc)" = 2' 'ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE'
ok "2 vCPUs"

echo "=== softroce selftest passed" >&2
