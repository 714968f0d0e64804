#!/bin/bash
# Runs "$@" with the system's LLVM, clang, OpenMP, TBB, OpenBLAS and z3
# libraries made invisible: in a private mount namespace (unshare -m, as root;
# unshare -rm otherwise), empty directories are mounted over /usr/lib/llvm-*
# and the OpenBLAS directories, and an empty file over each of those
# libraries' files. Exits 3 when it cannot hide them.
set -euo pipefail
if [ "${NUMFUSE_HIDDEN:-}" != 1 ]; then
  if [ "$(id -u)" = 0 ]; then
    exec env NUMFUSE_HIDDEN=1 unshare -m --propagation private "$0" "$@"
  else
    exec env NUMFUSE_HIDDEN=1 unshare -rm --propagation private "$0" "$@"
  fi
fi
empty_dir=$(mktemp -d)
empty_file=$(mktemp)
hidden=()
for d in /usr/lib/llvm-* /usr/lib/x86_64-linux-gnu/openblas* /usr/lib/x86_64-linux-gnu/blas /usr/lib/x86_64-linux-gnu/lapack; do
  [ -d "$d" ] || continue
  mount --bind "$empty_dir" "$d" || exit 3
  hidden+=("$d/")
done
declare -A seen
for f in /usr/lib/x86_64-linux-gnu/{libLLVM,libclang,libomp,libgomp,libtbb,libopenblas,libblas,libz3}*; do
  [ -e "$f" ] || continue
  real=$(readlink -f "$f")
  [ -f "$real" ] || continue
  [ -n "${seen[$real]:-}" ] && continue
  seen[$real]=1
  mount --bind "$empty_file" "$real" || exit 3
  hidden+=("$real")
done
export NUMFUSE_HIDDEN_PATHS="${hidden[*]}"
exec "$@"
