/* fuzz_state.c - a rank's training-state file (checkpoint state-RRRRR.bin)
 * as rt_state_open, rt_state_get_optional (the job) and rt_state_get read
 * it on --resume.  The sections'
 * checksums are fixed up as far as the structure goes, and the run's
 * expected head is taken from the file's own head section, so the fuzzer
 * reaches the section walk and the size checks behind them. */
#include "apps/app_common.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#define HDR 32 /* char tag[16], u64 length, u64 XXH3 */

/* Make every whole section's checksum right; the head found goes to *head. */
static void fix_sections(uint8_t *buf, size_t size, rt_state_head *head)
{
    size_t pos = 8;
    while (pos <= size && size - pos >= HDR) {
        uint64_t len, check;
        memcpy(&len, buf + pos + 16, 8);
        if (len > size - pos - HDR)
            return;
        check = rt_checksum(buf + pos + HDR, len);
        memcpy(buf + pos + 24, &check, 8);
        if (!strncmp((const char *)buf + pos, "head", 16) && len == sizeof(*head))
            memcpy(head, buf + pos + HDR, sizeof(*head));
        pos += HDR + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    rt_state_head want;
    memset(&want, 0, sizeof(want));
    if (size >= 8)
        fix_sections(buf, size, &want);
    want.app[sizeof(want.app) - 1] = '\0';
    want.rank = 0; /* the file name the reader looks for */
    fuzz_write("state-00000.bin", buf, size);
    free(buf);
    rt_state_reader r;
    rt_error err = {0};
    uint64_t next;
    if (rt_state_open(&r, fuzz_dir(), &want, &next, &err) == 0) {
        /* the job, when the file records one, compared as a resume does */
        const void *job = NULL;
        size_t job_len = 0;
        if (rt_state_get_optional(&r, "job", &job, &job_len, &err) > 0) {
            rt_field_diff d;
            rt_fields_diff(job, job_len, "--seed=1\n", 9, NULL, &d);
        }
        /* the sections an app reads next, of a few sizes */
        static const size_t sizes[] = {8, 4, 64, 0};
        uint8_t out[64];
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            if (rt_state_get(&r, i & 1 ? "rows" : "lr", out, sizes[i], &err))
                break;
    }
    rt_state_close(&r);
    return 0;
}
