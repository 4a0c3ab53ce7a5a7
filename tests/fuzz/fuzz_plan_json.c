/* fuzz_plan_json.c - plan.json as rt_plan_open reads it (the manifest's
 * values, "files" records and schedule), next to a valid layout.bin and
 * shards; a manifest that opens is then used to open every shard and read
 * the id files, as rotor train and rotor partition --verify do. */
#include "partition/partition.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    fuzz_seed_plan("plan");
    fuzz_write("plan/plan.json", data, size);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/plan", fuzz_dir());
    fuzz_use_plan(dir);
    return 0;
}
