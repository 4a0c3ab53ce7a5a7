/* fuzz_ids.c - rows.ids / cols.ids / test_rows.ids as rt_plan_read_ids
 * reads them.  The first byte picks the list and the plan's row count; the
 * checksum plan.json records is made to match the rest. */
#include "partition/partition.h"
#include "tests/fuzz/fuzz.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size < 1)
        return 0;
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    snprintf(plan.dir, sizeof(plan.dir), "%s", fuzz_dir());
    const char *which = data[0] & 1 ? "rows" : "test_rows";
    plan.n_rows = (uint64_t)(data[0] >> 1);
    char name[32], json[200];
    snprintf(name, sizeof(name), "%s.ids", which);
    fuzz_write(name, data + 1, size - 1);
    int n = snprintf(json, sizeof(json),
                     "{\"files\": {\"%s\": {\"bytes\": %zu, \"xxh3\": \"%016" PRIx64 "\"}}}\n",
                     name, size - 1, rt_checksum(data + 1, size - 1));
    fuzz_write("plan.json", json, (size_t)n);
    char **ids;
    uint64_t count;
    rt_error err = {0};
    if (rt_plan_read_ids(&plan, which, &ids, &count, &err) == 0) {
        for (uint64_t i = 0; i < count; i++)
            if (strchr(ids[i], '\n'))
                __builtin_trap();
        free(ids);
    }
    return 0;
}
