/* fuzz_ratings.c - the ratings readers (one target per format: FUZZ_FORMAT
 * is an rt_rating_format; RT_FMT_AUTO also fuzzes the format sniffer).  A
 * file that reads as training data is read again as a test file against
 * the ids it produced (the add_ids = 0 path of rotor partition --test and
 * rotor eval). */
#include "partition/partition.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    const char *path = fuzz_write("ratings", data, size);
    rt_idmap rows, cols;
    rt_idmap_init(&rows);
    rt_idmap_init(&cols);
    rt_triplets t;
    rt_triplets_init(&t);
    rt_ratings_stats st;
    rt_error err = {0};
    if (rt_read_ratings(path, FUZZ_FORMAT, &rows, &cols, 1, &t, &st, &err) == 0) {
        for (uint64_t i = 0; i < t.n; i++)
            if (t.e[i].row >= rows.n || t.e[i].col >= cols.n)
                __builtin_trap(); /* a dense id the maps do not hold */
        rt_triplets test;
        rt_triplets_init(&test);
        rt_read_ratings(path, FUZZ_FORMAT, &rows, &cols, 0, &test, &st, &err);
        rt_triplets_free(&test);
    }
    rt_triplets_free(&t);
    rt_idmap_free(&rows);
    rt_idmap_free(&cols);
    return 0;
}
