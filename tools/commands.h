/* commands.h - the `rotor` subcommands (tools/cmd_*.c).  Each takes the
 * arguments after the subcommand name (argv[0] is the subcommand) and returns
 * the process exit status: 0 ok, 1 runtime failure, 2 bad input or usage. */
#ifndef ROTOR_TOOLS_COMMANDS_H
#define ROTOR_TOOLS_COMMANDS_H

int cmd_partition(int argc, char **argv);  /* tools/cmd_partition.c */
int cmd_train(int argc, char **argv);      /* tools/cmd_train.c */
int cmd_launch(int argc, char **argv);     /* tools/cmd_launch.c */
int cmd_gen(int argc, char **argv);        /* tools/cmd_gen.c: gen mf | gen lda */
int cmd_topics(int argc, char **argv);     /* tools/cmd_topics.c */
int cmd_bench_link(int argc, char **argv); /* tools/cmd_bench_link.c */
int cmd_eval(int argc, char **argv);       /* tools/cmd_eval.c */
int cmd_simulate(int argc, char **argv);   /* tools/cmd_simulate.c */
int cmd_plot(int argc, char **argv);       /* tools/cmd_plot.c */

#endif
