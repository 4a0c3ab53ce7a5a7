/* gen.h - `rotor gen` generators of data with planted structure.
 * Each takes the arguments after "gen" (argv[0] is "mf" / "lda") and returns
 * the exit status (0 ok, 1 runtime failure, 2 bad usage). */
#ifndef ROTOR_TOOLS_GEN_H
#define ROTOR_TOOLS_GEN_H

int gen_mf_main(int argc, char **argv);  /* tools/gen_mf.c: planted low-rank ratings */
int gen_lda_main(int argc, char **argv); /* tools/gen_lda.c: planted topics */

#endif
