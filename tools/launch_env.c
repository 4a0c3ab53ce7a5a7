/*
 * launch_env.c - rank, size and secret from the launcher's environment.
 *
 * Rank and size come from the first source that is present, in this order:
 *   1. flags (--node/--nodes, --rank/--size): nothing is read here
 *   2. rotor launch:  ROTOR_RANK, ROTOR_SIZE, ROTOR_LOCAL_RANK
 *   3. Open MPI:      OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
 *   4. PMIx:          PMIX_RANK, with the size from OMPI_COMM_WORLD_SIZE,
 *                     OMPI_UNIVERSE_SIZE, PMI_SIZE, SLURM_NTASKS or
 *                     FLUX_JOB_SIZE, else (newer Open MPI may set only
 *                     PMIX_RANK) from the PMIx server itself
 *   5. MVAPICH2:      MV2_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
 *   6. PMI (MPICH, Intel MPI, srun --mpi=pmi2): PMI_RANK, PMI_SIZE,
 *                     MPI_LOCALRANKID
 *   7. Flux:          FLUX_TASK_RANK, FLUX_JOB_SIZE, FLUX_TASK_LOCAL_ID
 *   8. Slurm:         SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
 *   9. otherwise a single process.
 * MPI launchers come before Slurm: mpirun inside a Slurm allocation inherits
 * the allocation's SLURM_* variables, which describe the allocation's own
 * task, not the MPI job.  (Processes per host, for pinning, come from
 * tuning_env.c.)
 *
 * Under Open MPI or any PMIx launcher (PMIX_RANK set: mpirun, srun
 * --mpi=pmix) with no hostfile, and when this rotor was built with PMIx,
 * the ranks find each other through the PMIx server (engine/pmix.c).
 *
 * The job secret, from the first source that is present:
 *   1. --token-file FILE
 *   2. ROTOR_TOKEN (rotor launch sets it for its children; environment
 *      variables are readable only by the user, unlike command lines, which
 *      `ps` shows to everyone)
 *   3. PMIx, when the group came through it: rank 0 makes one and the PMIx
 *      server hands it to the job's other ranks (engine/pmix.c)
 * --insecure runs without one.  The log says which it was.
 */
#define _GNU_SOURCE
#include "tools/launch_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct env_source {
    const char *name; /* for rt_group.source and messages */
    const char *rank, *local;
    const char *size[5]; /* the first one set gives the size */
} env_source;

static const env_source sources[] = {
    {"rotor launch", "ROTOR_RANK", "ROTOR_LOCAL_RANK", {"ROTOR_SIZE"}},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", {"OMPI_COMM_WORLD_SIZE"}},
    {"pmix",
     "PMIX_RANK",
     "OMPI_COMM_WORLD_LOCAL_RANK",
     {"OMPI_COMM_WORLD_SIZE", "OMPI_UNIVERSE_SIZE", "PMI_SIZE", "SLURM_NTASKS", "FLUX_JOB_SIZE"}},
    {"mvapich2", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", {"MV2_COMM_WORLD_SIZE"}},
    {"pmi", "PMI_RANK", "MPI_LOCALRANKID", {"PMI_SIZE"}},
    {"flux", "FLUX_TASK_RANK", "FLUX_TASK_LOCAL_ID", {"FLUX_JOB_SIZE"}},
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", {"SLURM_NTASKS"}},
};

/* Parse environment variable `var` as a non-negative int into *out.
 * Returns 1 if set and valid, 0 if unset or empty, -1 (err set) if invalid. */
static int env_int(const char *var, int *out, rt_error *err)
{
    const char *s = var ? getenv(var) : NULL;
    if (!s || !*s)
        return 0;
    if (rt_parse_int(s, out) || *out < 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s='%s' is not a non-negative integer", var, s);
    return 1;
}

/* The size of source s: the first of its size variables that is set, or
 * -1 (PMIx will tell) under a PMIx launcher when this build has PMIx. */
static int env_size(const env_source *s, int *size, rt_error *err)
{
    for (size_t i = 0; i < sizeof(s->size) / sizeof(s->size[0]) && s->size[i]; i++) {
        int rc = env_int(s->size[i], size, err);
        if (rc)
            return rc;
    }
    if (getenv("PMIX_RANK") && rt_pmix_compiled()) {
        *size = -1;
        return 1;
    }
    return rt_fail(err, RT_EXIT_INPUT, "%s is set but %s is not", s->rank, s->size[0]);
}

/* Optional local rank: left alone when unset. */
static int env_local(const env_source *s, rt_group_config *cfg, rt_error *err)
{
    int v;
    int rc = env_int(s->local, &v, err);
    if (rc < 0)
        return -1;
    if (rc > 0 && cfg->local_rank < 0)
        cfg->local_rank = v;
    return 0;
}

int rt_launch_env_group(rt_group_config *cfg, rt_error *err)
{
    if ((!cfg->hostfile || !*cfg->hostfile) && getenv("ROTOR_HOSTFILE") &&
        *getenv("ROTOR_HOSTFILE"))
        cfg->hostfile = getenv("ROTOR_HOSTFILE");
    if (cfg->rank >= 0 || cfg->size >= 0)
        return 0; /* flags */
    for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        const env_source *s = &sources[i];
        int rank, size;
        int rc = env_int(s->rank, &rank, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        if (env_size(s, &size, err) < 0)
            return -1;
        if (env_local(s, cfg, err))
            return -1;
        cfg->rank = rank;
        cfg->size = size;
        cfg->source = s->name;
        /* Through PMIx (built in, a PMIx launcher): the peers when there is
         * no hostfile, the size when no variable gave it. */
        cfg->pmix = getenv("PMIX_RANK") && rt_pmix_compiled() &&
                    (size < 0 || !cfg->hostfile || !*cfg->hostfile);
        return 0;
    }
    return 0;
}

/* Binary bytes, more than one line and a file longer than the buffer are
 * refused: each was cut silently (a NUL or a newline in `head -c 32
 * /dev/urandom` left a secret of the bytes before it, or none). */
int rt_token_file_read(const char *path, char *buf, size_t cap, size_t *len, rt_error *err)
{
    /* the user's data: a FIFO (`--token-file <(pass show rotor)`) is read
     * as a stream, with a word while it waits for its writer */
    FILE *fp = rt_fopen_read(path, RT_READ_DATA, err);
    if (!fp)
        return rt_error_prefix(err, "--token-file");
    struct stat st; /* warned about once it holds a secret (not /dev/zero's "binary data") */
    int exposed = fstat(fileno(fp), &st) == 0 && (st.st_mode & 077);
    size_t n = fread(buf, 1, cap - 1, fp);
    int bad = ferror(fp), e = errno;
    int longer = !bad && n == cap - 1 && fgetc(fp) != EOF;
    fclose(fp);
    if (bad)
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "--token-file: cannot read %s", path);
    buf[n] = '\0';
    /* An editor's UTF-8 byte order mark is not part of the secret (one rank's
     * file saved with it failed to authenticate, for no visible reason). */
    n = rt_utf8_bom_strip(buf, n);
    rt_text_unify_line_ends(buf, n, 0); /* FILE:LINE counts an old Mac file's lines too */
    size_t at = rt_text_find_binary(buf, n);
    uint64_t line = 1;
    for (size_t i = 0; i < at && i < n; i++)
        line += buf[i] == '\n';
    if (at < n)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:%llu: binary data (byte 0x%02x) in the token file: the secret is one "
                       "line of text (make one with 'head -c 32 /dev/urandom | base64')",
                       path, (unsigned long long)line, (unsigned char)buf[at]);
    if (longer)
        return rt_fail(err, RT_EXIT_INPUT, "%s: the token file is longer than %zu bytes", path,
                       cap - 1);
    size_t first = strcspn(buf, "\r\n");
    const char *rest = buf + first + strspn(buf + first, " \t\r\n");
    if (*rest)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:2: the token file holds more than one line; the secret is one line",
                       path);
    buf[first] = '\0';
    if (first == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s:1: the token file is empty", path);
    if (exposed)
        rt_warn("--token-file %s can be read by other users (chmod 600 it)", path);
    *len = first;
    return 0;
}

/* ROTOR_TOKEN's value, NULL when unset or empty: the one read of it, so
 * "given" and "what it is" cannot disagree. */
static const char *env_token(void)
{
    const char *s = getenv("ROTOR_TOKEN");
    return s && *s ? s : NULL;
}

int rt_launch_env_token(const char **token, rt_error *err)
{
    *token = env_token();
    if (*token && strlen(*token) > RT_TOKEN_MAX)
        return rt_fail(err, RT_EXIT_INPUT,
                       "ROTOR_TOKEN is %zu bytes, longer than the %d a job secret may have (make "
                       "one with 'head -c 32 /dev/urandom | base64')",
                       strlen(*token), RT_TOKEN_MAX);
    return 0;
}

int rt_launch_env_secret_given(const char *token_file)
{
    return token_file || env_token();
}

int rt_launch_env_secret(rt_transport_config *tc, const char *token_file, int insecure,
                         const rt_group *g, rt_error *err)
{
    char buf[RT_TOKEN_MAX + 1];
    size_t len = 0;
    const char *secret = NULL, *from = NULL, *env = NULL;
    tc->secure = 0;
    if (!token_file && rt_launch_env_token(&env, err))
        return -1;
    if (token_file) {
        if (rt_token_file_read(token_file, buf, sizeof(buf), &len, err))
            return -1;
        secret = buf;
        from = "--token-file";
    } else if (env) {
        len = strlen(env); /* at most RT_TOKEN_MAX: checked above */
        memcpy(buf, env, len + 1);
        secret = buf;
        from = "ROTOR_TOKEN";
        unsetenv("ROTOR_TOKEN"); /* not for whatever this process starts */
    } else if (g->secret[0]) {
        len = strlen(g->secret);
        secret = g->secret;
        from = "PMIx (made by rank 0 for this job)";
    }
    if (insecure) {
        if (g->size > 1)
            rt_warn("--insecure: this job runs without a secret; any process that reaches "
                    "its ports can join it");
        return 0;
    }
    if (!secret) {
        if (g->size <= 1)
            return 0;
        return rt_fail(err, RT_EXIT_INPUT,
                       "%d processes need a job secret: set ROTOR_TOKEN or pass --token-file "
                       "FILE (rotor launch does it for you; so does mpirun or srun through "
                       "PMIx without a hostfile), or --insecure to run without one",
                       g->size);
    }
    int rc = rt_transport_job_key(secret, len, tc->job_key, err);
    rt_transport_wipe_secret(buf, sizeof(buf));
    if (rc)
        return -1;
    tc->secure = 1;
    if (g->size > 1)
        rt_info("rank %d: job secret from %s", g->rank, from);
    return 0;
}
