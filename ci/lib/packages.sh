# ci/lib/packages.sh — sourced by every ci/*.sh that needs Debian packages.
#
#   ci_packages_ensure PKG...   install whichever of PKG... is not installed
#   ci_package_installed PKG    status 0 if PKG is installed, 1 otherwise
#   ci_fail_trap NAME           on any failing command, print NAME, the line
#                               and the command before set -e ends the script
#
# Safe under `set -euo pipefail`: dpkg-query exits 1 for a package it has never
# heard of (QEMU, busybox-static or perftest on a fresh machine), so no check
# here ever lets that status reach a pipeline or a command substitution.
# ci/packages-selftest.sh proves it on a name that does not exist.

# Status 0 if the package is installed ("ii"), 1 if it is absent, unknown to
# dpkg, or half-installed.
ci_package_installed() {
  local status
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) || return 1
  [[ $status == ii* ]]
}

# Installs the packages among "$@" that are not installed, with apt-get (sudo
# when not root). Refreshes the package lists only when one of them has no
# install candidate in the lists this machine has. Returns non-zero, having
# said why, if apt-get is missing or fails, or a package is still absent after.
ci_packages_ensure() {
  local need=() p sudo=""
  for p in "$@"; do
    ci_package_installed "$p" || need+=("$p")
  done
  [ ${#need[@]} -gt 0 ] || return 0
  echo "[ci] installing Debian packages: ${need[*]}" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[ci] error: packages ${need[*]} are missing and this machine has no apt-get; install them by hand" >&2
    return 1
  fi
  [ "$(id -u)" = 0 ] || sudo=sudo
  local refresh=0
  for p in "${need[@]}"; do
    if ! { apt-cache policy "$p" 2>/dev/null || true; } | grep -q 'Candidate: [0-9]'; then
      refresh=1
      break
    fi
  done
  if [ $refresh = 1 ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
      || { echo "[ci] error: apt-get update failed (network or sources.list?)" >&2; return 1; }
  fi
  local install=($sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}")
  if ! "${install[@]}" >&2; then
    # A dpkg run interrupted earlier (a killed job, a full disk) blocks every
    # install until it is finished; finish it and try once more.
    echo "[ci] apt-get install failed; running dpkg --configure -a and retrying once" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive dpkg --configure -a >&2 || true
    "${install[@]}" >&2 \
      || { echo "[ci] error: apt-get install ${need[*]} failed (see apt's message above)" >&2; return 1; }
  fi
  for p in "${need[@]}"; do
    ci_package_installed "$p" \
      || { echo "[ci] error: $p is still not installed after apt-get install" >&2; return 1; }
  done
}

# A script that fails must say why: with this trap, every command that ends a
# `set -e` script prints the script's name, the line and the command first.
ci_fail_trap() {
  set -E
  # The name is expanded now; the rest when the trap fires.
  # shellcheck disable=SC2064
  trap "echo \"[$1] failed (status \$?) at line \$LINENO: \$BASH_COMMAND\" >&2" ERR
}

# ci_apt_source PKG DIR: downloads Debian source package PKG (its .dsc and
# tarballs, not unpacked) into DIR with `apt-get source --download-only`.
# The deb-src entries are derived from this machine's own apt sources (each
# `deb` line of sources.list and *.list, each *.sources stanza, as deb-src),
# and apt runs on a private copy of its lists under DIR/.apt, so no registry
# is named here and the machine's apt configuration is not touched.
ci_apt_source() {
  local pkg=$1 dir=$2 etc f
  etc="$dir/.apt"
  rm -rf "$etc"
  mkdir -p "$etc/sources.list.d" "$etc/lists/partial" "$etc/cache/archives/partial"
  : >"$etc/sources.list"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -nE 's/^[[:space:]]*deb([[:space:]])/deb-src\1/p' "$f" >>"$etc/sources.list"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$etc/sources.list.d/${f##*/}"
  done
  local apt=(apt-get -o "Dir::Etc::SourceList=$etc/sources.list" -o "Dir::Etc::SourceParts=$etc/sources.list.d"
    -o "Dir::State::Lists=$etc/lists" -o "Dir::Cache=$etc/cache")
  # As root, apt downloads as the _apt user, which may not write to DIR.
  [ "$(id -u)" = 0 ] && apt+=(-o APT::Sandbox::User=root)
  "${apt[@]}" update -qq >&2 || {
    echo "ci_apt_source: apt-get update with deb-src entries derived from /etc/apt failed (see above)" >&2
    return 1
  }
  (cd "$dir" && "${apt[@]}" source --download-only -qq "$pkg" >&2) || {
    echo "ci_apt_source: apt-get source --download-only $pkg failed (see above)" >&2
    return 1
  }
}
