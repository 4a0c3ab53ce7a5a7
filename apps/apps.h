/*
 * apps.h - the model kernels that run on the rotation engine.
 *
 * Each app is described by an rt_app_desc: `rotor train --app NAME` finds it
 * in rt_apps[], lets it parse its own options, asks it how large a parameter
 * block can get (the engine sizes its slot window from that), creates it on
 * top of the engine, runs the engine with its ops and finally saves the model.
 *
 *   sgd-mf  L2-regularised SGD matrix factorisation        (apps/sgd_mf*.c)
 *   cd-mf   CCD++ coordinate descent matrix factorisation   (apps/cd_mf*.c)
 *   lda     collapsed Gibbs sampling LDA                     (apps/lda*.c)
 */
#ifndef ROTOR_APPS_H
#define ROTOR_APPS_H

#include "engine/engine.h"

typedef struct rt_app_desc {
    const char *name;     /* value of --app */
    rt_plan_app plan_app; /* plans it accepts */
    const char *usage;    /* app options for `rotor train --help`, one per line */
    /* Parse the app's options (argv[0] is the app name; getopt_long-style
     * "--name value").  Returns malloc'd options in *opts, or -1 with err
     * (exit code 2) naming the bad option. */
    int (*parse)(int argc, char **argv, void **opts, rt_error *err);
    /* Check the options against a plan (e.g. a plan made for another app). */
    int (*check)(const void *opts, const rt_plan *plan, rt_error *err);
    /* Largest payload any block will carry (bytes). */
    int (*slot_bytes)(const void *opts, const rt_plan *plan, size_t *bytes, rt_error *err);
    /* Load this node's shards and state; the engine is created but not run. */
    int (*create)(const void *opts, const rt_plan *plan, rt_engine *eng, void **app, rt_error *err);
    const rt_app_ops *ops;
    /* After the run: write the model under the output directory (rank 0
     * writes; every rank calls, for the collectives). */
    int (*save)(void *app, rt_engine *eng, rt_error *err);
    void (*destroy)(void *app);
} rt_app_desc;

extern const rt_app_desc rt_app_sgd_mf;
extern const rt_app_desc rt_app_cd_mf;
extern const rt_app_desc rt_app_lda;

/* NULL-terminated list of every app built in. */
extern const rt_app_desc *const rt_apps[];
const rt_app_desc *rt_app_find(const char *name);

#endif
