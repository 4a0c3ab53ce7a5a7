/* fuzz_model_ids.c - a saved model's id files (rows.ids, cols.ids, an LDA
 * model's vocab.txt) as the model loaders read them (rt_app_read_ids):
 * line i names dense id i.  The first byte is the count the model expects;
 * the rest is the file. */
#include "apps/app_common.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size < 1)
        return 0;
    uint64_t want = data[0];
    fuzz_write("rows.ids", data + 1, size - 1);
    rt_idmap map;
    rt_idmap_init(&map);
    rt_error err = {0};
    if (rt_app_read_ids(fuzz_dir(), "rows.ids", &map, want, &err) == 0) {
        if (map.n != want)
            __builtin_trap();
        for (uint64_t i = 0; i < map.n; i++) { /* every id names itself back */
            const char *s = rt_idmap_str(&map, i);
            if (!s || rt_idmap_find(&map, s, strlen(s)) != (int64_t)i)
                __builtin_trap();
        }
    }
    rt_idmap_free(&map);
    return 0;
}
