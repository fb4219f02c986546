#!/usr/bin/env bash
# ci/softroce.sh — run commands inside a throw-away QEMU VM that has a real
# Soft-RoCE device (rxe0: rdma_rxe over a dummy netdev), and return their status.
#
# Usage: ci/softroce.sh [-f HOST_PATH]... [--] 'cmd 1' ['cmd 2' ...]
#   -f PATH  copy file or directory PATH into the VM at the same absolute path,
#            with the shared libraries (ldd) of every executable in it.
#   Each command is one busybox-ash command line; the list runs in order under
#   `set -e`, in $PWD if that path exists in the VM (else /).
#   Always in the image: busybox (ash, taskset, timeout, ...), nice, chrt, rdma,
#   ibv_* tools, perftest (ib_*), libibverbs, librdmacm, the rxe provider and
#   /etc/libibverbs.d/rxe.driver; modules rdma_rxe, ib_uverbs, rdma_ucm, dummy.
#   Keep -f payloads small (binaries, not a whole target dir): they live in RAM.
#   Inside the VM: RDMA_DEV=rxe0, FERRY_VM_IP (dummy0's address, 10.99.0.1), and
#   every host variable named FERRY_* or RUST_* (except the FERRY_VM_* knobs).
#
# Exit status: the command list's status; 124 = VM timed out; 125 = the VM ended
# without reporting a status (did not boot, kernel panic, ...); 2 = usage/setup.
# The VM's console (command output) goes to stdout, harness messages to stderr.
#
# Env knobs (host side):
#   FERRY_VM_DIR      cache/work dir (default ${CARGO_TARGET_DIR:-target}/softroce,
#                     relative to the repository root)
#   FERRY_VM_MEM      guest memory in MiB (default 1024)
#   FERRY_VM_SMP      vCPUs (default 1)
#   FERRY_VM_TIMEOUT  seconds before the VM is killed (default 600)
#   FERRY_VM_LOG      also write the serial console to this file
#   FERRY_VM_ACCEL    kvm|tcg (default: kvm only if /dev/kvm is writable and the
#                     CPU advertises vmx/svm)
#   FERRY_VM_KPKG     Debian kernel package (default: what linux-image-amd64 depends on)
#
# Installs missing host packages with apt-get (sudo if not root). The kernel
# package is only downloaded and unpacked into the cache, never installed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HERE=$ROOT/ci
VM_IP=10.99.0.1
# shellcheck source=ci/lib/packages.sh
. "$HERE/lib/packages.sh"
ci_fail_trap ci/softroce.sh

usage() { sed -n '2,19p' "$0" >&2; exit 2; }
log() { echo "[softroce $(date +%T)] $*" >&2; }
die() { log "error: $*"; exit 2; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
since() { local d=$(( $(now_ms) - $1 )); printf '%d.%03d' $((d / 1000)) $((d % 1000)); }

FILES=()
while getopts "f:h" opt; do
  case $opt in
    # realpath -s: absolute, but symlinks kept, so the VM has the path the caller uses.
    f) [ -e "$OPTARG" ] || die "-f $OPTARG: no such file"; FILES+=("$(realpath -s "$OPTARG")");;
    *) usage;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage

T0=$(now_ms)
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$ROOT/$target;; esac
DIR=${FERRY_VM_DIR:-$target/softroce}
MEM=${FERRY_VM_MEM:-1024}
SMP=${FERRY_VM_SMP:-1}
TIMEOUT=${FERRY_VM_TIMEOUT:-600}
mkdir -p "$DIR"
DIR=$(realpath "$DIR")

# Preparation (packages, kernel, base image) is serialized: several runs may share the cache.
exec 9>"$DIR/.lock"
flock -w 900 9 || die "could not lock $DIR/.lock"

# ---- 1. host packages --------------------------------------------------------
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
apt_get() { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
LIBDIR=/usr/lib/x86_64-linux-gnu
# busybox-static: it is what goes into the image (PID 1 needs no libraries).
# ibverbs-providers: the rxe provider (librxe-rdmav*.so + /etc/libibverbs.d/rxe.driver).
ci_packages_ensure qemu-system-x86 busybox-static iproute2 ibverbs-utils perftest \
  ibverbs-providers rdma-core xz-utils || die "could not install the VM's host packages (see above)"
ldd /bin/busybox >/dev/null 2>&1 && die "/bin/busybox is dynamically linked (need busybox-static)"

# ---- 2. kernel: download, unpack into the cache, keep vmlinux + the module subset ----
# The kernel the linux-image-amd64 metapackage points at. apt-cache takes ~1 s, so
# the answer is cached until the package lists change.
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
KPKG=${FERRY_VM_KPKG:-}
if [ -z "$KPKG" ]; then
  if [ -s "$DIR/kpkg" ] && [ "$DIR/kpkg" -nt /var/lib/apt/lists ]; then
    KPKG=$(cat "$DIR/kpkg")
  else
    KPKG=$(kernel_pkg)
    [ -n "$KPKG" ] || { apt_get update -qq >&2; KPKG=$(kernel_pkg); }
    [ -z "$KPKG" ] || echo "$KPKG" > "$DIR/kpkg"
  fi
fi
[ -n "$KPKG" ] || die "cannot determine the kernel package (set FERRY_VM_KPKG)"
K=${KPKG#linux-image-}
KDIR=$DIR/kernel-$K
# crc32_generic: rdma_rxe needs the "crc32" crypto shash (ICRC) but does not declare
# the dependency; without it: "failed to init crc32 algorithm err:-2".
# rdma_ucm: the rdma_cm user interface (librdmacm, perftest -R).
MODULES="crc32_generic rdma_rxe ib_uverbs rdma_ucm dummy"
if [ "$(cat "$KDIR/stamp" 2>/dev/null)" != "$MODULES" ]; then
  log "preparing kernel $KPKG (one-time)"
  mkdir -p "$KDIR/deb"
  if ! compgen -G "$KDIR/deb/${KPKG}_*.deb" >/dev/null; then
    # Sandbox user root: the cache dir need not be readable by apt's _apt user.
    download() { (cd "$KDIR/deb" && apt-get -o APT::Sandbox::User=root download "$KPKG" >&2); }
    download || { apt_get update -qq >&2 && download; }
  fi
  X=$KDIR/unpacked; rm -rf "$X" "$KDIR/modules" "$KDIR/stamp"
  dpkg -x "$KDIR"/deb/"$KPKG"_*.deb "$X"
  MD=$X/lib/modules/$K
  /bin/busybox depmod -b "$X" "$K"   # the .deb ships no modules.dep

  # Debian's vmlinuz is an xz-compressed bzImage. QEMU can boot the uncompressed ELF
  # directly through its PVH entry point (CONFIG_PVH=y): no real-mode setup and no
  # in-guest decompression, which saves seconds under TCG.
  bz=$X/boot/vmlinuz-$K
  off=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$bz" | head -1 | cut -d: -f1)
  tail -c +$((off + 1)) "$bz" | xz -dc 2>/dev/null > "$KDIR/vmlinux.tmp" || true  # trailing data after the stream
  if [ "$(head -c4 "$KDIR/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] \
     && grep -qx 'CONFIG_PVH=y' "$X/boot/config-$K"; then
    mv "$KDIR/vmlinux.tmp" "$KDIR/vmlinux"
  else
    log "no PVH-capable vmlinux; booting the bzImage (slower)"
    rm -f "$KDIR/vmlinux.tmp"; cp "$bz" "$KDIR/vmlinux"
  fi

  # Module closure, dependencies first (post-order over modules.dep).
  M=$KDIR/modules/lib/modules/$K
  mkdir -p "$M"
  declare -A seen=()
  order=()
  add_mod() {
    local line path dep out
    line=$(grep -E "(^|/)${1//_/[_-]}\.ko(\.[a-z]+)?:" "$MD/modules.dep" | head -1) \
      || { log "module $1 not in modules.dep (built in?)"; return 0; }
    path=${line%%:*}
    [ -z "${seen[$path]:-}" ] || return 0
    seen[$path]=1
    for dep in ${line#*:}; do add_mod "$(basename "${dep%%.ko*}")"; done
    out=${path%.ko*}.ko   # store uncompressed: busybox insmod need not support .ko.xz/.zst
    mkdir -p "$M/$(dirname "$path")"
    case $path in
      *.ko) cp "$MD/$path" "$M/$out";;
      *.ko.xz) xz -dc "$MD/$path" > "$M/$out";;
      *.ko.zst) zstd -qdc "$MD/$path" > "$M/$out";;
      *) die "unknown module format: $path";;
    esac
    order+=("$out")
  }
  for m in $MODULES; do add_mod "$m"; done
  printf '%s\n' "${order[@]}" > "$M/load-order"
  /bin/busybox depmod -b "$KDIR/modules" "$K"   # so modprobe/modinfo also work inside the VM
  rm -rf "$X"
  echo "$MODULES" > "$KDIR/stamp"
fi

# ---- 3. base initramfs: busybox, RDMA user space, modules, init (cached) ----------
pkgvers=$(dpkg-query -W -f='${Package}=${Version} ' busybox-static libibverbs1 ibverbs-providers \
            librdmacm1 perftest ibverbs-utils iproute2 2>/dev/null || true)
# Named by a hash of what goes into it, so that different checkouts of this script
# sharing one cache dir do not rebuild it in turn; unused ones go after a week.
STAMP=$(cat "$0" "$HERE/vm/init" <(echo "$K $pkgvers") | sha256sum | cut -c1-16)
BASE=$DIR/base-$K-$STAMP.cpio
find "$DIR" -maxdepth 1 -name 'base-*.cpio' ! -newermt '7 days ago' -delete 2>/dev/null || true
if [ ! -s "$BASE" ]; then
  log "building the base initramfs"
  R=$DIR/rootfs
  rm -rf "$R"
  mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,root,test}
  cp /bin/busybox "$R/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$R/bin/$a"; done
  cp -a "$KDIR/modules/lib" "$R/"
  install -m 755 "$HERE/vm/init" "$R/init"
  for f in $(command -v rdma ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong \
               ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw \
               ib_atomic_lat ib_atomic_bw nice chrt 2>/dev/null) \
           "$LIBDIR"/libibverbs/librxe-rdmav*.so "$LIBDIR"/librdmacm.so.1 "$LIBDIR"/libibverbs.so.1 \
           "$LIBDIR"/libgcc_s.so.1; do   # libgcc_s: Rust's std unwinder loads it
    for x in "$f" $(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' || true); do
      [ -e "$R$x" ] || { mkdir -p "$R$(dirname "$x")"; cp -L "$x" "$R$x"; }
    done
  done
  mkdir -p "$R/etc/libibverbs.d"
  cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
  (cd "$R" && find . -mindepth 1 | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null > "$BASE.tmp")
  mv "$BASE.tmp" "$BASE"
  rm -rf "$R"
fi
exec 9>&-   # release the preparation lock

# ---- 4. per-run payload: commands, environment, -f files and their libraries ----
# Leftovers of runs killed hard (SIGKILL skips the trap) go after a day.
find "$DIR" -maxdepth 1 -name 'run.*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
W=$(mktemp -d "$DIR/run.XXXXXX")
trap 'rm -rf "$W"' EXIT
# timeout(1) puts QEMU in its own process group, out of reach of a terminal's
# Ctrl-C: stop it explicitly when we are interrupted.
# shellcheck disable=SC2317  # called from the traps
stop_vm() { if [ -s "$W/timeout.pid" ]; then kill -TERM "$(cat "$W/timeout.pid")" 2>/dev/null || true; fi; }
trap 'stop_vm; exit 130' INT
trap 'stop_vm; exit 143' TERM
P=$W/payload
mkdir -p "$P/test"
TOKEN=$(head -c8 /dev/urandom | od -An -tx1 | tr -d ' \n')
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }   # single-quote for ash
printf '%s\n' "$@" > "$P/test/cmds"
{
  echo "FERRY_VM_TOKEN=$TOKEN"
  echo "FERRY_VM_CWD=$(sq "$PWD")"
  echo "export FERRY_VM_IP=$VM_IP RDMA_DEV=rxe0"
  for v in $(compgen -e); do
    case $v in
      FERRY_VM_*) ;;   # host-side knobs of this script
      FERRY_*|RUST_*) echo "export $v=$(sq "${!v}")";;
    esac
  done
} > "$P/test/env"
copy_in() {
  local x
  for x in "$@"; do
    [ -e "$P$x" ] || { mkdir -p "$P$(dirname "$x")"; cp -aL "$x" "$P$x"; }
  done
}
for f in ${FILES[@]+"${FILES[@]}"}; do
  copy_in "$f"
  while IFS= read -r e; do
    # shellcheck disable=SC2046  # ldd paths contain no spaces
    copy_in $(ldd "$e" 2>/dev/null | grep -oE '/[^ ]+' || true)
  done < <(find "$f" -type f -perm -u+x)
done
(cd "$P" && find . -mindepth 1 | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null > "$W/payload.cpio")
# Concatenated newc archives: the kernel unpacks both, later entries win.
touch "$BASE"   # in use: keeps the weekly clean-up away
cat "$BASE" "$W/payload.cpio" > "$W/initrd"

# ---- 5. boot -----------------------------------------------------------------
ACCEL=${FERRY_VM_ACCEL:-}
if [ -z "$ACCEL" ]; then
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case $ACCEL in
  kvm) CPU=(-accel kvm -cpu host);;
  tcg) CPU=(-accel "tcg,thread=multi" -cpu max);;
  *) die "FERRY_VM_ACCEL must be kvm or tcg";;
esac
# qboot is a minimal firmware: faster than SeaBIOS under TCG and prints nothing.
BIOS=()
[ -f /usr/share/qemu/qboot.rom ] && BIOS=(-bios /usr/share/qemu/qboot.rom)
LOG=${FERRY_VM_LOG:-$W/serial.log}
log "booting $K ($ACCEL, $SMP vCPU, ${MEM} MiB); preparation took $(since "$T0") s"
T1=$(now_ms)
set +e
{
  timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${CPU[@]}" -m "$MEM" -smp "$SMP" \
      -nographic -no-reboot -nodefaults -serial stdio "${BIOS[@]}" \
      -kernel "$KDIR/vmlinux" -initrd "$W/initrd" \
      -append "console=ttyS0 panic=-1 oops=panic quiet" </dev/null 2>&1 &
  echo $! > "$W/timeout.pid"
  wait $!
  { echo $? > "$W/qemu.rc"; } 2>/dev/null   # $W is gone if we were interrupted
} | sed -u 's/\r$//' | tee "$LOG" | grep --line-buffered -vE "^FERRY-VM-EXIT-$TOKEN=|^\[ *[0-9.]+\] reboot: Power down$" &
# (sed -u, tee and grep --line-buffered: the console streams live, line by line.)
wait $!   # (in the background so that the INT/TERM traps run at once)
qrc=$(cat "$W/qemu.rc" 2>/dev/null || echo "?")
set -e
rc=$(sed -n "s/^FERRY-VM-EXIT-$TOKEN=\([0-9]*\)\$/\1/p" "$LOG" | tail -1)
log "VM wall time (boot + run): $(since "$T1") s; total with preparation: $(since "$T0") s"
if [ -z "$rc" ]; then
  if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then log "VM timed out after $TIMEOUT s"; exit 124; fi
  log "VM ended without reporting a status (qemu status $qrc)"
  exit 125
fi
[ "$rc" = 0 ] || log "commands failed with status $rc"
exit "$rc"
