#!/usr/bin/env bash
# ci/packages-selftest.sh — proves ci/lib/packages.sh safe on a fresh machine:
# a package dpkg has never heard of is "absent" (not a silent exit under
# set -euo pipefail), in a plain test, in a command substitution and in a
# pipeline; an installed one is "present"; and a failing command in a script
# with ci_fail_trap prints where and why.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh

fail() { echo "packages-selftest FAILED: $*" >&2; exit 1; }
bogus=ferry-no-such-package-$$

ci_package_installed "$bogus" && fail "$bogus reported installed"
answer=$(ci_package_installed "$bogus" && echo yes || echo no)
[ "$answer" = no ] || fail "command substitution gave '$answer'"
count=$(for p in "$bogus" dpkg; do ci_package_installed "$p" && echo "$p"; done | wc -l)
[ "$count" = 1 ] || fail "pipeline counted $count installed of ($bogus, dpkg)"
ci_package_installed dpkg || fail "dpkg itself reported absent"
# Nothing to install: returns at once, without apt-get.
ci_packages_ensure dpkg || fail "ci_packages_ensure dpkg failed"

# A failing command under the trap says which script, line and command.
msg=$(bash -c '. ci/lib/packages.sh; set -euo pipefail; ci_fail_trap demo; true; false; echo unreachable' 2>&1) \
  && fail "the demo script did not fail"
[[ $msg == *"[demo] failed (status 1) at line "*": false"* ]] || fail "trap printed '$msg'"

echo "ci/packages-selftest.sh: ok"
