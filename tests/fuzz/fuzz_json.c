/* fuzz_json.c - the one JSON reader (ground/json.h) that plan.json,
 * model.json, manifests and metrics files go through.  Beyond not
 * crashing, its contract traps when broken:
 *   - the three ways in (a file, an open stream, bytes in memory) agree;
 *   - a UTF-8 byte order mark put in front changes nothing;
 *   - what is accepted is an object or an array;
 *   - a refusal is one line naming the file, exit code 2. */
#include "ground/json.h"
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

static void check_refusal(const rt_error *err, const char *path)
{
    if (err->code != RT_EXIT_INPUT || strncmp(err->msg, path, strlen(path)) ||
        strpbrk(err->msg, "\n\r"))
        __builtin_trap();
}

/* a and b are both NULL or both equal documents. */
static void check_same(json_t *a, json_t *b)
{
    if (!a != !b || (a && !json_equal(a, b)))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    rt_error err = {0};
    json_t *mem = rt_json_parse((const char *)data, size, "doc.json", &err);
    if (mem && !json_is_object(mem) && !json_is_array(mem))
        __builtin_trap();
    if (!mem)
        check_refusal(&err, "doc.json");

    if (!rt_utf8_bom_len((const char *)data, size)) { /* (one mark is skipped, not two) */
        char *marked = malloc(size + 3);
        if (!marked)
            return 0;
        memcpy(marked, "\xef\xbb\xbf", 3);
        memcpy(marked + 3, data, size);
        json_t *with_mark = rt_json_parse(marked, size + 3, "doc.json", NULL);
        free(marked);
        check_same(mem, with_mark);
        json_decref(with_mark);
    }

    const char *path = fuzz_write("doc.json", data, size);
    json_t *file = rt_json_load(path, &err);
    if (!file)
        check_refusal(&err, path);
    check_same(mem, file);

    FILE *fp = fopen(path, "rb");
    json_t *stream = fp ? rt_json_loadf(fp, path, NULL) : NULL;
    if (fp)
        fclose(fp);
    check_same(mem, stream);

    json_decref(mem);
    json_decref(file);
    json_decref(stream);
    return 0;
}
