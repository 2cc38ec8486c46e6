#!/usr/bin/env bash
# Runs the built simcache binary on bad inputs (ctest: cli_binary): each
# case must exit with the expected status, print exactly one line on
# stderr, and leave no output file (nor temp file) behind.
# Usage: cli_binary.sh SIMCACHE_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/simcache_cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
tsv_header=$'id\tworkload\tshape\tvariant\tmetric\tvalue\tunit\tkind\tsource\tnote'
row() { printf '%s\n' "X-1"$'\t'"sparse-fill"$'\t'"$1"$'\t'"U unpatched v6.18-rc4"$'\t'"mean"$'\t'"$2"$'\t'"$3"$'\t'"timing"$'\t'"src"$'\t'; }
{ echo "$tsv_header"; row "$(head -c 30000 /dev/zero | tr '\0' x)" 119.4 ns/install; } > long_shape.tsv
f0="F0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 batches of QD=64, new target ring per round, 3 warmup + 15 measured rounds"
{ echo "$tsv_header"; row "$f0" 1e308 ms/install; } > huge.tsv
sed "0,/shape = '/s//shape = 'words.**?(/" "$src/data/profiles/mapping.toml" > typo.toml
echo 'not toml [' > i7-12700KF
printf '[000] ....   1.000000: kmalloc: call_site=x ptr=ffff888100000a00 bytes_req=12x bytes_alloc=16\n' > bad_trace.txt
echo precious > victim
ln -s victim link.out

# expect STATUS DESCRIPTION FRAGMENT ARGS...: runs in a fresh out/
# directory; stderr must be one line containing FRAGMENT.
expect() {
  local want=$1 what=$2 frag=$3
  shift 3
  rm -rf out && mkdir out
  timeout 60 "$bin" "$@" > stdout.txt 2> stderr.txt
  local got=$? nl
  nl=$(wc -l < stderr.txt)
  local left
  left=$(ls -A out | wc -l)
  if [ "$got" != "$want" ] || [ "$nl" != 1 ] || [ "$left" != 0 ] || ! grep -q '^simcache: ' stderr.txt ||
     ! grep -qF -- "$frag" stderr.txt; then
    echo "FAIL: $what: status $got (want $want), $nl stderr lines, $left files left in out/"
    sed 's/^/  stderr: /' stderr.txt | head -5
    fails=$((fails + 1))
  else
    echo "ok: $what: $(head -c 160 stderr.txt)"
  fi
}

expect 2 "unknown flag" "unknown flag '--bogus'" --bogus --output out/r.txt
expect 2 "stray argument" "unexpected argument" stray --output out/r.txt
expect 2 "missing --scenario" "--scenario is required" --output out/r.txt
expect 2 "unknown scenario with a newline" "no\\nsuch" --scenario $'no\nsuch' --output out/r.txt
expect 2 "bad --set" "expected key=value" --scenario waitv --set nokey --output out/r.txt
expect 2 "bad --fail" "probability must be" --scenario waitv --fail slab=7 --output out/r.txt
expect 2 "bad --seed" "--seed 'x'" --scenario waitv --seed x --output out/r.txt
expect 2 "30 KB shape field (validate)" "long_shape.tsv:2:17: shape: field of 30000 bytes" validate --measurements long_shape.tsv
expect 2 "30 KB shape field (calibrate)" "long_shape.tsv:2:17: shape: field of 30000 bytes" calibrate --measurements long_shape.tsv --out out/p.toml
expect 2 "30 KB shape field (--measurements)" "long_shape.tsv:2:17: shape: field of 30000 bytes" --scenario waitv --measurements long_shape.tsv --output out/r.txt
expect 2 "mapping pattern typo" "shape[0].shape: bad regular expression" validate --measurements "$src/data/measurements/calibration.tsv" --mapping typo.toml
expect 2 "1e308 ms" "value: 1e+308 ms/install is more than" calibrate --measurements huge.tsv --out out/p.toml
expect 2 "--profile /dev/zero" "larger than the limit of 1048576 bytes" --scenario waitv --profile /dev/zero --output out/r.txt
expect 2 "--profile ./i7-12700KF (a bad file)" "./i7-12700KF:1: syntax" --scenario waitv --profile ./i7-12700KF --output out/r.txt
expect 2 "broken --mapping, unused (--profile none)" "./i7-12700KF:1: syntax" --scenario waitv --profile none --mapping ./i7-12700KF --output out/r.txt
expect 2 "missing --mapping, unused (--measurements none)" "nope.toml: cannot read" --scenario waitv --measurements none --mapping nope.toml --output out/r.txt
expect 2 "--measurements /dev/zero" "larger than the limit of 16777216 bytes" validate --measurements /dev/zero
expect 2 "--output is a directory" "not a regular file" --scenario waitv --profile none --output out
expect 2 "bad background trace line" "bad_trace.txt:1: field 'bytes_req': bytes_req='12x'" --scenario rt-arm-loop --background-trace bad_trace.txt --output out/r.txt
expect 2 "missing background trace" "nope.txt: cannot open the background trace" --scenario rt-arm-loop --background-trace nope.txt --output out/r.txt
expect 2 "background trace, driver without users" "scenario 'waitv' has none" --scenario waitv --background-trace "$src/tests/data/traces/lkml-2019-kmem.txt" --output out/r.txt
# Failed operations: the report is still written (to stdout here), status 3.
expect 3 "failed installs" "63 operations failed" --scenario sparse-fill --set slots=1 --set installs=64 --set rounds=1 --set warmup=0 --profile none
grep -q 'FAILED A: 63 x -ENFILE' stdout.txt || { echo "FAIL: no FAILED line in the table"; fails=$((fails + 1)); }

# --output onto a planted symlink: refused, target kept.
timeout 60 "$bin" --scenario waitv --profile none --output link.out > /dev/null 2> stderr.txt
st=$?
if [ "$st" != 2 ] || [ "$(cat victim)" != precious ] || [ ! -L link.out ] || [ "$(wc -l < stderr.txt)" != 1 ]; then
  echo "FAIL: symlink output: status $st, victim '$(cat victim)'"; fails=$((fails + 1))
else
  echo "ok: symlink output refused: $(cat stderr.txt)"
fi
# A file named like the default profile in the cwd is not used.
timeout 60 "$bin" --scenario waitv > cwd.txt 2> stderr.txt
if [ $? != 0 ] || [ -s stderr.txt ] || ! grep -q 'profile i7-12700KF' cwd.txt; then
  echo "FAIL: cwd profile file was picked up"; fails=$((fails + 1))
else
  echo "ok: cwd file i7-12700KF ignored"
fi
# /dev/stdout as --output writes through.
if ! timeout 60 "$bin" --scenario waitv --profile none --format csv --output /dev/stdout | grep -q '^simcache,git_commit,.*,policy,scope,name,value'; then
  echo "FAIL: --output /dev/stdout"; fails=$((fails + 1))
else
  echo "ok: --output /dev/stdout writes through"
fi
# Temp files are ".NAME.XXXXXX" beside the target (and the old "NAME.tmp~").
leftover=$(find . -name '.*.??????' -o -name '*.tmp~' | wc -l)
[ "$leftover" = 0 ] || { echo "FAIL: temp files left: $(ls -A)"; fails=$((fails + 1)); }
echo "$fails failure(s)"
[ "$fails" = 0 ]
