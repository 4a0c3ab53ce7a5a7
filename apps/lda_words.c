/* lda_words.c - lda.words: training tokens per word, written into an LDA
 * plan by `rotor partition --app lda` and read by the LDA app to lay out
 * block payloads (a word's sparse slice holds at most its token count). */
#include "apps/lda.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WORDS_MAGIC "ROTORLW1"

int rt_lda_words_write(const char *path, uint64_t plan_id, const uint64_t *tokens, uint64_t n,
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

int rt_lda_words_read(const char *path, uint64_t plan_id, uint64_t n, uint64_t **tokens,
                      rt_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno,
                             "%s: cannot open (is this a plan made by rotor partition --app lda?)",
                             path);
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
