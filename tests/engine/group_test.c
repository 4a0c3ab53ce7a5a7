/* group_test.c - rank and size from flags or the launcher's environment
 * (flags > rotor launch > Open MPI > PMIx > MVAPICH2 > PMI > Flux > Slurm,
 * tools/launch_env.c, then rt_group_resolve) and rt_hostfile_read (formats,
 * errors as "FILE:LINE: what was wrong"). */
#define _GNU_SOURCE
#include "engine/engine.h"
#include "tools/launch_env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const char *const all_vars[] = {
    "ROTOR_RANK",
    "ROTOR_SIZE",
    "ROTOR_LOCAL_RANK",
    "ROTOR_HOSTFILE",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_SIZE",
    "FLUX_TASK_RANK",
    "FLUX_JOB_SIZE",
    "ROTOR_TOKEN",
};

/* What rotor train does: the environment fills what flags left unset. */
static int resolve(const rt_group_config *cfg, rt_group *g, rt_error *err)
{
    rt_group_config c = *cfg;
    if (rt_launch_env_group(&c, err))
        return -1;
    return rt_group_resolve(&c, g, err);
}

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
        unsetenv(all_vars[i]);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/rotor-group-test.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rt_remove_tree(tmpdir);
    return 0;
}

/* Write `text` to a fresh file in tmpdir; returns its path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

static rt_group_config cfg_env(void)
{
    rt_group_config c = {
        .rank = -1, .size = -1, .local_rank = -1, .hostfile = NULL, .base_port = 0};
    return c;
}

/* Resolve c into g, which must name the launcher SOURCE and rank RANK
 * (further checks may follow; the caller frees g). */
static void resolve_as(const rt_group_config *c, rt_group *g, const char *source, int rank)
{
    rt_error err;
    assert_int_equal(resolve(c, g, &err), 0);
    assert_string_equal(g->source, source);
    assert_int_equal(g->rank, rank);
}

static void test_single_process(void **state)
{
    (void)state;
    rt_group g;
    rt_error err;
    rt_group_config c = cfg_env();
    assert_int_equal(resolve(&c, &g, &err), 0);
    assert_int_equal(g.rank, 0);
    assert_int_equal(g.size, 1);
    assert_int_equal(g.local_rank, 0);
    assert_null(g.peers);
    assert_string_equal(g.source, "single process");
    rt_group_free(&g);
}

static void test_precedence(void **state)
{
    (void)state;
    const char *hf = write_file("hosts4", "127.0.0.1\n127.0.0.1\n127.0.0.1\n127.0.0.1\n");
    setenv("ROTOR_HOSTFILE", hf, 1);
    setenv("SLURM_PROCID", "3", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_LOCALID", "1", 1);
    rt_group g;
    rt_group_config c = cfg_env();
    resolve_as(&c, &g, "slurm", 3);
    assert_int_equal(g.local_rank, 1);
    rt_group_free(&g);

    setenv("PMI_RANK", "2", 1);
    setenv("PMI_SIZE", "4", 1);
    resolve_as(&c, &g, "pmi", 2);
    assert_int_equal(g.local_rank, 2); /* no MPI_LOCALRANKID: the rank */
    rt_group_free(&g);

    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    resolve_as(&c, &g, "mpirun", 1);
    assert_int_equal(g.local_rank, 0);
    rt_group_free(&g);

    setenv("ROTOR_RANK", "0", 1);
    setenv("ROTOR_SIZE", "4", 1);
    resolve_as(&c, &g, "rotor launch", 0);
    assert_int_equal(g.size, 4);
    assert_non_null(g.peers);
    assert_string_equal(g.peers[3].host, "127.0.0.1");
    assert_int_equal(g.peers[3].port, 18515 + 3);
    rt_group_free(&g);

    /* Flags beat everything; an explicit hostfile beats ROTOR_HOSTFILE. */
    const char *hf2 = write_file("hosts2", "::1 7000\n[::1]:7001\n");
    c.rank = 1;
    c.size = 2;
    c.hostfile = hf2;
    resolve_as(&c, &g, "flags", 1);
    assert_string_equal(g.peers[0].host, "::1");
    assert_int_equal(g.peers[0].port, 7000);
    assert_int_equal(g.peers[1].port, 7001);
    rt_group_free(&g);
}

/* Newer launchers, and mpirun inside a Slurm allocation. */
static void test_more_launchers(void **state)
{
    (void)state;
    const char *hf = write_file("hosts6", "127.0.0.1\n127.0.0.1\n127.0.0.1\n"
                                          "127.0.0.1\n127.0.0.1\n127.0.0.1\n");
    setenv("ROTOR_HOSTFILE", hf, 1);
    rt_group g;
    rt_error err;
    rt_group_config c = cfg_env();

    setenv("SLURM_PROCID", "0", 1); /* the allocation's own task */
    setenv("SLURM_NTASKS", "1", 1);
    setenv("FLUX_TASK_RANK", "4", 1);
    setenv("FLUX_JOB_SIZE", "6", 1);
    resolve_as(&c, &g, "flux", 4);
    assert_int_equal(g.size, 6);
    rt_group_free(&g);

    setenv("MV2_COMM_WORLD_RANK", "2", 1);
    setenv("MV2_COMM_WORLD_SIZE", "6", 1);
    resolve_as(&c, &g, "mvapich2", 2);
    rt_group_free(&g);

    /* PMIx alone: the size from the other variables (here Open MPI's) */
    setenv("PMIX_RANK", "5", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
    resolve_as(&c, &g, "pmix", 5);
    assert_int_equal(g.size, 6);
    rt_group_free(&g);

    /* Open MPI's own rank beats PMIx and, above all, Slurm's */
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    resolve_as(&c, &g, "mpirun", 3);
    rt_group_free(&g);

    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("MV2_COMM_WORLD_RANK");
    unsetenv("FLUX_TASK_RANK");
    unsetenv("FLUX_JOB_SIZE");
    unsetenv("SLURM_NTASKS");
    /* PMIx with no size anywhere: named */
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_non_null(strstr(err.msg, "PMIX_RANK"));
    for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
        unsetenv(all_vars[i]);
}

/* A group of `size` ranks as rt_group_resolve leaves it; `pmix_secret` is
 * what PMIx handed over ("" when it did not). */
static rt_group group_of(int size, const char *pmix_secret)
{
    rt_group g = {.rank = 0, .size = size};
    snprintf(g.secret, sizeof(g.secret), "%s", pmix_secret);
    return g;
}

/* The job secret: needed by several processes, --insecure runs without. */
static void test_secret(void **state)
{
    (void)state;
    rt_transport_config tc;
    rt_transport_config_init(&tc);
    rt_error err;
    rt_group one = group_of(1, ""), four = group_of(4, "");
    unsetenv("ROTOR_TOKEN");
    assert_int_equal(rt_launch_env_secret_given(NULL), 0);
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &one, &err), 0);
    assert_int_equal(tc.secure, 0);
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &four, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "--insecure"));
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 1, &four, &err), 0);
    assert_int_equal(tc.secure, 0);

    setenv("ROTOR_TOKEN", "s3cret", 1);
    assert_int_equal(rt_launch_env_secret_given(NULL), 1);
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &four, &err), 0);
    assert_int_equal(tc.secure, 1);
    assert_null(getenv("ROTOR_TOKEN")); /* not passed on */
    uint8_t from_env[32];
    memcpy(from_env, tc.job_key, 32);

    const char *path = write_file("token", "s3cret\n");
    assert_int_equal(rt_launch_env_secret_given(path), 1);
    assert_int_equal(rt_launch_env_secret(&tc, path, 0, &four, &err), 0);
    assert_memory_equal(tc.job_key, from_env, 32);
    path = write_file("token2", "other\n");
    assert_int_equal(rt_launch_env_secret(&tc, path, 0, &four, &err), 0);
    assert_memory_not_equal(tc.job_key, from_env, 32);
    path = write_file("empty", "\n");
    assert_int_equal(rt_launch_env_secret(&tc, path, 0, &four, &err), -1);
    assert_non_null(strstr(err.msg, ":1:"));
}

/* A secret is never cut: ROTOR_TOKEN up to RT_TOKEN_MAX bytes counts whole
 * (two that share all but their last byte give different keys), a longer
 * one is refused naming the variable (it was cut at 4095 bytes, so any two
 * sharing those authenticated each other), as a longer token file is. */
static void test_secret_never_cut(void **state)
{
    (void)state;
    rt_transport_config tc;
    rt_transport_config_init(&tc);
    rt_error err;
    rt_group four = group_of(4, "");
    static char a[RT_TOKEN_MAX + 2], b[RT_TOKEN_MAX + 2];
    memset(a, 'x', RT_TOKEN_MAX);
    memcpy(b, a, sizeof(b));
    b[RT_TOKEN_MAX - 1] = 'y';
    uint8_t key_a[RT_JOB_KEY_BYTES];
    setenv("ROTOR_TOKEN", a, 1);
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &four, &err), 0);
    memcpy(key_a, tc.job_key, sizeof(key_a));
    setenv("ROTOR_TOKEN", b, 1);
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &four, &err), 0);
    assert_memory_not_equal(tc.job_key, key_a, RT_JOB_KEY_BYTES);

    a[RT_TOKEN_MAX] = 'a';
    b[RT_TOKEN_MAX - 1] = 'x';
    b[RT_TOKEN_MAX] = 'b';
    const char *token;
    for (const char *t = a; t; t = t == a ? b : NULL) {
        setenv("ROTOR_TOKEN", t, 1);
        assert_int_equal(rt_launch_env_token(&token, &err), -1);
        assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &four, &err), -1);
        assert_int_equal(err.code, RT_EXIT_INPUT);
        assert_non_null(strstr(err.msg, "ROTOR_TOKEN is 4096 bytes, longer than the 4095"));
    }
    unsetenv("ROTOR_TOKEN");
    assert_int_equal(rt_launch_env_token(&token, &err), 0);
    assert_null(token);
}

/* A secret PMIx handed over is used when none was given, and an explicit
 * one (ROTOR_TOKEN, --token-file) wins over it. */
static void test_secret_from_pmix(void **state)
{
    (void)state;
    rt_transport_config tc;
    rt_transport_config_init(&tc);
    rt_error err;
    char made[RT_GROUP_SECRET_CAP];
    assert_int_equal(rt_transport_new_secret(made, sizeof(made), &err), 0);
    assert_int_equal(strlen(made), RT_GROUP_SECRET_CAP - 1);
    rt_group g = group_of(4, made);
    uint8_t want[RT_JOB_KEY_BYTES];
    assert_int_equal(rt_transport_job_key(made, strlen(made), want, &err), 0);

    unsetenv("ROTOR_TOKEN");
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &g, &err), 0);
    assert_int_equal(tc.secure, 1);
    assert_memory_equal(tc.job_key, want, RT_JOB_KEY_BYTES);

    uint8_t given[RT_JOB_KEY_BYTES];
    assert_int_equal(rt_transport_job_key("s3cret", 6, given, &err), 0);
    setenv("ROTOR_TOKEN", "s3cret", 1);
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 0, &g, &err), 0);
    assert_memory_equal(tc.job_key, given, RT_JOB_KEY_BYTES);
    const char *path = write_file("token3", "s3cret\n");
    memset(tc.job_key, 0, sizeof(tc.job_key));
    assert_int_equal(rt_launch_env_secret(&tc, path, 0, &g, &err), 0);
    assert_memory_equal(tc.job_key, given, RT_JOB_KEY_BYTES);

    /* --insecure stays insecure, whatever PMIx handed over */
    assert_int_equal(rt_launch_env_secret(&tc, NULL, 1, &g, &err), 0);
    assert_int_equal(tc.secure, 0);

    rt_group_forget_secret(&g);
    for (size_t i = 0; i < sizeof(g.secret); i++)
        assert_int_equal(g.secret[i], 0);
}

static void test_bad_identity(void **state)
{
    (void)state;
    rt_group g;
    rt_error err;
    rt_group_config c = cfg_env();

    setenv("ROTOR_RANK", "3", 1);
    setenv("ROTOR_SIZE", "3", 1);
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "rank 3"));

    setenv("ROTOR_RANK", "x1", 1);
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_non_null(strstr(err.msg, "ROTOR_RANK"));

    unsetenv("ROTOR_SIZE");
    setenv("ROTOR_RANK", "0", 1);
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_non_null(strstr(err.msg, "ROTOR_SIZE"));

    /* size > 1 without any hostfile */
    setenv("ROTOR_SIZE", "2", 1);
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "hostfile"));

    /* rank flag without size; the message names no particular tool's flags
     * (rotor train says --node/--nodes, bench-link --rank/--size) */
    c.rank = 1;
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "given together"));
    assert_null(strstr(err.msg, "--"));

    /* size flag (> 1) without rank */
    c.rank = -1;
    c.size = 2;
    assert_int_equal(resolve(&c, &g, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "given together"));
}

/* Entry i of a read hostfile is host:port. */
static void expect_peer(const rt_peer *p, int i, const char *host, int port)
{
    assert_string_equal(p[i].host, host);
    assert_int_equal(p[i].port, port);
}

static void test_hostfile_formats(void **state)
{
    (void)state;
    const char *hf = write_file("formats", "# cluster\n"
                                           "\n"
                                           "node-a            # rank 0, base port\n"
                                           "10.0.0.2:9000\n"
                                           "  10.0.0.3   9001  \n"
                                           "[fe80::1]:9002\n"
                                           "[::1]\n"
                                           "fe80::2\n");
    rt_peer *p;
    rt_error err;
    assert_int_equal(rt_hostfile_read(hf, 6, 20000, &p, &err), 0);
    expect_peer(p, 0, "node-a", 20000);
    expect_peer(p, 1, "10.0.0.2", 9000);
    expect_peer(p, 2, "10.0.0.3", 9001);
    expect_peer(p, 3, "fe80::1", 9002);
    expect_peer(p, 4, "::1", 20004);
    expect_peer(p, 5, "fe80::2", 20005);
    free(p);

    /* Saved by an editor: a byte order mark, CRLF, no final newline. */
    hf = write_file("edited", "\xef\xbb\xbf"
                              "10.0.0.1:9000\r\n10.0.0.2:9001");
    assert_int_equal(rt_hostfile_read(hf, 2, 20000, &p, &err), 0);
    expect_peer(p, 0, "10.0.0.1", 9000);
    expect_peer(p, 1, "10.0.0.2", 9001);
    free(p);
    /* Old Mac line ends: a lone '\r' ends a line (a comment's too). */
    hf = write_file("mac", "# two ranks\r10.0.0.1:9000\r\r10.0.0.2:9001\r");
    assert_int_equal(rt_hostfile_read(hf, 2, 20000, &p, &err), 0);
    expect_peer(p, 0, "10.0.0.1", 9000);
    expect_peer(p, 1, "10.0.0.2", 9001);
    free(p);
    hf = write_file("mac2", "10.0.0.1:9000\r\r10.0.0.1:9000\r");
    assert_int_equal(rt_hostfile_read(hf, 2, 20000, &p, &err), -1);
    assert_non_null(strstr(err.msg, "mac2:3: rank 1 has the address of rank 0"));
    /* A byte order mark only at the start: on line 2 it is part of a name,
     * which cannot hold it (named with its line, not by the resolver). */
    hf = write_file("edited2", "10.0.0.1\n\xef\xbb\xbf"
                               "10.0.0.2\n");
    assert_int_equal(rt_hostfile_read(hf, 2, 20000, &p, &err), -1);
    assert_non_null(strstr(err.msg, "edited2:2: bad hostfile entry"));
    assert_non_null(strstr(err.msg, "a host name is letters"));
}

/* The message must start "FILE:LINE: " (line > 0) or "FILE: " (line 0). */
static void expect_where(const rt_error *err, const char *path, int line)
{
    char where[600];
    if (line > 0)
        snprintf(where, sizeof(where), "%s:%d: ", path, line);
    else
        snprintf(where, sizeof(where), "%s: ", path);
    if (strncmp(err->msg, where, strlen(where)) != 0)
        fail_msg("'%s' does not start with '%s'", err->msg, where);
}

/* Each bad hostfile must fail with "FILE:LINE: what was wrong". */
static void expect_bad(const char *text, int size, int line, const char *what)
{
    const char *hf = write_file("bad", text);
    rt_peer *p = (rt_peer *)1;
    rt_error err;
    assert_int_equal(rt_hostfile_read(hf, size, 18515, &p, &err), -1);
    assert_null(p);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    expect_where(&err, hf, line);
    if (!strstr(err.msg, what))
        fail_msg("'%s' does not mention '%s'", err.msg, what);
}

static void test_hostfile_errors(void **state)
{
    (void)state;
    expect_bad("a\nb:99999\n", 2, 2, "port");
    expect_bad("a\n# x\nb:http\n", 2, 3, "port");
    expect_bad("a 1 2\nb\n", 2, 1, "expected");
    expect_bad("[::1:5\nb\n", 2, 1, "]");
    expect_bad("a\nb\nc\n", 2, 3, "more than 2");
    expect_bad("a\n\n# only one\n", 2, 0, "1 entry");
    expect_bad(":5\nb\n", 2, 1, "empty host");
    expect_bad("a\nb:1 2\n", 2, 2, "two ports");
    /* a line longer than the reader's buffer */
    char longline[2100];
    memset(longline, 'h', sizeof(longline) - 2);
    longline[sizeof(longline) - 2] = '\n';
    longline[sizeof(longline) - 1] = '\0';
    char text[2200];
    snprintf(text, sizeof(text), "a\n%s", longline);
    expect_bad(text, 2, 2, "too long");
    rt_peer *p;
    rt_error err;
    assert_int_equal(rt_hostfile_read("/nonexistent/hosts", 2, 18515, &p, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/hosts"));
    /* base port + rank past 65535 */
    const char *hf = write_file("high", "a\nb\n");
    assert_int_equal(rt_hostfile_read(hf, 2, 65535, &p, &err), -1);
    expect_where(&err, hf, 2);
    assert_non_null(strstr(err.msg, "base port"));
    /* no usable group size */
    assert_int_equal(rt_hostfile_read(hf, 0, 18515, &p, &err), -1);
    expect_where(&err, hf, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_more_launchers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_never_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_from_pmix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostfile_formats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostfile_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
