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
big="F0: slots=1048576 sparse, 1048576 MSG_RING SEND_FD installs/round as 16384 batches of QD=64, new target ring per round, 3 warmup + 10000 measured rounds"
{ echo "$tsv_header"; row "$big" 119.4 ns/install; } > big.tsv
{ echo "$tsv_header"; row "$f0" 119.4 ns/install; } > f0.tsv
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
expect 2 "1M installs x 10,000 rounds (calibrate)" "big.tsv:2:17: shape: row X-1 asks for 20979908608 operations (2097152 per round x 10004 rounds, smoke and warm-up included); the budget is 100000000 (--max-work N raises it)" calibrate --measurements big.tsv --out out/p.toml
expect 2 "1M installs x 10,000 rounds (validate)" "the budget is 100000000 (--max-work N" validate --measurements big.tsv
expect 2 "--max-work below a row" "asks for 155648 operations" validate --measurements f0.tsv --max-work 155647
expect 2 "bad --max-work" "--max-work '0': expected a positive integer" calibrate --measurements f0.tsv --max-work 0
expect 2 "--profile /dev/zero" "/dev/zero: cannot read the profile: is a device" --scenario waitv --profile /dev/zero --output out/r.txt
expect 2 "--profile ./i7-12700KF (a bad file)" "./i7-12700KF:1: syntax" --scenario waitv --profile ./i7-12700KF --output out/r.txt
expect 2 "broken --mapping, unused (--profile none)" "./i7-12700KF:1: syntax" --scenario waitv --profile none --mapping ./i7-12700KF --output out/r.txt
expect 2 "missing --mapping, unused (--measurements none)" "nope.toml: cannot read" --scenario waitv --measurements none --mapping nope.toml --output out/r.txt
expect 2 "broken --measurements, unused (--profile none)" "long_shape.tsv:2:17: shape: field of 30000 bytes" --scenario waitv --profile none --measurements long_shape.tsv --output out/r.txt
expect 2 "--measurements /dev/zero" "cannot read the measurements: is a device" validate --measurements /dev/zero
# The in-memory cap, lowered through its variable: named with the way to raise it.
head -c 20000 /dev/zero | tr '\0' '#' | fold -w 100 > big.toml
SIMCACHE_INPUT_LIMIT=8K expect 2 "--config over SIMCACHE_INPUT_LIMIT" "big.toml: the run configuration is larger than the limit of 8192 bytes; SIMCACHE_INPUT_LIMIT=BYTES raises it" --config big.toml --output out/r.txt
SIMCACHE_LINE_LIMIT=12 expect 2 "a bad SIMCACHE_LINE_LIMIT" "SIMCACHE_LINE_LIMIT='12': expected bytes" --config big.toml --output out/r.txt
# An endless pipe is capped by the line limit, not read forever.
expect 2 "replay an endless pipe" "line longer than the limit of 1048576 bytes" replay <(cat /dev/zero) --output out/r.txt
expect 2 "--output is a directory" "is a directory" --scenario waitv --profile none --output out
expect 2 "bad background trace line" "bad_trace.txt:1: field 'bytes_req': bytes_req='12x'" --scenario rt-arm-loop --background-trace bad_trace.txt --output out/r.txt
expect 2 "missing background trace" "nope.txt: cannot read the background trace: No such file" --scenario rt-arm-loop --background-trace nope.txt --output out/r.txt
expect 2 "background trace, driver without users" "scenario 'waitv' has none" --scenario waitv --background-trace "$src/tests/data/traces/lkml-2019-kmem.txt" --output out/r.txt
# Failed operations: the report is still written (to stdout here), status 3.
expect 3 "failed installs" "63 operations failed" --scenario sparse-fill --set slots=1 --set installs=64 --set rounds=1 --set warmup=0 --profile none
grep -q 'FAILED A: 63 x -ENFILE' stdout.txt || { echo "FAIL: no FAILED line in the table"; fails=$((fails + 1)); }

# run-ops and replay: failed operations exit 3 too (a kmalloc above
# KMALLOC_MAX_SIZE returns NULL); numbers past their range and work past
# its budget are bad input (docs/ops.md, "Ranges and budgets").
printf '0 t kmalloc obj=1 size=8388608\n0 t kfree obj=1\n' > fail.ops
expect 3 "run-ops: failed kmalloc" "1 operations failed (run-ops fail.ops A: 1 x -ENOMEM)" run-ops fail.ops --profile none
printf '[000] ....   1.000000: kmalloc: call_site=x ptr=ffff888100000a00 bytes_req=8388608 bytes_alloc=8388608 gfp_flags=GFP_KERNEL\n' > fail_trace.txt
expect 3 "replay: failed kmalloc" "1 operations failed" replay fail_trace.txt --profile none
printf 'repeat 4294967296\nrepeat 4294967296\n0 t timed_begin\nend\nend\n' > nested.ops
expect 2 "run-ops: nested repeats of 2^64" "asks for 18446744073709551616 operations" run-ops nested.ops --output out/r.txt
printf '0 t kmem_cache_create cache=x size=4294967295\n0 t kmem_cache_alloc obj=1 cache=x\n' > cache.ops
expect 2 "run-ops: cache size" "cache.ops:1:36: field 'size': 4294967295 is outside [1, 4194304]" run-ops cache.ops --output out/r.txt
printf '0 t ring_create ring=0\n0 t nop ring=0 nr=100000000000\n' > nop.ops
expect 2 "run-ops: nop nr" "field 'nr': 100000000000 is outside [0, 4294967295]" run-ops nop.ops --output out/r.txt
expect 2 "replay: --max-events" "more than 1 lines, the replay budget (--max-events N raises it)" replay "$src/tests/data/traces/lkml-2019-kmem.txt" --max-events 1 --output out/r.txt

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
if [ $? != 0 ] || [ -s stderr.txt ] || ! grep -q ' i7-12700KF sha256:' cwd.txt; then
  echo "FAIL: cwd profile file was picked up"; fails=$((fails + 1))
else
  echo "ok: cwd file i7-12700KF ignored"
fi
# --progress: rows simulated on stderr, stdout as without it; nothing on
# stderr without it (not a terminal).
timeout 60 "$bin" validate --measurements f0.tsv > plain.txt 2> plain.err
timeout 60 "$bin" validate --measurements f0.tsv --progress > prog.txt 2> prog.err
if ! cmp -s plain.txt prog.txt || [ -s plain.err ] ||
   [ "$(cat prog.err)" != "$(printf 'simcache: validate: 1/1 rows simulated (%s s)' "$(sed -n 's/.*(\(.*\) s)$/\1/p' prog.err)")" ]; then
  echo "FAIL: --progress: stdout differs or stderr is '$(head -c 200 prog.err)' / '$(head -c 200 plain.err)'"
  fails=$((fails + 1))
else
  echo "ok: --progress: $(cat prog.err)"
fi
# /dev/stdout as --output writes through.
if ! timeout 60 "$bin" --scenario waitv --profile none --format csv --output /dev/stdout | grep -q '^simcache,git_commit,.*,policy,scope,name,value'; then
  echo "FAIL: --output /dev/stdout"; fails=$((fails + 1))
else
  echo "ok: --output /dev/stdout writes through"
fi
# SIGTERM and SIGINT while an emitter streams into its temporary: the
# temporary is removed and no target appears.
printf 'unit op ns\ntask bench memcg=user\nrepeat 50000000\n2 bench kmalloc size=32 obj=1\n2 bench kfree obj=1\nend\n' > long.ops
for sig in TERM INT; do
  rm -rf sig && mkdir sig
  # set -m: a background job of a script would ignore SIGINT otherwise.
  (set -m; "$bin" run-ops long.ops --profile none --emit-trace sig/t.trace > /dev/null 2>&1 &
   pid=$!
   for _ in $(seq 100); do [ -n "$(ls -A sig)" ] && break; sleep 0.05; done
   started=$(ls -A sig | wc -l)
   kill -s "$sig" "$pid"; wait "$pid"; st=$?
   if [ "$started" != 1 ] || [ -n "$(ls -A sig)" ] || [ "$st" -lt 128 ]; then
     echo "FAIL: SIG$sig: status $st, temporaries seen $started, left: $(ls -A sig)"; exit 1
   fi
   echo "ok: SIG$sig removes the temporary (status $st)") || fails=$((fails + 1))
done
# replay --emit-ops reads a piped trace once, like the replay itself, and
# keeps the replay's own budget.
lk="$src/tests/data/traces/lkml-2019-kmem.txt"
"$bin" replay "$lk" --emit-ops fromfile.ops 2>/dev/null
"$bin" replay <(cat "$lk") --emit-ops frompipe.ops 2>/dev/null
if [ "$(tail -n +2 fromfile.ops)" != "$(tail -n +2 frompipe.ops)" ] || [ "$(grep -c kmalloc frompipe.ops)" = 0 ]; then
  echo "FAIL: replay --emit-ops from a pipe: $(wc -l < frompipe.ops) lines, $(wc -l < fromfile.ops) from the file"
  fails=$((fails + 1))
else
  echo "ok: replay --emit-ops from a pipe: $(wc -l < frompipe.ops) lines as from the file"
fi
expect 2 "replay --emit-ops over --max-events" "the replay budget" replay "$lk" --max-events 3 --emit-ops out/e.ops
# Temp files are ".NAME.XXXXXX" beside the target (and the old "NAME.tmp~").
leftover=$(find . -name '.*.??????' -o -name '*.tmp~' | wc -l)
[ "$leftover" = 0 ] || { echo "FAIL: temp files left: $(ls -A)"; fails=$((fails + 1)); }
echo "$fails failure(s)"
[ "$fails" = 0 ]
