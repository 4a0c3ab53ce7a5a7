/* fuzz_token_file.c - --token-file secrets (rt_token_file_read,
 * tools/launch_env.c).  A secret it accepts is one line of text: as long as
 * it says, without NUL, newline, CR or any other binary byte, and the file's
 * first bytes (after a UTF-8 byte order mark). */
#include "tests/fuzz/fuzz.h"
#include "tools/launch_env.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    const char *path = fuzz_write("token", data, size);
    char buf[4096];
    size_t len = 0;
    rt_error err = {0};
    if (rt_token_file_read(path, buf, sizeof(buf), &len, &err) != 0) {
        if (!err.msg[0] || err.code != RT_EXIT_INPUT)
            __builtin_trap(); /* a refusal says why, as bad input */
        return 0;
    }
    if (len == 0 || len >= sizeof(buf) || strlen(buf) != len ||
        rt_text_find_binary(buf, len) != len || memchr(buf, '\n', len) || memchr(buf, '\r', len))
        __builtin_trap();
    size_t bom = size >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
    if (len > size - bom || memcmp(buf, data + bom, len) != 0)
        __builtin_trap(); /* the secret is the file's first line, not a part of it */
    return 0;
}
