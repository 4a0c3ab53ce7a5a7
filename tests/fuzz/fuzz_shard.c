/* fuzz_shard.c - shard-NNNNN.bin (sectioned file: header, section table,
 * block offsets, entries, held-out row ids) as rt_shard_open checks it
 * against an open plan.  Checksums are fixed up first. */
#include "partition/partition.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rt_plan plan;
    static int open;
    fuzz_quiet();
    rt_error err = {0};
    if (!open && rt_plan_open(fuzz_seed_plan("plan"), &plan, &err) < 0)
        abort();
    open = 1;
    fuzz_write_secfile("plan/shard-00000.bin", data, size);
    plan.shard_bytes[0] = size;
    rt_shard sh;
    if (rt_shard_open(&plan, 0, &sh, &err) == 0) {
        /* Everything the kernels will index must be in range. */
        for (uint32_t b = 0; b < plan.blocks; b++)
            for (uint64_t i = sh.train_off[b]; i < sh.train_off[b + 1]; i++)
                if (sh.train[i].row >= sh.n_rows || sh.train[i].col >= rt_plan_block_cols(&plan, b))
                    __builtin_trap();
        rt_shard_close(&sh);
    }
    return 0;
}
