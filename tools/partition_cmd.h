/* partition_cmd.h - `rotor partition`'s options, shared by the ratings path
 * (tools/cmd_partition.c) and the corpus path for --app lda
 * (tools/cmd_partition_lda.c). */
#ifndef ROTOR_TOOLS_PARTITION_CMD_H
#define ROTOR_TOOLS_PARTITION_CMD_H

#include "partition/corpus.h"
#include "partition/partition.h"

enum { PARTITION_MF = 0, PARTITION_LDA = 1 }; /* --app */

typedef struct partition_opts {
    int app; /* PARTITION_MF or PARTITION_LDA */
    const char *input, *out;
    uint32_t nodes, threads, pipeline;
    double test_fraction; /* 0 = none held out */
    uint64_t seed;
    int balance; /* rt_balance */
    int force;
    int quiet; /* --quiet: warnings and errors only on stderr */
    /* ratings (--app mf) */
    const char *test, *verify;
    int format; /* rt_rating_format */
    /* corpus (--app lda) */
    rt_corpus_options corpus;
} partition_opts;

/* Read the corpus, hold out documents and write the plan (--app lda). */
int partition_lda(const partition_opts *o, int argc, char **argv, rt_error *err);

#endif
