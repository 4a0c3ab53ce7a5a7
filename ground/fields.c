/* fields.c - comparing two "name=value" line lists field by field: the
 * job fingerprint ranks compare at connect time (verbs/fingerprint.c) and
 * the job description a resume compares with its checkpoint's
 * (apps/checkpoint.c). */
#include "ground/ground.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of field `name` (name_len bytes) in `list` (len bytes, not
 * terminated), or NULL; *vlen gets its length. */
static const char *field_value(const char *list, size_t len, const char *name, size_t name_len,
                               size_t *vlen)
{
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        if ((size_t)(line_end - p) > name_len && !memcmp(p, name, name_len) && p[name_len] == '=') {
            *vlen = (size_t)(line_end - p) - name_len - 1;
            return p + name_len + 1;
        }
        p = line_end + 1;
    }
    return NULL;
}

static int skipped(const char *name, size_t len, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strlen(*skip) == len && !memcmp(*skip, name, len))
            return 1;
    return 0;
}

/* The first field of x whose value in y differs or is missing. */
static int first_diff(const char *x, size_t xlen, const char *y, size_t ylen,
                      const char *const *skip, rt_field_diff *d)
{
    const char *p = x, *end = x + xlen;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        const char *eq = memchr(p, '=', (size_t)(line_end - p));
        if (eq && !skipped(p, (size_t)(eq - p), skip)) {
            size_t nlen = (size_t)(eq - p), xv = (size_t)(line_end - eq - 1), yv = 0;
            const char *v = field_value(y, ylen, p, nlen, &yv);
            if (!v || yv != xv || memcmp(v, eq + 1, xv)) {
                *d = (rt_field_diff){
                    .name = p, .name_len = nlen, .a = eq + 1, .a_len = xv, .b = v, .b_len = yv};
                return 1;
            }
        }
        p = line_end + 1;
    }
    return 0;
}

int rt_fields_diff(const char *a, size_t alen, const char *b, size_t blen, const char *const *skip,
                   rt_field_diff *d)
{
    if (first_diff(a, alen, b, blen, skip, d))
        return 1;
    if (!first_diff(b, blen, a, alen, skip, d))
        return 0;
    /* Found in b's order: swap the sides back. */
    const char *v = d->a;
    size_t vl = d->a_len;
    d->a = d->b, d->a_len = d->b_len;
    d->b = v, d->b_len = vl;
    return 1;
}

/* A decimal fraction as the job records it (%.17g: "0.20000000000000001")
 * in its shortest form that reads back the same ("0.2"), into out; 0 when
 * v is no such number (ids, names, integers and hex plan ids are shown as
 * they are: only text with a '.' that %.17g would write for its value is
 * touched, so a path "1.0" is not shown as '1'). */
static int shortest_decimal(char *out, size_t cap, const char *v, size_t len)
{
    char text[64], *end;
    if (len == 0 || len >= sizeof(text) || !memchr(v, '.', len) ||
        strspn(v, "0123456789+-.eE") != len)
        return 0;
    memcpy(text, v, len);
    text[len] = '\0';
    double x = strtod(text, &end);
    char recorded[64];
    if (*end || !isfinite(x) || snprintf(recorded, sizeof(recorded), "%.17g", x) != (int)len ||
        memcmp(recorded, text, len))
        return 0;
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(out, cap, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            return strlen(out) < len;
    }
    return 0;
}

void rt_field_quote(char *out, size_t cap, const char *v, size_t len)
{
    char num[64];
    if (v && shortest_decimal(num, sizeof(num), v, len))
        snprintf(out, cap, "'%s'", num);
    else if (v)
        snprintf(out, cap, "'%.*s'", (int)len, v);
    else
        snprintf(out, cap, "nothing");
}
