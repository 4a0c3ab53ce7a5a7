/* fuzz_layout.c - layout.bin (sectioned file: header, section table, row
 * and column offsets and ids).  Checksums are fixed up, and plan.json's
 * record of the file is rewritten to match, so the fuzzer reaches the
 * structural checks behind them. */
#include "partition/partition.h"
#include "tests/fuzz/fuzz.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *manifest;
    fuzz_quiet();
    char dir[512], path[600];
    snprintf(dir, sizeof(dir), "%s", fuzz_seed_plan("plan"));
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    if (!manifest && !(manifest = json_load_file(path, 0, NULL)))
        abort();
    char hex[17];
    snprintf(hex, sizeof(hex), "%016" PRIx64, fuzz_write_secfile("plan/layout.bin", data, size));
    json_t *rec = json_pack("{s:I,s:s}", "bytes", (json_int_t)size, "xxh3", hex);
    json_object_set_new(json_object_get(manifest, "files"), "layout.bin", rec);
    if (json_dump_file(manifest, path, 0) != 0)
        abort();
    fuzz_use_plan(dir);
    return 0;
}
