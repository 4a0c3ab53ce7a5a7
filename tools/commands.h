/* commands.h - the `rotor` subcommands (tools/cmd_*.c).  Each takes the
 * arguments after the subcommand name (argv[0] is the subcommand) and returns
 * the process exit status: 0 ok, 1 runtime failure, 2 bad input or usage. */
#ifndef ROTOR_TOOLS_COMMANDS_H
#define ROTOR_TOOLS_COMMANDS_H

#include "ground/ground.h"

#include <stdio.h>

int cmd_partition(int argc, char **argv);  /* tools/cmd_partition.c */
int cmd_train(int argc, char **argv);      /* tools/cmd_train.c */
int cmd_launch(int argc, char **argv);     /* tools/cmd_launch.c */
int cmd_gen(int argc, char **argv);        /* tools/cmd_gen.c: gen mf | gen lda */
int cmd_topics(int argc, char **argv);     /* tools/cmd_topics.c */
int cmd_infer(int argc, char **argv);      /* tools/cmd_infer.c */
int cmd_bench_link(int argc, char **argv); /* tools/cmd_bench_link.c */
int cmd_eval(int argc, char **argv);       /* tools/cmd_eval.c */
int cmd_recommend(int argc, char **argv);  /* tools/cmd_recommend.c */
int cmd_simulate(int argc, char **argv);   /* tools/cmd_simulate.c */
int cmd_plot(int argc, char **argv);       /* tools/cmd_plot.c */
int cmd_export(int argc, char **argv);     /* tools/cmd_export.c */
int cmd_help(int argc, char **argv);       /* tools/cmd_help.c: help, man pages, completion */
int cmd_version(void);                     /* tools/cmd_help.c: rotor --version */

/* Print "rotor: error: <msg>" (rt_one_line) to stderr and exit(err->code):
 * the command line's last word on a failure (tools/rotor.c; a library
 * returns its errors through rt_error and never exits). */
void rt_die(const rt_error *err) __attribute__((noreturn));

/* "VERSION build HASH16": the sources and configuration rotor was built from
 * (tools/build_identity.c).  Ranks with different identities refuse to run. */
const char *rotor_build_identity(void);

struct rt_command_doc;
struct rt_opt;

/* What each command says about itself (tools/commands.c): the text of
 * its --help, its man page and its line in `rotor --help`. */
extern const struct rt_command_doc rotor_doc_gen, rotor_doc_gen_mf, rotor_doc_gen_lda,
    rotor_doc_partition, rotor_doc_train, rotor_doc_launch, rotor_doc_eval, rotor_doc_recommend,
    rotor_doc_topics, rotor_doc_infer, rotor_doc_export, rotor_doc_plot, rotor_doc_bench_link,
    rotor_doc_simulate, rotor_doc_help;

/* The commands of `rotor` (tools/commands.c), ending with a NULL name. */
typedef struct rotor_command {
    const char *name; /* the word that selects it: "export", or "mf" of `rotor gen mf` */
    int (*run)(int argc, char **argv);
    const struct rt_command_doc *doc; /* its summary, for the list of commands */
    const char *const *subs; /* subcommands with their own options (gen: mf, lda), or NULL */
} rotor_command;
extern const rotor_command rotor_commands[];
void rotor_usage(FILE *fp);

/* Run the command argv[1] of cmds (a table ending with a NULL name) with
 * argv[1..]: none given prints usage to stderr (exit 2), -h or --help to
 * stdout (exit 0).  Returns its exit status, or -1 when argv[1] names none
 * of them (the caller says so). */
int rotor_dispatch(const rotor_command *cmds, void (*usage)(FILE *fp), int argc, char **argv);

/* --model DIR (-m), the saved model that eval, recommend, export, topics
 * and infer open; WRITTEN_BY is the train command line that makes one. */
#define ROTOR_MODEL_OPT(st, field, written_by)                                                     \
    RT_PATH_OPT("model", 'm', st, field, "DIR", NULL, RT_OPT_REQUIRED | RT_OPT_DIR,                \
                "model directory written by " written_by)

/* Parse the options of a command with one option table (ground/opts.h)
 * into dest.  Bad input prints the one-line message and exits 2.  Returns 1
 * when --help was printed (the command then exits 0), else 0. */
int rotor_parse_options(const struct rt_command_doc *doc, const struct rt_opt *table, void *dest,
                        int argc, char **argv);

#endif
