/* fuzz.c - scratch files for the fuzz targets (see fuzz.h). */
#include "tests/fuzz/fuzz.h"
#include "partition/partition.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One process-wide scratch directory: test code, not a library. */
static char scratch[256];

static void remove_scratch(void)
{
    if (scratch[0])
        rt_remove_tree(scratch);
}

const char *fuzz_dir(void)
{
    if (scratch[0])
        return scratch;
    /* FUZZ_KEEP_DIR: use (and keep) that directory, so make_corpus.sh can
     * take the seed plan's own files as seeds. */
    const char *keep = getenv("FUZZ_KEEP_DIR");
    if (keep && *keep) {
        snprintf(scratch, sizeof(scratch), "%s", keep);
        mkdir(scratch, 0755);
        return scratch;
    }
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(scratch, sizeof(scratch), "%s/rotor-fuzz-XXXXXX", base);
    if (!mkdtemp(scratch)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_scratch);
    return scratch;
}

const char *fuzz_write(const char *name, const void *data, size_t size)
{
    static char paths[8][512];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, 512, "%s/%s", fuzz_dir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            perror(path);
            abort();
        }
        p += n;
        size -= (size_t)n;
    }
    close(fd);
    return path;
}

void fuzz_split(const uint8_t *data, size_t size, size_t *before, const uint8_t **after,
                size_t *after_len)
{
    static const char sep[] = "\n====\n";
    const size_t n = sizeof(sep) - 1;
    for (size_t i = 0; i + n <= size; i++)
        if (!memcmp(data + i, sep, n)) {
            *before = i + 1; /* keep the newline */
            *after = data + i + n;
            *after_len = size - i - n;
            return;
        }
    *before = size;
    *after = NULL;
    *after_len = 0;
}

int fuzz_take(fuzz_input *in, void *out, size_t n)
{
    if (in->left < n)
        return -1;
    if (out)
        memcpy(out, in->p, n);
    in->p += n;
    in->left -= n;
    return 0;
}

void fuzz_pick(const uint8_t *data, size_t size, void (*const *parsers)(fuzz_input *), size_t n)
{
    fuzz_quiet();
    if (size < 1)
        return;
    fuzz_input in = {data + 1, size - 1};
    parsers[data[0] % n](&in);
}

void fuzz_quiet(void)
{
    rt_log_level = RT_LOG_ERROR - 1;
}

const char *fuzz_seed_plan(const char *name)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return path;
    rt_idmap rows, cols;
    rt_idmap_init(&rows);
    rt_idmap_init(&cols);
    rt_triplets t;
    rt_triplets_init(&t);
    rt_error err = {0};
    for (uint32_t i = 0; i < 12 && !err.msg[0]; i++)
        for (uint32_t j = 0; j < 8; j++) {
            if ((i + j) % 3 == 0)
                continue;
            char id[16];
            uint32_t r, c;
            int n = snprintf(id, sizeof(id), "u%u", i);
            rt_idmap_intern(&rows, id, (size_t)n, &r, &err);
            n = snprintf(id, sizeof(id), "%u", j * 7);
            rt_idmap_intern(&cols, id, (size_t)n, &c, &err);
            rt_triplets_push(&t, r, c, (float)(i + j) / 4.0f, &err);
        }
    rt_plan_input in = {.app = RT_PLAN_MF, .train = &t, .rows = &rows, .cols = &cols};
    rt_plan_options opt = {.nodes = 2, .threads = 1, .seed = 1};
    if (err.msg[0] || rt_plan_write(path, &in, &opt, NULL, &err) < 0) {
        fprintf(stderr, "fuzz: seed plan: %s\n", err.msg);
        abort();
    }
    rt_triplets_free(&t);
    rt_idmap_free(&rows);
    rt_idmap_free(&cols);
    return path;
}

static void fix_secfile(uint8_t *buf, size_t len)
{
    rt_file_header h;
    if (len < sizeof(h))
        return;
    memcpy(&h, buf, sizeof(h));
    uint32_t n = h.n_sections < RT_MAX_SECTIONS ? h.n_sections : RT_MAX_SECTIONS;
    size_t table_end = sizeof(h) + (size_t)n * sizeof(rt_section_entry);
    if (table_end > len)
        return;
    for (uint32_t i = 0; i < n; i++) {
        rt_section_entry s;
        memcpy(&s, buf + sizeof(h) + i * sizeof(s), sizeof(s));
        if (s.offset <= len && s.bytes <= len - s.offset) {
            s.checksum = rt_checksum(buf + s.offset, s.bytes);
            memcpy(buf + sizeof(h) + i * sizeof(s), &s, sizeof(s));
        }
    }
    /* The header checksum: the header with header_check = 0, then the table
     * (as partition/secfile.c computes it). */
    h.header_check = 0;
    uint8_t *tmp = malloc(table_end);
    if (!tmp)
        abort();
    memcpy(tmp, &h, sizeof(h));
    memcpy(tmp + sizeof(h), buf + sizeof(h), table_end - sizeof(h));
    if (h.n_sections <= RT_MAX_SECTIONS)
        h.header_check = rt_checksum(tmp, table_end);
    free(tmp);
    memcpy(buf, &h, sizeof(h));
}

uint64_t fuzz_write_secfile(const char *name, const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    fix_secfile(buf, size);
    fuzz_write(name, buf, size);
    uint64_t sum = rt_checksum(buf, size);
    free(buf);
    return sum;
}

void fuzz_use_plan(const char *dir)
{
    rt_plan plan;
    rt_error err = {0};
    if (rt_plan_open(dir, &plan, &err) < 0)
        return;
    for (uint32_t w = 0; w < plan.workers; w++) {
        rt_shard sh;
        if (rt_shard_open(&plan, w, &sh, &err) == 0)
            rt_shard_close(&sh);
    }
    static const char *const which[] = {"rows", "cols"};
    for (int i = 0; i < 2; i++) {
        char **ids;
        uint64_t n;
        if (rt_plan_read_ids(&plan, which[i], &ids, &n, &err) == 0)
            free(ids);
    }
    rt_plan_close(&plan);
}
