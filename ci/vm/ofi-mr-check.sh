#!/bin/sh
# ci/vm/ofi-mr-check.sh — inside the Soft-RoCE VM (ci/verbs.sh): fails unless
# ferry-info (asking libfabric with ferry's own hints) lists the provider
# verbs;ofi_rxm with FI_MR_LOCAL among its registration modes. The ofi stage
# that follows exists to run the device's local-registration paths; if the
# provider disappeared or stopped demanding FI_MR_LOCAL, it would test nothing
# of them, so that is a failure, not a skip.
#   sh ci/vm/ofi-mr-check.sh PATH/TO/ferry-info
set -eu
info=$1
line=$("$info" | grep -F 'verbs;ofi_rxm ' | head -1) || true
echo "[ofi] verbs;ofi_rxm as ferry-info sees it: ${line:-<not listed>}"
# mr_mode=local|virt_addr|... -> |local|virt_addr|...|
modes=$(echo "$line" | sed -n 's/.*mr_mode=\([^ ]*\).*/|\1|/p')
case $modes in
  *'|local|'*) echo "[ofi] FI_MR_LOCAL demanded: modes $modes" ;;
  *) echo "ci/vm/ofi-mr-check.sh: verbs;ofi_rxm is not listed or does not demand FI_MR_LOCAL (mr_mode '${modes:-?}'): the ofi stage would test nothing of local registration" >&2
     exit 1 ;;
esac
