/*
 * apps.h - the model kernels that run on the rotation engine.
 *
 * Each app is described by an rt_app_desc: `rotor train --app NAME` finds it
 * in rt_apps[], parses the app's options with the app's own option table
 * next to its own (train composes the two; `rotor train --help` lists every
 * app's table), asks it how large a parameter
 * block can get (the engine sizes its slot window from that), creates it on
 * top of the engine, runs the engine with its ops and finally saves the model.
 *
 * An app owns its file formats, so tools never read or write them directly:
 * `rotor partition` asks it for the side files of a plan, and `rotor eval`,
 * `rotor topics` open a saved model with rt_model_open() and use the hooks
 * of the app that wrote it (prediction, top words); `rotor export` merges a
 * saved model's per-rank parts into single files through model_export.
 * Saved models are sets of per-rank part files (apps/model_set.h).
 *
 *   sgd-mf  L2-regularised SGD matrix factorisation        (apps/sgd_mf*.c)
 *   cd-mf   CCD++ coordinate descent matrix factorisation   (apps/cd_mf*.c)
 *   lda     collapsed Gibbs sampling LDA                     (apps/lda*.c)
 */
#ifndef ROTOR_APPS_H
#define ROTOR_APPS_H

#include "engine/engine.h"
#include "ground/progress.h"
#include "partition/corpus.h"

/* The largest LDA alpha or beta, for training, a saved model and `rotor gen
 * lda` alike: the dense kernel holds alpha as a float, so a prior over
 * FLT_MAX (3.4e38) sampled garbage. */
#define RT_LDA_MAX_PRIOR 1e30

/* The most LDA topics, for training, a saved model and `rotor gen lda`
 * alike: topic ids travel as uint16_t in the samplers' per-token state. */
#define RT_LDA_MAX_TOPICS 65535

/* `rotor infer`: new documents (any corpus the partitioner reads; words the
 * model never saw are left out and counted) are sampled with the model's
 * word-topic counts held fixed.  Each document has its own random stream, so
 * the result depends on the seed but not on the number of threads. */
typedef struct rt_infer_opts {
    uint32_t iters;        /* Gibbs sweeps over each document */
    uint32_t threads;      /* 0 = 1 */
    uint64_t seed;         /* also picks the document-completion halves */
    uint32_t top;          /* topics listed per document */
    const char *out;       /* output directory */
    const char *input;     /* for messages */
    rt_progress *progress; /* documents done, or NULL */
} rt_infer_opts;

typedef struct rt_infer_result {
    uint64_t docs, empty_docs;              /* empty: no token of a model word */
    uint64_t tokens;                        /* tokens of model words */
    uint64_t unknown_words, unknown_tokens; /* words the model lacks */
    uint64_t held_tokens;                   /* the completion halves */
    double perplexity;                      /* document completion; NaN without held tokens */
} rt_infer_result;

/* `rotor export`: how to write a saved model as single files. */
typedef enum rt_export_format {
    RT_EXPORT_NPY,   /* W.npy, H.npy, ... : the single-file model layout */
    RT_EXPORT_LIBMF, /* LIBMF's model text (MF models) */
    RT_EXPORT_TEXT,  /* one line per row: original id, then the values */
} rt_export_format;
extern const rt_opt_choice rt_export_formats[];

typedef struct rt_export_opts {
    const char *out; /* directory to write (replaced as a whole) */
    int format;      /* rt_export_format */
    uint64_t memory; /* bytes of buffers to merge with */
    int quiet;       /* no progress */
} rt_export_opts;

struct rt_state_io; /* apps/app_common.h */

typedef struct rt_app_desc {
    const char *name;     /* value of --app */
    rt_plan_app plan_app; /* plans it accepts */
    /* The app's options (ground/opts.h): offsets into its options struct of
     * opts_size bytes, which train allocates zeroed and fills. */
    const rt_opt *options;
    size_t opts_size;
    void (*opts_init)(void *opts); /* before parsing, or NULL */
    /* After parsing: defaults that depend on other options, or NULL. */
    int (*opts_done)(void *opts, rt_error *err);
    /* Check the options against a plan (e.g. a plan made for another app). */
    int (*check)(const void *opts, const rt_plan *plan, rt_error *err);
    /* Largest payload any block will carry (bytes). */
    int (*slot_bytes)(const void *opts, const rt_plan *plan, size_t *bytes, rt_error *err);
    /* Optional, for rotor simulate: the payload of each of the plan's blocks
     * (bytes[b], b < plan->blocks).  NULL: a payload grows with the block's
     * columns, up to slot_bytes (true of MF's factor blocks; not of LDA's,
     * whose blocks are balanced by tokens and whose payloads follow them).
     * The largest of them is slot_bytes: simulate takes it from here. */
    int (*block_bytes)(const void *opts, const rt_plan *plan, double *bytes, rt_error *err);
    /* Load this node's shards and state; the engine is created but not run. */
    int (*create)(const void *opts, const rt_plan *plan, rt_engine *eng, void **app, rt_error *err);
    const rt_app_ops *ops;
    /* After the run: write the model under the output directory (rank 0
     * writes; every rank calls, for the collectives). */
    int (*save)(void *app, rt_engine *eng, rt_error *err);
    void (*destroy)(void *app);

    /* ---- plans (NULL: the app needs nothing beyond the partitioner's files) ----
     * Write the app's own files into a plan being built in `tmp_dir` (before
     * it is committed; see rt_plan_options.before_commit). */
    int (*plan_side_files)(const char *tmp_dir, uint64_t plan_id, const rt_plan_input *in,
                           rt_error *err);

    /* ---- a saved model, without an engine (see rt_model_open) ---- */
    int (*model_load)(const char *dir, void **model, rt_error *err);
    void (*model_free)(void *model);
    /* Rating models (NULL otherwise): the original ids of the model's rows
     * and columns (dense id i = string i; lookups only), and the prediction
     * for dense (row, col), computed as training computes it. */
    void (*model_ids)(void *model, rt_idmap **rows, rt_idmap **cols);
    float (*model_predict)(const void *model, uint32_t row, uint32_t col);
    /* The same predictions for a block: rows[0..n_rows) against the columns
     * [col0, col0 + n_cols), into out[i * n_cols + j], each bit for bit what
     * model_predict gives (recommend and the ranking metrics score with it). */
    void (*model_scores)(const void *model, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                         uint32_t n_cols, float *out);
    /* Topic models (NULL otherwise): one line per topic with its share of
     * the tokens and its `top` most frequent words. */
    int (*model_topics)(const void *model, uint32_t top, FILE *out, rt_error *err);
    /* Topic models (NULL otherwise): the topic mixtures of new documents,
     * written under o->out (rotor infer; see rt_infer_opts). */
    int (*model_infer)(const void *model, const rt_corpus *docs, const rt_infer_opts *o,
                       rt_infer_result *res, rt_error *err);

    /* ---- training state, for an exact resume ----
     * Between rotations (every block home), walk ITS part of the training
     * state on this rank (its workers' rows, counts and assignments, the
     * optimiser state, the schedule's memory) through io, section by
     * section: the same walk writes the sections (a checkpoint) or reads
     * them back (a resume, after create and before the engine runs).  The
     * home blocks' payloads and the file around it are written by
     * apps/checkpoint.c.  The resumed run ends bit-identical to one never
     * interrupted.  Called on every rank (no collectives inside); NULL: the
     * app cannot checkpoint. */
    int (*state_io)(void *app, struct rt_state_io *io, rt_error *err);
    /* The whole epochs / sweeps / outer iterations done so far (the unit of
     * the app's run length and of --checkpoint-every), the same on every
     * rank; NULL when each rotation is one (the count is then the next
     * rotation). */
    uint64_t (*epochs_done)(const void *app);
    /* After a resume: 1 when the state read back is already at the run's
     * end (its length reached, or it stopped early), given the rotation it
     * continues with; the same on every rank.  The engine then runs no
     * rotation, so a finished run resumed (its last checkpoint is written
     * at its end) saves the model the run had, rather than one trained a
     * rotation further.  NULL: the app cannot resume. */
    int (*finished)(const void *app, uint64_t next_rotation);
    /* After a resume: 0 when the state read back is not past the run's
     * length, else -1 with exit 2 naming both.  A checkpoint of a longer run
     * resumed with --epochs (--iters, --outer) below its own is at the end
     * of this run for `finished`, which would save the longer run's model as
     * this one's, exit 0.  NULL: not checked. */
    int (*check_length)(const void *app, uint64_t next_rotation, rt_error *err);
    /* Merge the model at `dir` into single files (`rotor export`). */
    int (*model_export)(const char *dir, const struct rt_export_opts *o, rt_error *err);
} rt_app_desc;

extern const rt_app_desc rt_app_sgd_mf;
extern const rt_app_desc rt_app_cd_mf;
extern const rt_app_desc rt_app_lda;

/* NULL-terminated list of every app built in. */
extern const rt_app_desc *const rt_apps[];
/* The names for an --app option (ground/opts.h); value = index in rt_apps. */
extern const rt_opt_choice rt_app_choices[];
const rt_app_desc *rt_app_find(const char *name);

/* The side files every app that trains on plans of in->app wants in a plan
 * (rotor partition calls this from rt_plan_options.before_commit). */
int rt_apps_plan_side_files(const char *tmp_dir, uint64_t plan_id, const rt_plan_input *in,
                            rt_error *err);

/* ---- running an app, with checkpoints (apps/checkpoint.c) ----
 * With cfg->dir set, the run writes a checkpoint at the first rotation
 * boundary after every cfg->every epochs (sweeps, outer iterations:
 * rt_app_desc.epochs_done) and after the last rotation: CFG_DIR/ckpt-N/ with every rank's state
 * file (state_io) and, last, rank 0's manifest.json; the newest two complete ones are kept.  The
 * directory must be one every rank sees. */
typedef struct rt_checkpoint_config {
    const char *dir; /* NULL: no checkpoints */
    uint64_t every;  /* epochs between checkpoints (>= 1) */
    const char *job; /* "name=value" lines describing the job (plan, app, split, options),
                        kept in the manifest so that a resume can check them; may be NULL */
} rt_checkpoint_config;
int rt_app_run(const rt_app_desc *app, void *state, rt_engine *eng, const rt_plan *plan,
               const rt_checkpoint_config *cfg, rt_error *err);
/* The newest complete checkpoint under root: its directory and the rotation
 * the run continues with (the engine's first_rotation).  Newer incomplete
 * ones (a run stopped while writing them) are skipped with a note.  The
 * checkpoint must be of --app `app` (else exit 2 naming both), and with
 * `job` set, the job the checkpoint was written by must be the same but for
 * the length of the run (--epochs, --iters, --outer): else exit 2 naming the
 * first field that differs and both values. */
int rt_checkpoint_latest(const char *root, const char *app, const char *job, char *dir, size_t cap,
                         uint64_t *next_rotation, rt_error *err);
/* Before a run writes checkpoints under root: every complete checkpoint
 * already there is of --app `app` and `job` but for its length.  The
 * newest two of any job are kept, so another job's newer ones would make
 * this run's be deleted as they are written (and a resume then find only
 * the other job's), and its older ones would be deleted by this run: exit 2
 * naming one and the first field that differs.  0 when root is missing. */
int rt_checkpoint_check_root(const char *root, const char *app, const char *job, rt_error *err);
/* After create, before the run: load this rank's state from a checkpoint
 * directory (checks that it continues at next_rotation and, when job is
 * set, that the job its state file records is `job` but for the run's
 * length, as for the manifest). */
int rt_app_resume(const rt_app_desc *app, void *state, rt_engine *eng, const rt_plan *plan,
                  const char *dir, const char *job, uint64_t next_rotation, rt_error *err);
/* check_length's refusal in one wording for every app: the checkpoint is
 * after `done` of `unit` ("epoch", "sweep"), past this run's `option`
 * (--epochs, --iters) of `length`.  Returns -1 (exit 2). */
int rt_resume_past_length(rt_error *err, const char *unit, uint64_t done, const char *option,
                          unsigned length);

/* A saved model: model.json's "app" names the app whose model_load read it. */
typedef struct rt_model {
    const rt_app_desc *app;
    void *impl;
} rt_model;
int rt_model_open(const char *dir, rt_model *model, rt_error *err);
/* Write the model at `dir` as single files (the app's model_export). */
int rt_model_export(const char *dir, const rt_export_opts *o, rt_error *err);
void rt_model_close(rt_model *model);

/* For `rotor --version`: the SGD kernel paths built in, and the one
 * `--kernel auto` picks on this CPU. */
const char *rt_apps_sgd_kernels(void);
const char *rt_apps_sgd_kernel_best(void);
/* ---- ranking (apps/ranking.c): top-K lists and their metrics ----
 *
 * Items per user as sorted lists (CSR over dense rows): a model's training
 * items (excluded from recommendations), a test file's relevant items. */
typedef struct rt_user_items {
    uint64_t n_rows, n_cols;
    uint64_t *off;   /* n_rows + 1 */
    uint32_t *items; /* off[u]..off[u+1]: user u's items, ascending, distinct */
} rt_user_items;

/* The distinct (row, col) pairs of t (dense ids below n_rows, n_cols). */
int rt_user_items_build(const rt_triplets *t, uint64_t n_rows, uint64_t n_cols, rt_user_items *out,
                        rt_error *err);
/* The items of a ratings file, by the original ids of rows/cols (ratings
 * with ids the maps lack are dropped and counted in *unknown). */
int rt_user_items_read(const char *path, rt_rating_format fmt, rt_idmap *rows, rt_idmap *cols,
                       float min_value, rt_user_items *out, uint64_t *unknown, rt_error *err);
/* The training items of the plan the model in `dir` was trained on
 * (model.json's "plan", checked against its "plan_id" and sizes).  When it
 * cannot be opened the message names --exclude and --no-exclude. */
int rt_model_plan_items(const char *dir, const rt_model *m, rt_user_items *out, rt_error *err);
/* What a ranking leaves out: nothing (none), the ratings of `file`, or else
 * the model's plan; *source says which ("none", the file, "plan"). */
int rt_user_items_exclusions(const char *dir, const rt_model *m, const char *file, int none,
                             rt_user_items *out, const char **source, rt_error *err);
void rt_user_items_free(rt_user_items *u);
static inline uint64_t rt_user_items_count(const rt_user_items *u, uint64_t row)
{
    return u->off[row + 1] - u->off[row];
}

/* What ranks the items: scores of rows x a range of columns, as the
 * model_scores hook computes them. */
typedef struct rt_scorer {
    void (*scores)(const void *ctx, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                   uint32_t n_cols, float *out);
    const void *ctx;
    uint64_t n_rows, n_cols;
} rt_scorer;
/* The model's own predictions (a rating model: model_scores set). */
rt_scorer rt_model_scorer(const rt_model *m);
/* The most-popular baseline: every user gets pop[j] (n_cols floats, kept by
 * the caller) for item j. */
rt_scorer rt_popularity_scorer(const float *pop, uint64_t n_rows, uint64_t n_cols);
/* pop[j] = number of users with item j in `items` (malloc'd, NULL on OOM). */
float *rt_item_popularity(const rt_user_items *items);

typedef struct rt_topk_opts {
    uint32_t k;
    uint32_t threads;             /* 0 = 1 */
    uint32_t batch;               /* users scored per block (0 = 4096): bounds memory */
    const rt_user_items *exclude; /* never recommended to their user; NULL = none */
    rt_progress *progress;        /* users done, or NULL */
} rt_topk_opts;

/* A block of results, in user order: user users[i] got count[i] <= k items,
 * items[i * k ..] with scores[i * k ..], best first (higher score; equal
 * scores by smaller item id).  Non-zero (err set) stops rt_topk. */
typedef int (*rt_topk_sink)(void *ctx, const uint32_t *users, uint32_t n, const uint32_t *items,
                            const float *scores, const uint32_t *count, uint32_t k, rt_error *err);

/* The k best items of each of users[0..n_users) (dense ids), in blocks of
 * opt->batch users x all items, each block split among opt->threads threads;
 * a NaN score (or an excluded item) is never recommended. */
int rt_topk(const rt_scorer *s, const uint32_t *users, uint64_t n_users, const rt_topk_opts *opt,
            rt_topk_sink sink, void *ctx, rt_error *err);

/* Ranking metrics at K, means over the users with at least one relevant
 * item (definitions in README.md, "Ranking metrics"). */
typedef struct rt_rank_metrics {
    uint32_t k;
    uint64_t users;    /* users evaluated */
    uint64_t relevant; /* their relevant items */
    double precision;  /* hits / K */
    double recall;     /* hits / relevant */
    double ndcg;       /* DCG / ideal DCG, binary gains */
    double map;        /* average precision at K, / min(relevant, K) */
    double coverage;   /* distinct items recommended / items */
} rt_rank_metrics;

/* The users of `relevant` with at least one relevant item not in `exclude`
 * (NULL: none), ascending, the ones ranking metrics average over (malloc'd,
 * NULL on OOM; *n of them). */
uint32_t *rt_rank_users(const rt_user_items *relevant, const rt_user_items *exclude, uint64_t *n);
/* The metrics of the top-K lists of users[0..n_users) added to *sums as
 * sums over users, not means (precision, recall, ndcg, map, relevant and
 * users), so that parts of the users can be ranked apart (a rank's own
 * rows in training) and added up; items recommended set their flag in
 * recommended[] (n_cols, or NULL). */
int rt_rank_metrics_sum(const rt_scorer *s, const rt_user_items *relevant, const uint32_t *users,
                        uint64_t n_users, const rt_topk_opts *opt, uint8_t *recommended,
                        rt_rank_metrics *sums, rt_error *err);
/* The metrics of s's top-K lists (opt) against `relevant` (the test items;
 * those in opt->exclude are not counted as relevant, they cannot be
 * recommended). */
int rt_rank_evaluate(const rt_scorer *s, const rt_user_items *relevant, const rt_topk_opts *opt,
                     rt_rank_metrics *out, rt_error *err);

/* A zeroed options struct for the app (free() it), initialised for parsing. */
void *rt_app_opts_alloc(const rt_app_desc *app);
/* The app's options from argv[1..] with its own table alone (train adds its
 * own options to the same parse).  0 with malloc'd *opts, 1 after printing
 * the table (--help), or -1 with err (exit code 2) and *opts NULL. */
int rt_app_parse(const rt_app_desc *app, int argc, char **argv, void **opts, rt_error *err);

#endif
