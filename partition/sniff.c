/* sniff.c - --format auto: guess a ratings file's format from its first lines. */
#include "partition/partition.h"

#include <string.h>

/* The first line of `text` (at most `len` bytes) into `line`, NUL-terminated;
 * returns the bytes consumed, 0 at the end. */
static size_t next_line(const char *text, size_t len, char *line, size_t cap)
{
    if (len == 0)
        return 0;
    const char *nl = memchr(text, '\n', len);
    size_t used = nl ? (size_t)(nl - text) + 1 : len;
    size_t n = used < cap ? used : cap - 1;
    memcpy(line, text, n);
    line[n] = '\0';
    return used;
}

/* "123:" and nothing else on the line (blanks aside). */
static int netflix_head_line(const char *s)
{
    size_t n = strcspn(s, " \t\r\n");
    return rt_netflix_block_head(s, n) && s[n + strspn(s + n, " \t\r\n")] == '\0';
}

static void sniff_text(const char *text, size_t len, rt_rating_format *f, const char **why)
{
    char line[4096];
    size_t used;
    int first = 1;
    /* Nothing but blanks and comments: let the reader report the empty input. */
    *f = RT_FMT_TRIPLETS;
    *why = "no data lines";
    while ((used = next_line(text, len, line, sizeof(line))) > 0) {
        text += used;
        len -= used;
        if (first && !strncmp(line, "%%MatrixMarket", 14)) {
            *f = RT_FMT_MM;
            *why = "MatrixMarket banner";
            return;
        }
        first = 0;
        const char *s = line + strspn(line, " \t");
        if (*s == '\n' || *s == '\r' || *s == '\0' || rt_text_comment_line(s))
            continue;
        if (netflix_head_line(s)) {
            *f = RT_FMT_NETFLIX;
            *why = "'ITEM:' lines heading 'user,rating,date' lines, the Netflix Prize's";
        } else if (strstr(s, "::")) {
            *f = RT_FMT_DAT;
            *why = "'::' separators, MovieLens ratings.dat";
        } else if (strchr(s, ';')) { /* Book-Crossing; locales with decimal commas */
            *f = RT_FMT_CSV;
            *why = "semicolon-separated";
        } else if (strchr(s, ',')) {
            *f = RT_FMT_CSV;
            *why = "comma-separated";
        } else {
            *f = RT_FMT_TRIPLETS;
            *why = "whitespace-separated user item rating [timestamp]";
        }
        return;
    }
}

int rt_rating_format_sniff_reader(rt_linereader *lr, rt_rating_format *f, const char **why,
                                  rt_error *err)
{
    const char *text;
    size_t len;
    if (rt_linereader_peek(lr, &text, &len, err) < 0)
        return -1;
    sniff_text(text, len, f, why);
    return 0;
}
