#!/usr/bin/env bash
# ci/fuzz.sh — the fuzz smoke run of ci/test.sh: every decoder of
# peer-supplied bytes (fuzz/fuzz_targets/*) for FERRY_FUZZ_SECONDS each
# (default 10: a smoke run, where these small decoders reach their
# coverage in seconds; the longer runs are `cargo fuzz run` by hand), two
# targets at a time.
# Usage: ci/fuzz.sh   (from any directory; installs cargo-fuzz if missing)
# Exit status: non-zero if a target found a crash or failed to build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# cargo fuzz works on the stable toolchain without a sanitizer (-s none).
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# Every target fuzz/Cargo.toml declares, so a new one cannot be left out.
mapfile -t targets < <(cd fuzz && cargo fuzz list)
[ "${#targets[@]}" -gt 0 ] || { echo "ci/fuzz.sh: cargo fuzz list named no target" >&2; exit 1; }
echo "ci/fuzz.sh: ${#targets[@]} targets, ${FERRY_FUZZ_SECONDS:-10} s each, two at a time: ${targets[*]}"
# Built first, then run two at a time (each target is one process, and
# this machine has 2 cores): every target still gets its full time, in
# half the wall time. A failing target's output names it; any failure
# fails the step.
(cd fuzz && cargo fuzz build -s none)
printf '%s\n' "${targets[@]}" | (cd fuzz && xargs -P 2 -I{} sh -c \
  'cargo fuzz run "$1" -s none -- -max_total_time="$2" -rss_limit_mb=4096 >"$3/fuzz-$1.log" 2>&1 \
     && tail -n 3 "$3/fuzz-$1.log" | sed "s/^/[$1] /" \
     || { echo "fuzz target $1 failed:"; tail -n 40 "$3/fuzz-$1.log"; exit 255; }' \
  _ {} "${FERRY_FUZZ_SECONDS:-10}" "$(mktemp -d /tmp/ferry-fuzz.XXXXXX)")
