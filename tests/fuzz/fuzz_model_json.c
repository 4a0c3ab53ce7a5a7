/* fuzz_model_json.c - a saved model's manifest (model.json) as rotor eval,
 * topics and export open it (rt_model_parts_open): versions, part lists,
 * shapes, names and checksums of part files that are not there; then as an
 * MF model's loader reads its keys (mu, biases, k) before its parts. */
#include "apps/mf_common.h"
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
    void *model = NULL;
    rt_error err2 = {0};
    if (rt_mf_model_load(fuzz_dir(), &model, &err2) == 0)
        rt_mf_model_free(model);
    return 0;
}
