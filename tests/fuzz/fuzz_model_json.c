/* fuzz_model_json.c - a saved model's manifest (model.json) as rotor eval,
 * topics and export open it (rt_model_parts_open): versions, part lists,
 * shapes, names and checksums of part files that are not there. */
#include "apps/model_set.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    fuzz_write("model.json", data, size);
    rt_model_parts mp;
    rt_error err = {0};
    if (rt_model_parts_open(fuzz_dir(), &mp, &err) == 0)
        rt_model_parts_close(&mp);
    return 0;
}
