/* driver.c - run a fuzz target once on every file named on the command line
 * (or in the directories named), without libFuzzer: the normal test suite
 * replays the seed corpus and every regression input this way, in the
 * release and in the sanitizer build. */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0, n;
    uint8_t *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(fp);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order, so runs are reproducible. */
static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(char *));
            if (!nn)
                abort();
            names = nn;
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(char *), by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (run_file(path) < 0)
            rc = -1;
        (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0, rc = 0, optional = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (!strcmp(argv[i], "--optional")) { /* the next path may not exist yet */
            optional = 1;
            continue;
        }
        int may_miss = optional;
        optional = 0;
        if (stat(argv[i], &sb) != 0 && may_miss && errno == ENOENT) {
            continue;
        } else if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(sb.st_mode)) {
            rc |= run_dir(argv[i], &count) < 0;
        } else {
            rc |= run_file(argv[i]) < 0;
            count++;
        }
    }
    printf("%s: %d inputs replayed\n", argv[0], count);
    return rc;
}
