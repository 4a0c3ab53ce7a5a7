/* json.c - the one reader of JSON documents (see json.h), and rt_json_text
 * for outside bytes written into one. */
#include "ground/json.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

/* text[0..len) without a byte order mark or binary bytes. */
static json_t *parse_text(const char *text, size_t len, const char *path, rt_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (doc)
        return doc;
    if (json_error_code(&je) == json_error_out_of_memory) {
        rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory", path);
        return NULL;
    }
    /* jansson quotes the bytes it stopped at: they may be anything */
    char what[4 * sizeof(je.text) + 8];
    rt_one_line(what, sizeof(what), je.text);
    if (je.line > 0 && je.column > 0)
        rt_fail(err, RT_EXIT_INPUT, "%s:%d:%d: %s", path, je.line, je.column, what);
    else if (je.line > 0)
        rt_fail(err, RT_EXIT_INPUT, "%s:%d: %s", path, je.line, what);
    else
        rt_fail(err, RT_EXIT_INPUT, "%s: %s", path, what);
    return NULL;
}

/* Bytes from memory or a stream have not met rt_text_load, which refuses
 * binary bytes in a file: refused here the same way (jansson stops at a NUL
 * and would accept the document before it). */
json_t *rt_json_parse(const char *text, size_t len, const char *path, rt_error *err)
{
    size_t bom = rt_utf8_bom_len(text, len);
    size_t at = rt_text_find_binary(text + bom, len - bom);
    if (at < len - bom) {
        rt_fail_binary_at(err, path, text + bom, len - bom, at);
        return NULL;
    }
    return parse_text(text + bom, len - bom, path, err);
}

json_t *rt_json_load(const char *path, rt_error *err)
{
    rt_text t;
    if (rt_text_load_own(path, &t, err)) /* JSON is only ever a file rotor wrote */
        return NULL;
    json_t *doc = parse_text(t.data, t.len, t.path, err); /* its mark is gone */
    rt_text_free(&t);
    return doc;
}

json_t *rt_json_loadf(FILE *fp, const char *path, rt_error *err)
{
    size_t cap = 1 << 12, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, fp);
        if (len < cap)
            break;
        char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap *= 2) : NULL;
        if (!nb)
            free(buf);
        buf = nb;
    }
    if (!buf) {
        rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory", path);
        return NULL;
    }
    json_t *doc = NULL;
    if (ferror(fp))
        rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: read failed", path);
    else
        doc = rt_json_parse(buf, rt_text_unify_line_ends(buf, len, 0), path, err);
    free(buf);
    return doc;
}

json_t *rt_json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    size_t n = strlen(s), out = 0;
    char *buf = malloc(3 * n + 1); /* one byte may become the 3 of U+FFFD */
    if (!buf)
        return NULL;
    for (size_t i = 0; i < n;) {
        ucs4_t uc;
        int len = u8_mbtoucr(&uc, (const uint8_t *)s + i, n - i);
        if (len > 0) {
            memcpy(buf + out, s + i, (size_t)len);
            out += (size_t)len;
            i += (size_t)len;
        } else {
            memcpy(buf + out, "\xef\xbf\xbd", 3);
            out += 3;
            i++;
        }
    }
    buf[out] = '\0';
    j = json_string(buf);
    free(buf);
    return j;
}
