/* launch_env.h - what the launcher's environment says about this process
 * (the only place rotor reads launcher variables; see launch_env.c). */
#ifndef ROTOR_TOOLS_LAUNCH_ENV_H
#define ROTOR_TOOLS_LAUNCH_ENV_H

#include "engine/engine.h"

/* Fill what flags left unset in cfg: rank, size, local rank and size, where
 * they came from, and the hostfile (ROTOR_HOSTFILE).  Returns 0, or -1 with
 * err (exit code 2) for a malformed or half-set variable. */
int rt_launch_env_group(rt_group_config *cfg, rt_error *err);

/* 1 when the job secret is given explicitly (--token-file or ROTOR_TOKEN),
 * so it need not come through PMIx. */
int rt_launch_env_secret_given(const char *token_file);

/* The longest job secret, in bytes, from a --token-file or ROTOR_TOKEN: a
 * longer one is refused, never cut (cut, two secrets sharing their first
 * RT_TOKEN_MAX bytes would authenticate each other). */
#define RT_TOKEN_MAX 4095

/* ROTOR_TOKEN into *token (the environment's own string; NULL when it is
 * unset or empty).  Returns 0, or -1 with err (exit code 2) when it is
 * longer than RT_TOKEN_MAX bytes. */
int rt_launch_env_token(const char **token, rt_error *err);

/* The secret in a --token-file: its one line of text (a final newline, CR
 * LF or trailing blank lines allowed; a UTF-8 byte order mark before it is
 * not part of it), into buf (cap bytes, NUL-terminated),
 * its length in *len (1..cap - 1).  Anything else is exit 2 naming the file
 * (and line).  tests/fuzz/fuzz_token_file.c feeds it arbitrary bytes. */
int rt_token_file_read(const char *path, char *buf, size_t cap, size_t *len, rt_error *err);

/* The job secret: --token-file FILE when given, else ROTOR_TOKEN (removed
 * from the environment once read), else g->secret (from PMIx).  A job of
 * more than one process needs one unless `insecure`.  Logs the source and
 * fills tc->secure and tc->job_key. */
int rt_launch_env_secret(rt_transport_config *tc, const char *token_file, int insecure,
                         const rt_group *g, rt_error *err);

#endif
