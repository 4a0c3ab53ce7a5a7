/* gen.h - `rotor gen` generators of data with planted structure.
 * Each takes the arguments after "gen" (argv[0] is "mf" / "lda") and returns
 * the exit status (0 ok, 1 runtime failure, 2 bad usage). */
#ifndef ROTOR_TOOLS_GEN_H
#define ROTOR_TOOLS_GEN_H

int gen_mf_main(int argc, char **argv);  /* tools/gen_mf.c: planted low-rank ratings */
int gen_lda_main(int argc, char **argv); /* tools/gen_lda.c: planted topics */

/* Are the truth files (FILE.truth.json, FILE.topics.npy, ...) written beside
 * --out FILE?  Only where FILE names a regular file (or none yet): standard
 * output and devices (/dev/null) have no directory of the user's to hold them. */
int gen_companions(const char *out); /* tools/cmd_gen.c */

#endif
