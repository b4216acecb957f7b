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
add_test(NAME "cli: snapshot shows the measured segments next to the replayed ones"
         COMMAND ${cli} snapshot ${snapshots}/after_step.pickle --preset llama-3.1-8b --pp 4)
set_tests_properties("cli: snapshot shows the measured segments next to the replayed ones"
                     PROPERTIES PASS_REGULAR_EXPRESSION
                     "segments: 11 in the snapshot \\(reserved 25,165,824 B \\(24.0 MiB\\)\\) vs [0-9]+ held by the allocator replay when reserved peaks.*large +2,097,152 B \\(2.0 MiB\\) +10 ")
add_test(NAME "cli: snapshot --json has the segments by size"
         COMMAND ${cli} snapshot ${snapshots}/after_step.pickle --preset llama-3.1-8b --json)
set_tests_properties("cli: snapshot --json has the segments by size" PROPERTIES
                     PASS_REGULAR_EXPRESSION
                     "\"segments\": {[^}]*\"measured_segments\": 11,[^}]*\"by_size\": \\[")
add_test(NAME "cli: snapshot refuses a pickle that imports"
         COMMAND ${expect_exit} 2 "opcode GLOBAL" ${cli} snapshot ${snapshots}/refused_global.pickle)
add_test(NAME "cli: snapshot needs a file" COMMAND ${expect_exit} 2 "FILE" ${cli} snapshot)
# The app's link after loading after_step.pickle carries its summary (snapshot_link.h): without
# the file, the same comparison (bucket bytes, modules, verdict, peak) comes from the link.
set(snapshot_link "v=1&model=llama-3.1-8b&pp=4&snapshot=after-first-step/0=3MiB@parameter-gradient-buffers|after_step.pickle&snapshot=after-first-step/0=6MiB@optimizer-state|after_step.pickle&snapshot=after-first-step/0=1.5MiB@activations|after_step.pickle&snapshot=after-first-step/0=0@all-gather-buffers|after_step.pickle&snapshot=after-first-step/0=0@moe-dispatch-buffers|after_step.pickle&snapshot=after-first-step/0=1000@other|after_step.pickle&snapshot=after-first-step/0=524288@module:attention|after_step.pickle&snapshot=after-first-step/0=1MiB@module:mlp|after_step.pickle&snapshot=after-first-step/0=11011048@active|after_step.pickle&snapshot=after-first-step/0=24MiB@reserved|after_step.pickle&snapshot=steady-state-peak/0=15205376@peak:0:21:24:all-gather-buffers|after_step.pickle|torch/distributed/distributed_c10d.py:3500%20all_gather_into_tensor&snapshot=steady-state-peak/0=4MiB@peak-alloc:0:21|after_step.pickle")
add_test(NAME "cli: snapshot --url shows the comparison a link carries, without the file"
         COMMAND ${cli} snapshot --url ${snapshot_link})
set_tests_properties("cli: snapshot --url shows the comparison a link carries, without the file"
                     PROPERTIES PASS_REGULAR_EXPRESSION
                     "not the file.*optimizer state +6,291,456 B.*module mlp +1,048,576 B.*measured peak.*15,205,376 B.*all_gather_into_tensor.*event 21 of 24")
add_test(NAME "cli: snapshot --url refuses a link whose snapshot entries are cut short"
         COMMAND ${expect_exit} 2 "parameter-gradient-buffers is missing" ${cli} snapshot
                 --url "v=1&model=llama-3.1-8b&snapshot=after-first-step/0=1MiB@active|a.pickle")
add_test(NAME "cli: snapshot --stage outside the model's stages (exit 2)"
         COMMAND ${expect_exit} 2 "^error: --stage: 4 is not in \\[0, 3\\]\n$"
                 ${cli} snapshot ${snapshots}/after_step.pickle --preset llama-3.1-8b --pp 4 --stage 4)
