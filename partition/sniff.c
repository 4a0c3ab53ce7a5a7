/* sniff.c - --format auto: guess a ratings file's format from its first lines. */
#include "partition/partition.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rt_rating_format_sniff(const char *path, rt_rating_format *f, const char **why, rt_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open", path);
    char line[4096];
    int first = 1, found = 0;
    while (fgets(line, sizeof(line), fp)) {
        if (first && !strncmp(line, "%%MatrixMarket", 14)) {
            *f = RT_FMT_MM;
            *why = "MatrixMarket banner";
            found = 1;
            break;
        }
        first = 0;
        const char *s = line + strspn(line, " \t");
        if (*s == '\n' || *s == '\r' || *s == '\0' || *s == '#' || *s == '%')
            continue;
        if (strstr(s, "::")) {
            *f = RT_FMT_DAT;
            *why = "'::' separators, MovieLens ratings.dat";
        } else if (strchr(s, ',')) {
            *f = RT_FMT_CSV;
            *why = "comma-separated";
        } else {
            *f = RT_FMT_TRIPLETS;
            *why = "whitespace-separated user item rating [timestamp]";
        }
        found = 1;
        break;
    }
    fclose(fp);
    /* Nothing but blanks and comments: let the reader report the empty input. */
    if (!found) {
        *f = RT_FMT_TRIPLETS;
        *why = "no data lines";
    }
    return 0;
}
