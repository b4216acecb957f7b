# `snapshot`: the allocator snapshots written by scripts/make_test_snapshots.py (worked numbers in
# tests/core/test_snapshot.cpp). Included from tests/cli/CMakeLists.txt.
set(snapshots ${PROJECT_SOURCE_DIR}/tests/core/data/snapshots)
add_test(NAME "cli: snapshot attributes the blocks and locates the peak"
         COMMAND ${cli} snapshot ${snapshots}/after_step.pickle)
set_tests_properties("cli: snapshot attributes the blocks and locates the peak" PROPERTIES
                     PASS_REGULAR_EXPRESSION
                     "optimizer state +6,291,456 B.*module mlp +1,048,576 B.*measured peak.*15,205,376 B.*all_gather_into_tensor")
add_test(NAME "cli: snapshot before the first step names the lazy optimizer state"
         COMMAND ${cli} snapshot ${snapshots}/before_step.pickle --preset llama-3.1-8b --pp 4)
set_tests_properties("cli: snapshot before the first step names the lazy optimizer state"
                     PROPERTIES PASS_REGULAR_EXPRESSION
                     "optimizer state +0 B.*derived only.*derived, not in the snapshot +optimizer state.*first step")
add_test(NAME "cli: snapshot --json has the buckets"
         COMMAND ${cli} snapshot ${snapshots}/after_step.pickle --preset llama-3.1-8b --json)
set_tests_properties("cli: snapshot --json has the buckets" PROPERTIES PASS_REGULAR_EXPRESSION
                     "\"name\": \"parameter and gradient buffers\",[^}]*\"measured_bytes\": 3145728")
add_test(NAME "cli: snapshot refuses a pickle that imports"
         COMMAND ${expect_exit} 2 "opcode GLOBAL" ${cli} snapshot ${snapshots}/refused_global.pickle)
add_test(NAME "cli: snapshot needs a file" COMMAND ${expect_exit} 2 "FILE" ${cli} snapshot)
