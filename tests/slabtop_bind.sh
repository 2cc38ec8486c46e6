#!/usr/bin/env bash
# The recipe of docs/output.md "Kernel tools on the model's output", run
# for real (ctest: slabtop_bind): simcache writes /proc/slabinfo, a private
# mount namespace (unshare -m) bind-mounts it over /proc/slabinfo, and
# procps' slabtop -o reads it. Every cache of tests/golden/slabinfo.txt (the
# same command's output) must be a slabtop row with its object counts, and
# slabtop's totals must be their sums. Needs root, unshare, mount and
# slabtop (scripts/bootstrap installs procps): without them it FAILS.
# Usage: slabtop_bind.sh SIMCACHE_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (a mount namespace and a bind mount)"
for t in unshare mount slabtop awk; do
  command -v "$t" >/dev/null || fail "$t is not installed (scripts/bootstrap installs it)"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/simcache_slabtop.XXXXXX")
trap 'rm -rf "$work"' EXIT
golden=$src/tests/golden/slabinfo.txt
"$bin" --scenario sparse-fill --set slots=128 --set installs=128 --set rounds=1 --set warmup=0 \
  --set smoke=0 --profile none --slabinfo "$work/model.slabinfo" > /dev/null ||
  fail "simcache --slabinfo exited $?"
# The bind mount lives and dies with the private namespace of this one
# command; the host's /proc/slabinfo is not touched.
unshare -m --propagation private sh -c \
  "mount --bind '$work/model.slabinfo' /proc/slabinfo && slabtop -o" > "$work/top.txt" 2>&1 ||
  fail "unshare -m + mount --bind + slabtop -o: $(tail -1 "$work/top.txt")"
# Each cache of the golden: name, active_objs, num_objs; slabtop's row:
# OBJS ACTIVE USE SIZE SLABS OBJ/SLAB CACHE-SIZE NAME.
awk -v top="$work/top.txt" '
  BEGIN {
    while ((getline l < top) > 0) {
      n = split(l, f, " ")
      if (l ~ /^ Active \/ Total Objects/) { tot_a = f[8]; tot_t = f[10] }
      if (l ~ /^ Active \/ Total Caches/) caches = f[10]
      if (n == 8 && f[1] ~ /^[0-9]+$/) { row[f[8]] = f[1] " " f[2]; ++rows }
    }
  }
  NR > 2 {
    ++want; sa += $2; st += $3
    if (!($1 in row)) { print "FAIL: slabtop has no row for " $1; bad = 1; next }
    if (row[$1] != $3 " " $2) {
      print "FAIL: " $1 ": slabtop OBJS ACTIVE " row[$1] ", the model " $3 " " $2; bad = 1
    }
  }
  END {
    if (want < 10 || rows != want) { print "FAIL: " rows " slabtop rows, " want " caches"; bad = 1 }
    if (caches != want) { print "FAIL: slabtop counts " caches " caches, the model has " want; bad = 1 }
    if (tot_a != sa || tot_t != st) {
      print "FAIL: slabtop totals " tot_a " / " tot_t ", the model " sa " / " st; bad = 1
    }
    if (!bad) printf "slabtop_bind: %d caches, %d / %d objects as the model wrote them\n", want, sa, st
    exit bad
  }' "$golden" || { cat "$work/top.txt"; exit 1; }
cmp -s "$golden" "$work/model.slabinfo" || fail "the model's slabinfo differs from $golden"
