/* fuzz_npy.c - .npy headers and data as rotor eval and rotor topics read
 * models (rt_npy_read_f32). */
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    const char *path = fuzz_write("m.npy", data, size);
    float *m;
    uint64_t rows, cols;
    rt_error err = {0};
    if (rt_npy_read_f32(path, &m, &rows, &cols, &err) == 0) {
        float sum = 0;
        for (uint64_t i = 0; i < rows * cols; i++)
            sum += m[i]; /* every promised cell is readable */
        if (sum != sum && rows * cols == 0)
            __builtin_trap();
        free(m);
    }
    return 0;
}
