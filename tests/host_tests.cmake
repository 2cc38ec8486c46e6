# The model's slab geometry against the running kernel's /sys/kernel/slab
# (simcache geometry-check); skipped, status 77, where it cannot be read.
add_test(NAME geometry_host COMMAND simcache geometry-check)
set_tests_properties(geometry_host PROPERTIES SKIP_RETURN_CODE 77)

# /proc/slabinfo of the running kernel, read by the same parser as the
# model's --slabinfo output; objperslab and pagesperslab must agree for the
# kmalloc caches both have, at this machine's present CPU count. Fails
# (does not skip) where /proc/slabinfo is unreadable.
add_test(NAME slabinfo_host COMMAND simcache_tests "[host-slabinfo]")
