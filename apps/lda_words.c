/* lda_words.c - lda.words: training tokens per word, written into an LDA
 * plan by `rotor partition --app lda` and read by the LDA app to lay out
 * block payloads (a word's sparse slice holds at most its token count). */
#include "apps/lda.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WORDS_MAGIC "ROTORLW1"

static int words_write(const char *path, uint64_t plan_id, const uint64_t *tokens, uint64_t n,
                       rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    uint64_t hdr[3] = {plan_id, n, rt_checksum(tokens, n * sizeof(uint64_t))};
    if (rt_write_all(of.fp, WORDS_MAGIC, 8, path, err) ||
        rt_write_all(of.fp, hdr, sizeof(hdr), path, err) ||
        rt_write_all(of.fp, tokens, n * sizeof(uint64_t), path, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

int rt_lda_plan_side_files(const char *tmp_dir, uint64_t plan_id, const rt_plan_input *in,
                           rt_error *err)
{
    uint64_t n = in->cols->n;
    uint64_t *tok = calloc(n + 1, sizeof(uint64_t));
    if (!tok)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint64_t i = 0; i < in->train->n; i++)
        tok[in->train->e[i].col] += (uint64_t)in->train->e[i].val;
    char path[4200];
    int rc = rt_path_join(path, sizeof(path), tmp_dir, RT_LDA_WORDS_FILE, err);
    if (rc == 0)
        rc = words_write(path, plan_id, tok, n, err);
    free(tok);
    return rc;
}

int rt_lda_words_read(const char *path, uint64_t plan_id, uint64_t n, uint64_t **tokens,
                      rt_error *err)
{
    struct stat sb; /* a missing file is most likely an MF plan's */
    if (stat(path, &sb) != 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno,
                             "%s: cannot open (is this a plan made by rotor partition --app lda?)",
                             path);
    FILE *fp = rt_fopen_read(path, RT_READ_OWN, err);
    if (!fp)
        return -1;
    char magic[8];
    uint64_t hdr[3];
    uint64_t *t = malloc((n ? n : 1) * sizeof(uint64_t));
    int ok = t && fread(magic, 1, 8, fp) == 8 && !memcmp(magic, WORDS_MAGIC, 8) &&
             fread(hdr, sizeof(hdr), 1, fp) == 1 && hdr[0] == plan_id && hdr[1] == n &&
             fread(t, sizeof(uint64_t), n, fp) == n &&
             rt_checksum(t, n * sizeof(uint64_t)) == hdr[2] && fgetc(fp) == EOF;
    fclose(fp);
    if (!ok) {
        free(t);
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: corrupt or belongs to another plan (expected %llu words, plan id %llx)",
                       path, (unsigned long long)n, (unsigned long long)plan_id);
    }
    *tokens = t;
    return 0;
}
