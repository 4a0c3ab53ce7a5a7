/* rotor.c - the `rotor` command: dispatch to subcommands. */
#include "tools/commands.h"
#include "tools/tuning_env.h"
#include "ground/ground.h"

#include <stdio.h>
#include <string.h>

static const char *const gen_subs[] = {"mf", "lda", NULL};

const rotor_command rotor_commands[] = {
    {"gen", cmd_gen, "generate data with planted structure (gen mf | gen lda)", gen_subs},
    {"partition", cmd_partition, "cut data into blocks and precompute the rotation schedule", NULL},
    {"train", cmd_train, "train a model by following a plan (sgd-mf, cd-mf, lda)", NULL},
    {"launch", cmd_launch, "start P local processes of a command on loopback", NULL},
    {"eval", cmd_eval, "score a saved MF model on a ratings file", NULL},
    {"topics", cmd_topics, "print the top words of a trained LDA model", NULL},
    {"infer", cmd_infer, "topic mixtures of new documents under a trained LDA model", NULL},
    {"export", cmd_export, "merge a saved model's per-rank parts into single files", NULL},
    {"plot", cmd_plot, "convergence curves of training runs (--metrics files) as PNG or SVG", NULL},
    {"bench-link", cmd_bench_link, "latency and bandwidth of the transport (like perftest)", NULL},
    {"simulate", cmd_simulate, "predict epoch time, stall and traffic of a schedule on N nodes",
     NULL},
    {"help", cmd_help, "help, man pages (--man) and bash completion (--completion)", NULL},
    {NULL, NULL, NULL, NULL}};

void rotor_usage(FILE *fp)
{
    fprintf(fp, "usage: rotor COMMAND [OPTIONS]\n"
                "       rotor --version\n\n"
                "Scheduled model-parallel training of matrix factorisation and LDA.\n\n"
                "commands:\n");
    for (const rotor_command *c = rotor_commands; c->name; c++)
        fprintf(fp, "  %-11s %s\n", c->name, c->summary);
    fprintf(fp, "\n'rotor COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
    rt_env_apply_log_level();
    if (argc < 2) {
        rotor_usage(stderr);
        return RT_EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        rotor_usage(stdout);
        return RT_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
        return cmd_version();
    for (const rotor_command *c = rotor_commands; c->name; c++)
        if (!strcmp(argv[1], c->name))
            return c->run(argc - 1, argv + 1);
    fprintf(stderr, "rotor: unknown command '%s'\n", argv[1]);
    rotor_usage(stderr);
    return RT_EXIT_INPUT;
}
