#!/usr/bin/env bash
# mpi/abi/coverage.sh — how much of the MPI 5.0 standard ABI's C functions
# ferry's mpi.h declares (each declared function is implemented: the
# shims in mpi/src/ffi/exports/ call a body for every row of
# functions.txt): the count against mpi/abi/standard-functions.txt, then
# the missing names grouped by family. mpi/README.md quotes its output.
set -euo pipefail
cd "$(dirname "$0")"
std=$(grep -v '^#' standard-functions.txt | LC_ALL=C sort -u)
ours=$(grep -oE '^[A-Za-z_][A-Za-z0-9_ *]* \*?(MPI_[A-Za-z0-9_]+)\(' ../include/mpi.h \
  | grep -oE 'MPI_[A-Za-z0-9_]+\($' | tr -d '(' | LC_ALL=C sort -u)
have=$(LC_ALL=C comm -12 <(echo "$std") <(echo "$ours") | wc -l)
total=$(echo "$std" | wc -l)
echo "ferry declares $have of the $total C functions of the MPI 5.0 ABI ($(( 100 * have / total )) %)"
echo "missing, by family:"
LC_ALL=C comm -23 <(echo "$std") <(echo "$ours") | awk '
  { n = $0
    if (n ~ /^MPI_T_event_|^MPI_T_source_get_info/) f = "MPI_T events"
    else if (n ~ /^MPI_File_|^MPI_Register_datarep/) f = "I/O"
    else if (n ~ /^MPI_Win_|^MPI_(R?[Pp]ut|R?[Gg]et|R?[Aa]ccumulate|Get_accumulate|Rget_accumulate|Fetch_and_op|Compare_and_swap)(_c)?$/) f = "one-sided (RMA)"
    else if (n ~ /^MPI_(Comm_spawn|Comm_accept|Comm_connect|Comm_join|Comm_disconnect|Comm_get_parent|Open_port|Close_port|Publish_name|Unpublish_name|Lookup_name)/) f = "dynamic processes"
    else if (n ~ /^MPI_(Psend_init|Precv_init|Pready|Pready_range|Pready_list|Parrived)/) f = "partitioned communication"
    else f = "other"
    list[f] = list[f] " " n; count[f]++ }
  END { for (f in count) printf "  %s (%d):%s\n", f, count[f], list[f] }' | LC_ALL=C sort
