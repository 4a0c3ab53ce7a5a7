/* partition_cmd.h - `rotor partition`'s options, shared by the ratings path
 * (tools/cmd_partition.c) and the corpus path for --app lda
 * (tools/cmd_partition_lda.c). */
#ifndef ROTOR_TOOLS_PARTITION_CMD_H
#define ROTOR_TOOLS_PARTITION_CMD_H

#include "partition/corpus.h"
#include "partition/partition.h"
#include "tools/sim_shape.h"

enum { PARTITION_MF = 0, PARTITION_LDA = 1 }; /* --app */

typedef struct partition_opts {
    int app; /* PARTITION_MF or PARTITION_LDA */
    const char *input, *out;
    uint32_t nodes, threads, pipeline; /* pipeline 0: --pipeline auto */
    const char *pipeline_arg;          /* --pipeline as typed: C or auto */
    sim_link_args link;                /* --pipeline auto: the link and kernel it is chosen for */
    double test_fraction;              /* 0 = none held out */
    uint64_t seed;
    int balance; /* rt_balance */
    int force;
    int quiet;                  /* --quiet: warnings and errors only on stderr */
    const char *max_memory_arg; /* --max-memory as typed, or NULL */
    uint64_t max_memory;        /* bytes; 0: no limit */
    /* ratings (--app mf) */
    const char *test, *verify;
    int format; /* rt_rating_format */
    /* corpus (--app lda) */
    rt_corpus_options corpus;
} partition_opts;

/* --pipeline auto: the factor for this job's sizes (cols columns, work
 * ratings or tokens) on the link of o's options, by simulating the
 * candidates (tools/sim_shape.h).  0 with *pipeline set, or -1 with err. */
int partition_auto_pipeline(const partition_opts *o, double cols, double work, uint32_t *pipeline,
                            rt_error *err);

/* The command line as typed ("rotor partition ..."), quoted for a shell
 * where needed, as plan.json records it; malloc'd, NULL when out of memory. */
char *partition_command_line(int argc, char **argv);

/* The plan options that come from the command line, the same for ratings
 * and corpora: nodes, threads, seed, balance, force, the command line, and
 * the pipeline factor (--pipeline auto: chosen for cols columns and work
 * ratings or tokens).  The caller adds its sources, counts and side files.
 * 0, or -1 with err (*po is set either way). */
int partition_plan_options(const partition_opts *o, const char *command_line, double cols,
                           double work, rt_plan_options *po, rt_error *err);

/* What this process holds now, in bytes (its resident set, VmRSS). */
uint64_t partition_held_bytes(void);

/* The peak memory estimate, once the input is read and before the plan is
 * written: what is held now (the input as read) plus what rt_plan_write
 * adds at most for W = nodes x threads workers and pipeline x W blocks, or
 * the read's own peak (VmHWM) when that is more.  Printed as a note; above
 * --max-memory it is an error (exit 2) and nothing is written.  0, or -1
 * with err. */
int partition_memory_check(const partition_opts *o, const rt_plan_input *in, uint32_t pipeline,
                           rt_error *err);

/* Read the corpus, hold out documents and write the plan (--app lda). */
int partition_lda(const partition_opts *o, int argc, char **argv, rt_error *err);

#endif
