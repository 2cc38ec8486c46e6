#!/usr/bin/env bash
# ctest kernel_count_oracle: the running kernel as a count oracle
# (docs/measure.md, "Counts from the live kernel"). Each program below runs
# under `simcache-measure --trace` (a tracing instance of its own; root);
# simcache runs the same shape on the kernel profile the kit picks for
# `uname -r`; per call site and per cache, allocations and frees must be
# equal, or differ by exactly what tests/data/count-oracle.tsv names with
# its reason. Any other difference fails, naming it. Where tracing cannot
# be set up the test fails with the kit's one line naming the cause;
# configure with -DSIMCACHE_KERNEL_ORACLE=OFF to leave it out.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kit=${SIMCACHE_MEASURE_BIN:?} sim=${SIMCACHE_BIN:?}
table=${SIMCACHE_ORACLE_TABLE:-$top/tests/data/count-oracle.tsv}
fail() { echo "kernel_count_oracle: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (tracefs); configure with -DSIMCACHE_KERNEL_ORACLE=OFF to leave this test out"
command -v jq >/dev/null || fail "needs jq (scripts/bootstrap installs it)"
"$kit" probe || fail "io_uring is not available on this kernel (simcache-measure probe)"
profile=$("$kit" host | sed -n 's/^profile //p')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# id <TAB> kit program and flags <TAB> simcache scenario and parameters.
# Kit runs: --warmup 0 --rounds 2 --repeats 1 (two rounds; the model's
# rounds=2 warmup=0). poll: the model's total is the kit's 2 rounds;
# pollov parks 256 polls per ring against a 128-entry CQ ring, so half of
# the cancels' CQEs overflow (io_alloc_ocqe()).
programs() {
  printf '%s\t%s\t%s\n' \
    f0    "f0 --slots 256 --installs 128 --qd 64" \
          "sparse-fill --set slots=256 --set installs=128 --set qd=64 --set rounds=2 --set warmup=0 --set smoke=1" \
    waitv "waitv --vectors 8 --width 8 --cycles 4" \
          "waitv --set vectors=8 --set width=8 --set cycles=4 --set rounds=2 --set warmup=0" \
    s0    "s0 --waits 32 --cycles 4" \
          "wait-wake --set vectors=32 --set cycles=4 --set rounds=2 --set warmup=0" \
    e0    "e0 --waits 32 --fail-permille 390 --cycles 4" \
          "arm-fail --set waits=32 --set fail_permille=390 --set cycles=4 --set rounds=2 --set warmup=0" \
    poll  "poll --qd 256 --burst 128 --recycle 2 --total 512" \
          "poll-refill --set qd=256 --set burst=128 --set recycle=2 --set total=1024" \
    pollov "poll --qd 64 --burst 64 --recycle 4 --total 256" \
          "poll-refill --set qd=64 --set burst=64 --set recycle=4 --set total=512"
}

# The kernel's call sites (the function kmalloc()/kmem_cache_alloc() was
# called from) and the model's call-site scope each one's allocations
# fall in (create_io_worker: the io-wq worker the model makes at a task's
# first punt, rw.h).
sitemap='io_uring_setup io_ring_ctx_alloc
io_alloc_cache_init io_ring_ctx_alloc
percpu_ref_init io_ring_ctx_alloc
io_create_region io_allocate_scq_urings
io_cache_alloc_new io_cache_alloc_new
io_futexv_prep io_futexv_prep
io_alloc_file_tables io_sqe_files_register
io_rsrc_data_alloc io_sqe_files_register
__io_alloc_req_refill io_alloc_req_refill
__io_uring_add_tctx_node io_uring_add_tctx_node
io_uring_alloc_task_context io_uring_alloc_task_context
io_wq_create io_wq_create
create_io_worker create_io_worker
io_alloc_ocqe io_alloc_ocqe'

# The model's quantities: allocations (kmalloc + kmem_cache_alloc) by the
# innermost call-site scope (a scope's own, its callees' subtracted; a
# callee with several callers is split by calls, which must divide), and
# per cache the SLUB alloc/free stats.
model_q() {
  jq -r '.workloads[0].policies[0].total as $t | $t.sites as $s |
    def allocs(n): (n.kmalloc // 0) + (n.kmem_cache_alloc // 0);
    def share(c; x): if (c.callers | length) == 1 then allocs(c.nested)
                     else allocs(c.nested) * c.callers[x] / c.calls end;
    ($s | to_entries | map(select(.value.callers["io_msg_send_fd"] != null or true))) as $e |
    ([$e[] | .key as $x | .value as $v |
      "alloc:site:\($x)\t\(allocs($v.nested) - ([$e[] | select(.value.callers[$x] != null) | share(.value; $x)] | add // 0))"]
     + ["req:io_kiocb\t\($t.req_alloc // 0)", "req:submit\t\($t.sqe_submit // 0)",
        "cqe:post\t\($t.cqe_post // 0)", "cqe:overflow\t\($t.cqe_overflow // 0)"]
     + ["alloc:site:(none)\t\(($t.kmalloc // 0) + ($t.kmem_cache_alloc // 0) - ([$e[] | select(.value.callers["(top)"] != null) | share(.value; "(top)")] | add // 0))"]
     + [$t.slab | to_entries[] |
        "alloc:cache:\(.key)\t\((.value.alloc_fastpath // 0) + (.value.alloc_slowpath // 0))",
        "free:cache:\(.key)\t\((.value.free_fastpath // 0) + (.value.free_slowpath // 0))"])[]'
}

# The kernel's quantities from the kit's counts (io_uring call sites only).
kernel_q() {
  awk -F'\t' -v map="$sitemap" 'BEGIN { n = split(map, l, "\n"); for (i = 1; i <= n; ++i) { split(l[i], f, " "); m[f[1]] = f[2] } }
    # Every submitted SQE takes one io_kiocb from the ring'"'"'s request cache
    # (io_alloc_req()): on 6.18 the cache'"'"'s bulk refills trace no kmem
    # event, so the requests are counted where they are submitted.
    $1 == "uring" && $2 == "io_uring_submit_req" { q["req:io_kiocb"] += $4; q["req:submit"] += $4 }
    # A CQE is posted to the CQ ring (io_uring_complete) or, the ring full,
    # onto its overflow list (io_uring_cqe_overflow); the model'"'"'s cqe_post
    # counts both, cqe_overflow the second.
    $1 == "uring" && ($2 == "io_uring_complete" || $2 == "io_uring_cqe_overflow") { q["cqe:post"] += $4 }
    $1 == "uring" && $2 == "io_uring_cqe_overflow" { q["cqe:overflow"] += $4 }
    NR == 1 || $1 == "summary" || $1 == "uring" || $1 == "free" { next }
    { io = $2 ~ /^(io_|__io_|create_io_)/ || ($2 in m) }
    !io { next }
    !($2 in m) { q["unmapped:" $2 ":" $3 ":" $1] += $4; next }
    $1 == "alloc" { q["alloc:site:" m[$2]] += $4; q["live:site:" m[$2]] += $4 }
    $1 == "freed" { q["live:site:" m[$2]] -= $4 }
    $1 == "alloc" { q["alloc:cache:" $3] += $4 }
    $1 == "freed" { q["free:cache:" $3] += $4 }
    END { for (k in q) printf "%s\t%d\n", k, q[k] }' "$1"
}

# Kernel and model quantities of one program against the table.
compare() {
  awk -F'\t' -v id="$1" -v prof="$profile" '
    FILENAME == ARGV[1] { if ($1 == prof && $2 == id) { want[$3] = $4 "\t" $5; why[$3] = $6; used[$3] = 0 } next }
    FILENAME == ARGV[2] { k[$1] = $2; keys[$1]; next }
    { md[$1] = $2; keys[$1] }
    END {
      for (q in keys) {
        kv = (q in k) ? k[q] : 0; mv = (q in md) ? md[q] : 0
        if (q ~ /^live:/) mv = 0
        if (mv !~ /^-?[0-9]+$/) { printf "%s %s: the model figure %s is not whole (a callee split by calls)\n", id, q, mv; bad = 1; continue }
        if (q in want) { used[q] = 1
          if (want[q] != kv "\t" mv) { printf "%s %s: kernel %d, model %d; the table expects %s (%s)\n", id, q, kv, mv, want[q], why[q]; bad = 1 }
          else printf "ok %s %s: kernel %d, model %d: %s\n", id, q, kv, mv, why[q]
        } else if (kv != mv) { printf "%s %s: kernel %d, model %d: unexplained (not in tests/data/count-oracle.tsv)\n", id, q, kv, mv; bad = 1 }
        else printf "ok %s %s: %d\n", id, q, kv
      }
      for (q in used) if (!used[q]) { printf "%s %s: in the table but neither side has it\n", id, q; bad = 1 }
      exit bad }' "$table" "$dir/$1.k" "$dir/$1.m"
}

bad=0 checked=0
while IFS=$'\t' read -r id kargs margs; do
  # shellcheck disable=SC2086
  "$kit" --warmup 0 --rounds 2 --repeats 1 --target-se 0 --id "$id" --trace "$dir" $kargs >/dev/null 2>"$dir/$id.err" ||
    fail "$id: $(grep -v '^simcache-measure: [^ ]*: [0-9+]* rounds, ' "$dir/$id.err" | head -1)"
  # shellcheck disable=SC2086
  "$sim" --scenario $margs --kernel "$profile" --machine vm-2vcpu --format json --profile none \
    >"$dir/$id.json"
  kernel_q "$dir/$id.counts.tsv" | sort >"$dir/$id.k"
  model_q <"$dir/$id.json" | sort >"$dir/$id.m"
  out=$(compare "$id") || bad=1
  echo "$out" | sort
  checked=$((checked + $(echo "$out" | grep -c '^ok ' || true)))
done < <(programs)
((bad == 0)) || fail "differences above are not explained (tests/data/count-oracle.tsv)"
echo "kernel_count_oracle: $checked quantities agree or differ as explained (kernel $(uname -r), profile $profile)"
