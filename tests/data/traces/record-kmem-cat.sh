#!/bin/sh
# Records tests/data/kmem-cat.dat: the kmem events of one `cat /proc/self/status`,
# in a tracefs instance (the top-level buffer is left alone), with /proc/kallsyms
# cut to the call sites' functions so the file stays small. Run as root:
#   unshare -m sh record-kmem.sh OUT.dat SMALL_KALLSYMS
set -e
out=$1 syms=$2
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
mount --bind "$syms" /proc/kallsyms
I=$T/instances/simcache_fx
mkdir $I
trap '[ ! -d $I ] || rmdir $I' EXIT
echo 0 > $I/tracing_on
for e in kmalloc kfree kmem_cache_alloc kmem_cache_free; do echo 1 > $I/events/kmem/$e/enable; done
sh -c "echo \$\$ > $I/set_event_pid; echo 1 > $I/tracing_on; exec /bin/cat /proc/self/status" > /dev/null
echo 0 > $I/tracing_on
trace-cmd extract -B simcache_fx -o "$out" > /dev/null
