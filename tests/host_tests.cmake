# The model's slab geometry against the running kernel's /sys/kernel/slab
# (simcache geometry-check); skipped, status 77, where it cannot be read.
add_test(NAME geometry_host COMMAND simcache geometry-check)
set_tests_properties(geometry_host PROPERTIES SKIP_RETURN_CODE 77)
