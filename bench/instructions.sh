#!/usr/bin/env bash
# The instruction-count gate (CI stage "instructions"): counts the
# instructions of three whole simcache processes under valgrind's
# cachegrind (machines of this kind have no PMU, and an instruction count
# does not move with the machine's load), and fails when one grows more
# than 3 % over the figure recorded in bench/instructions.tsv.
#   bench/instructions.sh BUILD_DIR            check
#   bench/instructions.sh BUILD_DIR --update   record the current counts
# A change that moves a count on purpose runs --update and says why in
# the TSV's reason column. The figures hold for the default tree
# (RelWithDebInfo, LTO off, jemalloc) built by Debian 12's g++.
set -euo pipefail
build=$1
mode=${2:-check}
top=$(cd "$(dirname "$0")/.." && pwd)
tsv=$top/bench/instructions.tsv
bin=$build/simcache
command -v valgrind >/dev/null || { echo "instructions: valgrind is not installed (scripts/bootstrap installs it)" >&2; exit 2; }
[ -x "$bin" ] || { echo "instructions: $bin: not built" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/simcache_instr.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A kmem trace of 200,000 lines: 4,096 kmalloc-256 objects allocated and
# freed in turn, on four CPUs.
awk 'BEGIN { for (i = 0; i < 200000; i++) { slot = i % 4096; ptr = sprintf("ffff8881%08x", slot * 256)
  if (int(i / 4096) % 2 == 0)
    printf "            bash-1337    [%03d] ..... 4242.%06d: kmalloc: call_site=getname_flags+0x4c/0x1d0 ptr=%s bytes_req=%d bytes_alloc=256 gfp_flags=GFP_KERNEL node=-1 accounted=false\n", slot % 4, i % 1000000, ptr, 200 + slot % 56
  else
    printf "            bash-1337    [%03d] ..... 4242.%06d: kfree: call_site=putname+0x47/0x50 ptr=%s\n", slot % 4, i % 1000000, ptr } }' > "$work/trace.txt"
# name, then the command line (after the binary)
cases=(
  "sparse4096|--scenario sparse4096 --jobs 1 --output /dev/null"
  "arm-fail|--scenario arm-fail --jobs 1 --format json --output /dev/null"
  "replay|replay $work/trace.txt --jobs 1 --output /dev/null"
)
count() {
  # OpenSSL picks its SHA-256 code by the CPU's features; with them masked
  # (OPENSSL_ia32cap) the count of the input hashes does not depend on the
  # host's CPU model.
  # shellcheck disable=SC2086
  OPENSSL_ia32cap=0:0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$bin" $1 2>&1 >/dev/null | awk '/I +refs:/ { gsub(",", "", $NF); print $NF }'
}
fails=0
declare -A now
for c in "${cases[@]}"; do
  name=${c%%|*}
  n=$(count "${c#*|}")
  [ -n "$n" ] || { echo "instructions: $name: no count from valgrind" >&2; exit 2; }
  now[$name]=$n
done
if [ "$mode" = --update ]; then
  {
    printf 'case\tinstructions\treason\n'
    for c in "${cases[@]}"; do
      name=${c%%|*}
      old_reason=$(awk -F'\t' -v n="$name" '$1 == n { print $3 }' "$tsv" 2>/dev/null || true)
      printf '%s\t%s\t%s\n' "$name" "${now[$name]}" "${SIMCACHE_INSTR_REASON:-$old_reason}"
    done
  } > "$work/new.tsv"
  mv "$work/new.tsv" "$tsv"
  echo "instructions: recorded in $tsv"
  cat "$tsv"
  exit 0
fi
for c in "${cases[@]}"; do
  name=${c%%|*}
  rec=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$tsv")
  [ -n "$rec" ] || { echo "instructions: $name: no recorded figure in $tsv" >&2; exit 2; }
  n=${now[$name]}
  pct=$(awk -v a="$n" -v b="$rec" 'BEGIN { printf "%+.2f", (a - b) * 100 / b }')
  if awk -v a="$n" -v b="$rec" 'BEGIN { exit !(a > b * 1.03) }'; then
    echo "FAIL: $name: $n instructions, $pct % over the recorded $rec (the gate is +3 %)"
    fails=$((fails + 1))
  else
    echo "ok: $name: $n instructions ($pct % against the recorded $rec)"
  fi
done
[ "$fails" = 0 ] || echo "instructions: a change that costs this on purpose runs bench/instructions.sh BUILD --update with SIMCACHE_INSTR_REASON=\"why\""
[ "$fails" = 0 ]
