/* fuzz_lda_words.c - an LDA plan's lda.words (rt_lda_words_read).  The word
 * count the plan expects is taken from the file's own header (capped), and
 * the checksum is fixed up when the sizes agree, so the fuzzer gets past it. */
#include "apps/lda.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    uint64_t hdr[3] = {0, 0, 0};
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    if (size >= 32) {
        memcpy(hdr, buf + 8, sizeof(hdr));
        if (hdr[1] <= (size - 32) / 8) {
            hdr[2] = rt_checksum(buf + 32, hdr[1] * 8);
            memcpy(buf + 8, hdr, sizeof(hdr));
        }
    }
    const char *path = fuzz_write("lda.words", buf, size);
    free(buf);
    uint64_t n = hdr[1] < 4096 ? hdr[1] : 4096, *tokens;
    rt_error err = {0};
    if (rt_lda_words_read(path, hdr[0], n, &tokens, &err) == 0)
        free(tokens);
    return 0;
}
