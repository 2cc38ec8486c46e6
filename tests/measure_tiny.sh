#!/usr/bin/env bash
# ctest measure_tiny_suite: the kit's tiny suite on this kernel. Checks the
# rows (10 columns, unique ids, kind timing, positive finite values, the
# host in the source column), then that simcache calibrate and validate
# take them unchanged. Exit 77 (skip) only when io_uring is unavailable.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kit=${SIMCACHE_MEASURE_BIN:?} sim=${SIMCACHE_BIN:?}
# The common flags: a bad one is one line naming it, exit 2, before any
# program runs (--rounds 1 once read "1" as the program's name).
expect_flag_error() {
  local want=$1 rc=0 err
  shift
  err=$("$kit" "$@" 2>&1 >/dev/null | head -1) || true
  "$kit" "$@" >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] && [ "$err" = "$want" ] || { echo "kit $*: rc $rc, '$err'"; exit 1; }
}
expect_flag_error "simcache-measure: --rounds: '1' is not a whole number in [2, 10000]" --rounds 1 f0
expect_flag_error "simcache-measure: --rounds: '2.5' is not a whole number in [2, 10000]" --rounds 2.5 f0
expect_flag_error "simcache-measure: --max-cv: 'x' is not a number in [0.001, 100]" --max-cv x f0
expect_flag_error "simcache-measure: unknown flag '--round'" --round 3 f0
expect_flag_error "simcache-measure: --cpu: missing value" --cpu
expect_flag_error "simcache-measure: no program given" --rounds 3
expect_flag_error "simcache-measure: --target-se: 'x' is not a number in [0, 100]" --target-se x f0
expect_flag_error "simcache-measure: --max-rounds: '1' is not a whole number in [2, 100000]" --max-rounds 1 f0
"$kit" probe || exit $?
# The host line carries the task CPU's per-CPU page lists' marks where
# /proc/zoneinfo shows them (6.7 and later: high_min, high_max).
host=$("$kit" host | sed -n 's/^host: //p')
if grep -q "high_min:" /proc/zoneinfo; then
  [[ $host =~ ,\ pcp\ high\ [0-9]+\.\.[0-9]+$ ]] || { echo "host lacks the pcp marks: $host"; exit 1; }
fi
# How the kit reads them, from files in zoneinfo's format: the task CPU's
# node, its Normal zone else DMA32, high_min/high_max else a pre-6.7
# fixed high, no CPU-number prefix match; none where the file shows none.
tcpu=$(echo "$host" | sed -E 's/.*task on CPU ([0-9]+),.*/\1/')
node=$(ls -d /sys/devices/system/cpu/cpu"$tcpu"/node[0-9]* 2>/dev/null | head -1 | sed 's/.*node//')
node=${node:-0}
zi=$(mktemp)
pcp_of() {  # the marks the kit reads from the file $zi
  SIMCACHE_MEASURE_ZONEINFO=$zi "$kit" host | sed -nE 's/^host: .*, pcp high ([0-9.]+)$/\1/p'
}
expect_pcp() {
  local got
  got=$(pcp_of)
  [ "$got" = "$1" ] || { echo "zoneinfo fixture $2: pcp marks '$got', want '$1'"; cat "$zi"; exit 1; }
}
printf '%s\n' "Node $node, zone    DMA32" "  pagesets" "    cpu: $tcpu" "              count: 0" \
  "              high:  0" "              batch: 63" "              high_min: 4171" "              high_max: 48303" \
  "Node $node, zone   Normal" "  pagesets" "    cpu: 1$tcpu" "              high_min: 999" "              high_max: 9999" \
  "    cpu: $tcpu" "              count: 6052" "              high:  12587" "              batch: 63" \
  "              high_min: 6367" "              high_max: 73728" "Node $((node + 1)), zone   Normal" "  pagesets" \
  "    cpu: $tcpu" "              high_min: 1" "              high_max: 2" >"$zi"
expect_pcp 6367..73728 "6.7+, Normal after DMA32, a CPU 1$tcpu, another node"
printf '%s\n' "Node $node, zone   Normal" "  pagesets" "    cpu: $tcpu" "              count: 10" \
  "              high:  378" "              batch: 63" >"$zi"
expect_pcp 378..378 "before 6.7: the fixed high"
printf '%s\n' "Node $node, zone    DMA32" "  pagesets" "    cpu: $tcpu" "              high_min: 4171" \
  "              high_max: 48303" "Node $node, zone   Normal" "  pages free     0" >"$zi"
expect_pcp 4171..48303 "an empty Normal zone: DMA32's"
printf '%s\n' "Node $node, zone   Normal" "  pagesets" "    cpu: $tcpu" "              high_min: 100" \
  "              high_max: 200" >"$zi"
expect_pcp 100..200 "below simcache's floor: recorded as read"
: >"$zi"
expect_pcp "" "no zone shows them"
rm -f "$zi"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# --root-memcg: the root memory cgroup, or exit 77 with one line naming
# the file it could not write; the suite's root row is measured or
# skipped accordingly.
rc=0
"$kit" --root-memcg host >"$dir/root.txt" 2>"$dir/root.err" || rc=$?
case $rc in
  0) grep -qx "memcg /" "$dir/root.txt" && grep -qE ", root memcg(, pcp high [0-9]+\.\.[0-9]+)?$" "$dir/root.txt" \
       || { echo "--root-memcg host: $(cat "$dir/root.txt")"; exit 1; }
     roots=1 ;;
  77) [[ "$(cat "$dir/root.err")" =~ ^simcache-measure:\ --root-memcg:\ cannot\ enter\ the\ root\ memory\ cgroup:\ /sys/fs/cgroup/[^:]*:\ .+$ ]] \
        && [ "$(wc -l <"$dir/root.err")" = 1 ] || { echo "--root-memcg refused: $(cat "$dir/root.err")"; exit 1; }
      roots=0 ;;
  *) echo "--root-memcg host: rc $rc, $(cat "$dir/root.err")"; exit 1 ;;
esac
"$top/scripts/measure" --suite tiny --out "$dir/t.tsv" 2>"$dir/suite.err" || { cat "$dir/suite.err"; exit 1; }
if ((roots)); then
  # ... and its reference back in the memcg the suite's others ran in.
  [ "$(grep $'^T-POLL.ref\t' "$dir/t.tsv" | sed -E 's/.*, ([a-z]*) memcg(, pcp high [0-9.]+)?\t.*/\1/')" = \
    "$(grep $'^T-POLL-root.ref\t' "$dir/t.tsv" | sed -E 's/.*, ([a-z]*) memcg(, pcp high [0-9.]+)?\t.*/\1/')" ] \
    || { echo "the root row's reference ran elsewhere: $(grep '^T-POLL' "$dir/t.tsv" | cut -f1,3)"; exit 1; }
  grep -qE $'^T-POLL-root\tpoll-refill\t.*; host: [0-9]+ CPUs, task on CPU [0-9]+, kworker CPU [0-9]+, root memcg(, pcp high [0-9.]+)?\t' "$dir/t.tsv" \
    || { echo "no root row: $(cut -f1,3 "$dir/t.tsv")"; exit 1; }
else
  grep -qx "scripts/measure: T-POLL-root: skipped" "$dir/suite.err" || { cat "$dir/suite.err"; exit 1; }
fi
rows=$((10 + roots))
# docs/measure.md's paired command, as it is shown (fewer rounds): the
# anchor in this memcg first, then the row in the root's, its note the
# ratio of the two round by round.
if ((roots)); then
  cmd=$(awk '/^simcache-measure --root-memcg --anchor/ { sub(/ \\$/, ""); line = $0; getline; sub(/^ +/, " "); print line $0; exit }' \
        "$top/docs/measure.md")
  [ -n "$cmd" ] || { echo "docs/measure.md: no paired --root-memcg command"; exit 1; }
  eval "\"\$kit\" --rounds 2 --warmup 0 --repeats 1 --target-se 0 --id D ${cmd#simcache-measure }" \
    >"$dir/docpair.tsv" 2>/dev/null || { echo "docs/measure.md's command failed: $cmd"; exit 1; }
  [ "$(cut -f1 "$dir/docpair.tsv" | tr '\n' ' ')" = "D-anchor D " ] \
    && grep -qE "^D-anchor"$'\tpoll-refill\t'".*, $("$kit" host | sed -En 's/^host: .*, ([a-z]*) memcg(, pcp high .*)?$/\1/p') memcg(, pcp high [0-9.]+)?"$'\t' "$dir/docpair.tsv" \
    && grep -qE $'^D\tpoll-refill\t.*, root memcg(, pcp high [0-9.]+)?\t.*paired round by round with anchor D-anchor; ratio to anchor ns round by round: mean ' "$dir/docpair.tsv" \
    || { echo "docs/measure.md's command: $(cut -f1,3 "$dir/docpair.tsv")"; exit 1; }
fi
head -1 "$dir/t.tsv" | grep -qx $'id\tworkload\tshape\tvariant\tmetric\tvalue\tunit\tkind\tsource\tnote' \
  || { echo "bad header"; exit 1; }
# What the host says of Meltdown, as the kit must record it.
meltdown=$(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || true)
[ -n "$meltdown" ] || meltdown=n/a
# The digest of every CPU vulnerability file, as the host record gives it.
vulns=$("$kit" host | sed -n 's/^cpu vulnerabilities //p')
[[ "$vulns" =~ ^([0-9a-f]{16}|n/a)$ ]] || { echo "host: bad vulnerability digest '$vulns'"; exit 1; }
awk -F'\t' -v want="$rows" -v rel="kernel $(uname -r);" -v melt="; meltdown $meltdown; cpu vulnerabilities $vulns;" 'NR == 1 { next }
  NF != 10 { printf "line %d: %d columns\n", NR, NF; bad = 1 }
  seen[$1]++ { printf "line %d: id %s twice\n", NR, $1; bad = 1 }
  $8 != "timing" { printf "line %d: kind %s\n", NR, $8; bad = 1 }
  $6 !~ /^[0-9]+(\.[0-9]+)?$/ || $6 + 0 <= 0 { printf "line %d: value %s\n", NR, $6; bad = 1 }
  $7 !~ /^(ns\/[a-z]+|us)$/ { printf "line %d: unit %s\n", NR, $7; bad = 1 }
  index($9, rel) == 0 { printf "line %d: source lacks %s\n", NR, rel; bad = 1 }
  $9 !~ /; address layout fixed$/ { printf "line %d: source lacks the fixed layout\n", NR; bad = 1 }
  index($9, melt) == 0 { printf "line %d: source lacks %s\n", NR, melt; bad = 1 }
  $10 !~ /stability=(pass|gate-fail); max group CV/ { printf "line %d: note %s\n", NR, $10; bad = 1 }
  $3 !~ /; host: [0-9]+ CPUs, task on CPU [0-9]+, kworker CPU [0-9]+, (root|child) memcg(, pcp high [0-9]+\.\.[0-9]+)?$/ {
    printf "line %d: shape lacks the host\n", NR; bad = 1 }
  $1 !~ /\.ref$/ { rows++ }
  END { if (rows < want) { printf "only %d rows beside the references\n", rows; bad = 1 } exit bad }' "$dir/t.tsv"
# The reference: each program's rows follow its anchor's, ID.ref, the
# scalar control, and name it with their ratio round by round.
awk -F'\t' 'NR == 1 { next }
  $1 ~ /\.ref$/ { if ($10 !~ /; anchor of [^;]*, round by round$/) { printf "line %d: anchor note\n", NR; bad = 1 }
                  ref = $1; next }
  { base = $1; sub(/-(reg|fill)$/, "", base)
    if (ref != base ".ref" || index($10, "; paired round by round with anchor " ref "; ratio to anchor ns round by round: mean ") == 0) {
      printf "line %d: %s not paired with %s\n", NR, $1, base ".ref"; bad = 1 } }
  END { exit bad }' "$dir/t.tsv"
# Whether a fit of 10 tiny rows from this (often loaded, virtual) host is
# credible depends on the host: calibrate exits 0 when it is, 3 with one
# line per cause when it is not (docs/calibration.md, "A fit that refuses
# to lie"); --force writes the profile either way, so validate can read it.
rc=0
"$sim" calibrate --measurements "$dir/t.tsv" --out "$dir/host.toml" --force >"$dir/fit.txt" \
  2>"$dir/fit.err" || rc=$?
grep -q "^the reference: $rows rows measured round by round beside wait-wake .* ($((8 + roots)) readings from " \
  "$dir/fit.txt" || { echo "no reference line: $(head -3 "$dir/fit.txt")"; exit 1; }
case $rc in
  0) grep -q "^the fit is credible" "$dir/fit.txt" || { cat "$dir/fit.txt"; exit 1; } ;;
  3) grep -q "^simcache: calibrate: not credible: " "$dir/fit.err" || { cat "$dir/fit.err"; exit 1; } ;;
  *) cat "$dir/fit.err"; exit 1 ;;
esac
"$sim" validate --profile "$dir/host.toml" --measurements "$dir/t.tsv" >"$dir/val.txt"
grep -q "^summary: $rows rows" "$dir/val.txt" || { cat "$dir/val.txt"; exit 1; }
echo "measure_tiny_suite: $rows rows well formed; calibrate and validate took them"
# The pairs suite (fewer rounds): each shape's child run as the anchor of
# its root run, and validate reads each pair as one effect; without the
# right to enter the root memcg every pair is skipped, and in the root
# memcg already the suite refuses to start.
rc=0
"$top/scripts/measure" --suite pairs --out "$dir/p.tsv" --rounds 2 --warmup 0 --repeats 1 \
  --target-se 0 2>"$dir/pairs.err" || rc=$?
if [ "$("$kit" host | sed -En 's/^host: .*, ([a-z]*) memcg(, pcp high .*)?$/\1/p')" = root ]; then
  [ "$rc" = 2 ] && [ ! -e "$dir/p.tsv" ] \
    && grep -qx "scripts/measure: --suite pairs: this task runs in the root memory cgroup: no child memcg to pair its rows with" "$dir/pairs.err" \
    || { echo "pairs in the root memcg: rc $rc"; cat "$dir/pairs.err"; exit 1; }
elif ((rc != 0)); then
  cat "$dir/pairs.err"; exit 1
elif ((roots)); then
  [ "$(cut -f1 "$dir/p.tsv" | tail -n +2 | tr '\n' ' ')" = \
    "P-POLL-4096 P-POLL-4096-root P-POLL-1024 P-POLL-1024-root P-F0-4096-1024 P-F0-4096-1024-root P-E0-0 P-E0-0-root " ] \
    || { echo "pairs: $(cut -f1 "$dir/p.tsv" | tr '\n' ' ')"; exit 1; }
  awk -F'\t' 'NR == 1 { next }
    $1 !~ /-root$/ { if ($3 !~ /, child memcg(, pcp high [0-9]+\.\.[0-9]+)?$/ || $10 !~ "; anchor of " $1 "-root, round by round$") {
                       printf "pairs line %d: %s is not the child twin\n", NR, $1; bad = 1 }
                     child = $1; next }
    $1 != child "-root" || $3 !~ /, root memcg(, pcp high [0-9]+\.\.[0-9]+)?$/ ||
      index($10, "; paired round by round with anchor " child "; ratio to anchor ns round by round: mean ") == 0 {
      printf "pairs line %d: %s is not its root twin\n", NR, $1; bad = 1 }
    END { exit bad }' "$dir/p.tsv"
  "$sim" validate --profile "$dir/host.toml" --measurements "$dir/p.tsv" >"$dir/pval.txt"
  grep -q "^the twins: 4 rows measured round by round beside the same program in another cgroup, each read as an effect against it" "$dir/pval.txt" \
    && grep -q "^summary: 8 rows, .*; 4 effects, " "$dir/pval.txt" \
    && [ "$(grep -cE '^P-[A-Z0-9-]+-root P-[A-Z0-9-]+ +[-+][0-9.]+% ' "$dir/pval.txt")" = 4 ] \
    || { cat "$dir/pval.txt"; exit 1; }
  # docs/measure.md: the suite's rows and the pairs in one fit, each twin
  # by its ratio to its anchor, the pairs' levels left free (credible or
  # not, as above: --force).
  rc=0
  "$sim" calibrate --measurements "$dir/t.tsv,$dir/p.tsv" --out "$dir/both.toml" --force \
    >"$dir/both.txt" 2>"$dir/both.err" || rc=$?
  { [ "$rc" = 0 ] || [ "$rc" = 3 ]; } \
    && grep -q "^the twins: 4 rows measured round by round beside the same program in another cgroup, each fitted as its ratio to its anchor (the pair's level left free beside rows scaled by a reference)" "$dir/both.txt" \
    && [ "$(grep -cE '^P-[A-Z0-9-]+-root +P-[A-Z0-9-]+ +[-+][0-9.]+% +[-+][0-9.]+% +[-+][0-9.]+%  ' "$dir/both.txt")" = 4 ] \
    && grep -q "^rms relative residual [0-9.]*% over $((rows + 4)) rows and twins' ratios (no anchor's level)" "$dir/both.txt" \
    || { echo "calibrate with the pairs: rc $rc"; cat "$dir/both.txt" "$dir/both.err"; exit 1; }
else
  [ "$(grep -c '^scripts/measure: P-.*-root: skipped$' "$dir/pairs.err")" = 4 ] \
    && [ "$(wc -l <"$dir/p.tsv")" = 1 ] || { cat "$dir/pairs.err"; exit 1; }
fi
# Adaptive rounds: from 10 rounds on, a repeat stops once its standard
# error is under --target-se (or at --budget / --max-rounds); the note
# gives the rounds, median, fastest, standard error and why it stopped,
# and stderr one progress line.
note=$("$kit" --rounds 2 --warmup 0 --repeats 1 --target-se 50 --budget 30 --max-rounds 12 \
       --id A s0 --waits 4 --cycles 2 2>"$dir/err" | awk -F'\t' '{print $10}')
[[ "$note" =~ \ ([0-9]+)\ measured\ rounds\ per\ repeat\;\ median\ [0-9.]+\;\ fastest\ [0-9.]+\;\ se\ [0-9.]+%\;\ stop=(se|max-rounds)$ ]] \
  || { echo "adaptive note: $note"; exit 1; }
n=${BASH_REMATCH[1]}
((n >= 10 && n <= 12)) || { echo "adaptive rounds: $n"; exit 1; }
grep -q "^simcache-measure: A: $n rounds, se [0-9.]*% (stop: ${BASH_REMATCH[2]}), stability " "$dir/err" \
  || { echo "progress: $(cat "$dir/err")"; exit 1; }
# --target-se 0: exactly --rounds.
note=$("$kit" --rounds 3 --warmup 0 --repeats 2 --target-se 0 --id B s0 --waits 4 --cycles 2 2>/dev/null |
       awk -F'\t' '{print $10}')
[[ "$note" == *"0 warmup + 3+3 measured rounds per repeat;"*"stop=fixed+fixed" ]] \
  || { echo "fixed note: $note"; exit 1; }
# The defaults docs/measure.md states are the kit's.
help=$("$kit" --help)
for d in "--target-se PCT (default 1)" "(judged from 10 rounds on)" "--budget SECONDS (default 2 per point)" \
         "--max-rounds N (default 1000)" "--aslr: keep the address layout randomised"; do
  [[ "$help" == *"$d"* ]] || { echo "--help lacks '$d'"; exit 1; }
done
# --anchor: the anchor's rows first, under --anchor-id, each note naming
# the other program; the row decides when a repeat ends and the anchor
# measures as many rounds (fixed and adaptive).
"$kit" --rounds 3 --warmup 0 --repeats 2 --target-se 0 --id R --anchor "s0 --waits 4 --cycles 2" \
  --anchor-id A s0 --waits 8 --cycles 2 >"$dir/pair.tsv" 2>/dev/null
[ "$(cut -f1 "$dir/pair.tsv" | tr '\n' ' ')" = "A R " ] || { echo "pair ids: $(cut -f1 "$dir/pair.tsv")"; exit 1; }
grep -q $'^A\t.*3+3 measured rounds per repeat;.*stop=fixed+fixed; anchor of R, round by round$' "$dir/pair.tsv" \
  || { echo "anchor row: $(head -1 "$dir/pair.tsv")"; exit 1; }
grep -q $'^R\t.*3+3 measured rounds per repeat;.*stop=fixed+fixed; paired round by round with anchor A; ratio to anchor ns round by round: mean [0-9.e+-]*, median [0-9.e+-]*, se [0-9.]*%, max group CV [0-9.]*%, max role drift [0-9.]*%$' \
  "$dir/pair.tsv" || { echo "paired row: $(tail -1 "$dir/pair.tsv")"; exit 1; }
"$kit" --rounds 2 --warmup 0 --repeats 2 --target-se 0.001 --budget 600 --max-rounds 14 --id R \
  --anchor "lifecycle --mode serial --slots 8 --installs 8 --ops 1" s0 --waits 4 --cycles 2 \
  >"$dir/pair2.tsv" 2>/dev/null
[ "$(cut -f1 "$dir/pair2.tsv" | tr '\n' ' ')" = "R-anchor R-anchor-reg R-anchor-fill R " ] \
  || { echo "pair ids: $(cut -f1 "$dir/pair2.tsv")"; exit 1; }
[ "$(grep -c '14+14 measured rounds per repeat;' "$dir/pair2.tsv")" = 4 ] \
  || { echo "paired rounds: $(cut -f10 "$dir/pair2.tsv")"; exit 1; }
expect_flag_error "simcache-measure: --anchor: --slots: '0' is not an integer in [1, 1048576]" --anchor "f0 --slots 0" f0
# A row program that refuses its flags after the fork: its line, exit 2,
# and the anchor (waiting for a decision) goes with it, no hang.
rc=0
timeout 20 "$kit" --anchor "s0 --waits 4 --cycles 2" lifecycle --mode bogus >/dev/null 2>"$dir/err" || rc=$?
[ "$rc" = 2 ] && [ "$(cat "$dir/err")" = "simcache-measure: lifecycle --mode: 'bogus' is not serial, paced or reuse" ] \
  || { echo "row refusing its flags beside an anchor: rc $rc, $(cat "$dir/err")"; exit 1; }
# coldwarm --mode primed: one install, unregister and re-register before
# the timed fill, which its shape says; an unknown mode is refused.
"$kit" --rounds 2 --warmup 0 --repeats 1 --target-se 0 --id P coldwarm --mode primed --slots 8 \
  >"$dir/primed.tsv" 2>/dev/null
grep -q $'^P\tnode-cache\tprimed: new ring, 8-slot sparse table, fill of 8 timed as 1 batches of QD=64 after one install + unregister + re-register on the same ring, 0 warmup + 2 measured rounds; host: ' \
  "$dir/primed.tsv" || { echo "primed row: $(cat "$dir/primed.tsv")"; exit 1; }
expect_flag_error "simcache-measure: coldwarm --mode: 'hot' is not cold, warm or primed" coldwarm --mode hot
# The address layout: fixed unless --aslr (the host record says which).
"$kit" host | grep -qx "address layout fixed" || { echo "host: $("$kit" host)"; exit 1; }
"$kit" host | grep -qxF "meltdown $meltdown" || { echo "host: $("$kit" host)"; exit 1; }
# ... and one line a vulnerability file, its text as the kernel gives it.
vdir=/sys/devices/system/cpu/vulnerabilities
nfiles=0
if [ -d "$vdir" ]; then
  for f in "$vdir"/*; do
    [ -f "$f" ] || continue
    nfiles=$((nfiles + 1))
    "$kit" host | grep -qxF "vulnerability $(basename "$f"): $(head -n1 "$f")" ||
      { echo "host lacks $(basename "$f"): $("$kit" host)"; exit 1; }
  done
fi
[ "$("$kit" host | grep -c '^vulnerability ')" = "$nfiles" ] || { echo "host: vulnerability lines"; exit 1; }
[ "$nfiles" -gt 0 ] || [ "$vulns" = n/a ] || { echo "host: a digest of no files"; exit 1; }
# --aslr keeps the system's randomisation: off system-wide, the layout is
# fixed either way.
want=randomised
[ "$(cat /proc/sys/kernel/randomize_va_space)" = 0 ] && want=fixed
"$kit" --aslr host | grep -qx "address layout $want" || { echo "--aslr host: $("$kit" --aslr host)"; exit 1; }
expect_flag_error "simcache-measure: --anchor-id: 'A' is the row's --id too" --id A --anchor-id A --anchor s0 s0
expect_flag_error "simcache-measure: --anchor: given twice" --anchor s0 --anchor s0 s0
expect_flag_error "simcache-measure: --anchor-id: only with --anchor" --anchor-id X s0
expect_flag_error "simcache-measure: --anchor-id: 'L-reg' and --id 'L' would give two rows one id (a lifecycle writes ID, ID-reg and ID-fill)" \
  --id L --anchor-id L-reg --anchor s0 lifecycle
# Each row's ratio is in its own unit over the anchor's ns: times the
# anchor's median it is near the row's own median (a lifecycle's interval
# in us, its registration in us, its fill per install).
"$kit" --rounds 6 --warmup 1 --repeats 1 --target-se 0 --id L --anchor "s0 --waits 8 --cycles 32" \
  lifecycle --mode serial --slots 64 --installs 64 --ops 2 >"$dir/units.tsv" 2>/dev/null
awk -F'\t' '{ med = $10; sub(/.*; median /, "", med); sub(/;.*/, "", med) }
  NR == 1 { anchor = med; next }
  { r = $10; sub(/.*ratio to anchor ns round by round: mean [^,]*, median /, "", r); sub(/,.*/, "", r)
    q = r * anchor / med; n++
    if (!(q > 0.5 && q < 2)) { printf "%s: ratio %s x anchor %s against median %s\n", $1, r, anchor, med; bad = 1 } }
  END { if (n != 3) { print "rows: " n; bad = 1 } exit bad }' "$dir/units.tsv" \
  || { cat "$dir/units.tsv"; exit 1; }
# A program beside itself: the ratio round by round is about 1 (the
# anchor's round is the one just before the row's).
ratio=$("$kit" --rounds 10 --warmup 1 --repeats 1 --target-se 0 --id R --anchor "s0 --waits 8 --cycles 32" \
        s0 --waits 8 --cycles 32 2>/dev/null | sed -n 's/.*ratio to anchor ns round by round: mean [^,]*, median \([0-9.e+-]*\),.*/\1/p')
awk -v r="$ratio" 'BEGIN { exit !(r > 0.7 && r < 1.4) }' || { echo "self-paired ratio median: '$ratio'"; exit 1; }
expect_flag_error "simcache-measure: --anchor: 'llc' is not a measured program (f0, coldwarm, lifecycle, waitv, s0, e0, poll)" \
  --anchor llc f0
expect_flag_error "simcache-measure: --anchor: only beside a measured program, not llc or slabcount" --anchor f0 llc
expect_flag_error "simcache-measure: --anchor: not with --trace" --anchor f0 --trace "$dir" f0
grep -q "o = {3, 15, 2, 0.02, 0.02, \"HOST\", 0.01, 2, 1000}" "$top/measure/simcache-measure.c" \
  || { echo "the kit's defaults moved: update --help and docs/measure.md"; exit 1; }
echo "measure_tiny: ok"
