/* cmd_topics.c - `rotor topics --model DIR [--top N]`: the top words of each
 * topic of a model saved by `rotor train --app lda --out DIR`
 * (topic_word.npy and vocab.txt). */
#include "tools/commands.h"
#include "ground/ground.h"

#include <stdlib.h>
#include <string.h>

static const float *rank_phi;

static int by_weight(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (rank_phi[a] != rank_phi[b])
        return rank_phi[a] > rank_phi[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* vocab.txt: line i = word i; exactly n lines expected. */
static int read_vocab(const char *path, uint64_t n, char **buf, char ***words, rt_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return rt_fail(err, RT_EXIT_INPUT, "%s: cannot open", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    rewind(fp);
    *buf = malloc((size_t)len + 1);
    *words = malloc((n + 1) * sizeof(char *));
    if (!*buf || !*words || fread(*buf, 1, (size_t)len, fp) != (size_t)len) {
        fclose(fp);
        return rt_fail(err, RT_EXIT_INPUT, "%s: read failed", path);
    }
    fclose(fp);
    (*buf)[len] = '\0';
    uint64_t i = 0;
    for (char *s = *buf; *s && i <= n;) {
        char *e = strchr(s, '\n');
        if (e)
            *e = '\0';
        if (i < n)
            (*words)[i] = s;
        i++;
        s = e ? e + 1 : s + strlen(s);
    }
    if (i != n)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: has %llu words, topic_word.npy has %llu", path,
                       (unsigned long long)i, (unsigned long long)i, (unsigned long long)n);
    return 0;
}

int cmd_topics(int argc, char **argv)
{
    rt_error err = {0};
    const char *model = NULL;
    int top = 10;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: rotor topics --model DIR [--top N]\n"
                   "Print the N (default 10) most probable words of every topic of an LDA\n"
                   "model saved by rotor train --app lda --out DIR.\n");
            return RT_EXIT_OK;
        } else if (rt_opt_is(argv[i], "--model")) {
            if (!(v = rt_opt_value(argc, argv, &i, &err)))
                rt_die(&err);
            model = v;
        } else if (rt_opt_is(argv[i], "--top")) {
            if (!(v = rt_opt_value(argc, argv, &i, &err)))
                rt_die(&err);
            if (rt_parse_int(v, &top) || top < 1) {
                rt_fail(&err, RT_EXIT_INPUT, "--top must be a positive integer, got '%s'", v);
                rt_die(&err);
            }
        } else {
            rt_fail(&err, RT_EXIT_INPUT, "topics: unknown option %s", argv[i]);
            rt_die(&err);
        }
    }
    if (!model) {
        rt_fail(&err, RT_EXIT_INPUT, "topics: --model DIR is required");
        rt_die(&err);
    }
    char path[4200];
    float *phi = NULL;
    uint64_t K, V;
    char *vbuf = NULL, **words = NULL;
    snprintf(path, sizeof(path), "%s/topic_word.npy", model);
    if (rt_npy_read_f32(path, &phi, &K, &V, &err))
        rt_die(&err);
    snprintf(path, sizeof(path), "%s/vocab.txt", model);
    if (read_vocab(path, V, &vbuf, &words, &err))
        rt_die(&err);
    uint32_t *idx = malloc((V ? V : 1) * sizeof(uint32_t));
    if (!idx) {
        rt_fail(&err, RT_EXIT_RUNTIME, "out of memory");
        rt_die(&err);
    }
    for (uint64_t k = 0; k < K; k++) {
        for (uint64_t w = 0; w < V; w++)
            idx[w] = (uint32_t)w;
        rank_phi = phi + k * V;
        qsort(idx, V, sizeof(uint32_t), by_weight);
        printf("topic %llu:", (unsigned long long)k);
        for (uint64_t i = 0; i < (uint64_t)top && i < V; i++)
            printf(" %s", words[idx[i]]);
        printf("\n");
    }
    free(idx);
    free(phi);
    free(vbuf);
    free(words);
    return RT_EXIT_OK;
}
