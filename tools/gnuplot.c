/* gnuplot.c - render a plot_chart with gnuplot as a child process.
 *
 * gnuplot gets a script file and one data file per series, so nothing of
 * the user's text is ever parsed by a shell; titles and paths go into the
 * script as single-quoted gnuplot strings (where only '' is special). */
#define _GNU_SOURCE
#include "tools/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GNUPLOT_PACKAGE "gnuplot-nox"

extern char **environ;

/* 'text' for gnuplot: quotes doubled, control characters made spaces. */
static void put_quoted(FILE *fp, const char *s)
{
    fputc('\'', fp);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'')
            fputs("''", fp);
        else
            fputc(c < 0x20 || c == 0x7f ? ' ' : c, fp);
    }
    fputc('\'', fp);
}

static int write_series(const char *path, const plot_series *s, rt_error *err)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot create", path);
    for (size_t i = 0; i < s->n; i++)
        fprintf(fp, "%.17g %.17g\n", s->x[i], s->y[i]);
    if (ferror(fp) | fclose(fp))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", path);
    return 0;
}

static int write_script(const char *path, const plot_chart *c, const char *dir, const char *picture,
                        rt_error *err)
{
    FILE *fp = fopen(path, "w");
    if (!fp)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot create", path);
    /* noenhanced: underscores in "test_rmse" are not subscripts */
    if (c->svg)
        fprintf(fp, "set terminal svg size %d,%d noenhanced background rgb 'white'\n", c->width,
                c->height);
    else
        fprintf(fp, "set terminal pngcairo size %d,%d noenhanced\n", c->width, c->height);
    fputs("set output ", fp);
    put_quoted(fp, picture);
    fputs("\nset grid\nset key top right\nset xlabel ", fp);
    put_quoted(fp, c->xlabel);
    fputs("\nset ylabel ", fp);
    put_quoted(fp, c->ylabel);
    fputc('\n', fp);
    if (c->title) {
        fputs("set title ", fp);
        put_quoted(fp, c->title);
        fputc('\n', fp);
    }
    if (c->log_y)
        fputs("set logscale y\n", fp);
    fputs("plot ", fp);
    for (size_t i = 0; i < c->n_series; i++) {
        char data[4200];
        snprintf(data, sizeof(data), "%s/series-%zu.dat", dir, i);
        fputs(i ? ", \\\n     " : "", fp);
        put_quoted(fp, data);
        fputs(" using 1:2 with linespoints pointsize 0.6 title ", fp);
        put_quoted(fp, c->series[i].title);
    }
    fputs("\nset output\n", fp);
    if (ferror(fp) | fclose(fp))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", path);
    return 0;
}

/* gnuplot's own message line, for a rotor line: blank lines and the lines
 * that only point with '^' are dropped (NULL), the indentation and the
 * '"SCRIPT" line N: ' prefix (the temporary script means nothing to the
 * user) are cut. */
static const char *gnuplot_message(char *line)
{
    line[strcspn(line, "\r\n")] = '\0';
    while (*line == ' ' || *line == '\t')
        line++;
    if (line[strspn(line, " \t^")] == '\0')
        return NULL;
    const char *at = line[0] == '"' ? strstr(line, "\" line ") : NULL;
    const char *colon = at ? strstr(at, ": ") : NULL;
    return colon ? colon + 2 : line;
}

/* What gnuplot said (its stdout and stderr, in LOG): every message as a
 * "rotor: warning: plot: gnuplot: ..." line when it succeeded; the last
 * one into `last` for the error line when it failed. */
static void relay_gnuplot_log(const char *log, int failed, char *last, size_t cap)
{
    FILE *fp = fopen(log, "r");
    char line[1024];
    last[0] = '\0';
    while (fp && fgets(line, sizeof(line), fp)) {
        const char *msg = gnuplot_message(line);
        if (!msg)
            continue;
        if (failed)
            snprintf(last, cap, ": %.400s", msg);
        else
            rt_warn("plot: gnuplot: %s", msg);
    }
    if (fp)
        fclose(fp);
}

/* gnuplot SCRIPT, stdin from /dev/null, stdout and stderr into LOG: rotor
 * prints what it said, prefixed like its own lines. */
static int run_gnuplot(const char *script, const char *log, rt_error *err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "plot: out of memory");
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC,
                                              0600);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    if (rc == 0)
        rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == ENOENT)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "plot: gnuplot not found; install it: apt-get install " GNUPLOT_PACKAGE);
    if (rc != 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, rc, "plot: cannot start gnuplot");
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "plot: waiting for gnuplot");
    int failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    char last[512];
    relay_gnuplot_log(log, failed, last, sizeof(last));
    if (failed)
        return rt_fail(err, RT_EXIT_RUNTIME, "plot: gnuplot failed (status %d)%s",
                       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), last);
    return 0;
}

/* Does the picture end as a whole PNG (the IEND chunk) or SVG (</svg>)
 * does?  gnuplot exits 0 when a write fails (a full disk): a picture cut
 * short must not replace --out. */
static int picture_complete(FILE *fp, int svg)
{
    char tail[64];
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0)
        return 0;
    off_t from = sb.st_size > (off_t)sizeof(tail) ? sb.st_size - (off_t)sizeof(tail) : 0;
    ssize_t n = pread(fileno(fp), tail, sizeof(tail), from);
    const char *mark = svg ? "</svg>" : "IEND";
    return n > 0 && memmem(tail, (size_t)n, mark, strlen(mark)) != NULL;
}

/* The picture gnuplot drew in our private directory, copied into --out by
 * the one writer of outputs (rt_outfile: a temporary renamed into place, a
 * FIFO or device written in place, "-" standard output), not renamed over
 * whatever --out is. */
static int copy_picture(const char *picture, const char *out, int svg, rt_error *err)
{
    FILE *in = fopen(picture, "rb");
    if (!in)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot open", picture);
    int rc = 0;
    if (!picture_complete(in, svg))
        rc = rt_fail(err, RT_EXIT_RUNTIME,
                     "%s: gnuplot wrote no whole picture into %s (a full disk?)", out, picture);
    rt_outfile of = {.fp = NULL};
    if (rc == 0 && rt_outfile_open(&of, out, err))
        rc = -1;
    if (rc == 0)
        rc = rt_outfile_copy_from(&of, in, picture, NULL, NULL, err);
    fclose(in);
    if (rc == 0)
        return rt_outfile_commit(&of, err);
    if (of.fp)
        rt_outfile_abort(&of);
    return rc;
}

int plot_render(const plot_chart *c, const char *tmpdir, rt_error *err)
{
    char dir[4096], script[4200], log[4200], picture[4200];
    if (snprintf(dir, sizeof(dir), "%s/rotor-plot-XXXXXX", tmpdir) >= (int)sizeof(dir))
        return rt_fail(err, RT_EXIT_INPUT, "plot: path too long");
    if (!mkdtemp(dir))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot create", dir);
    rt_remove_stale_temporaries(c->out);
    snprintf(script, sizeof(script), "%s/plot.gp", dir);
    snprintf(log, sizeof(log), "%s/gnuplot.log", dir);
    snprintf(picture, sizeof(picture), "%s/picture.%s", dir, c->svg ? "svg" : "png");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->n_series; i++) {
        char data[4200];
        snprintf(data, sizeof(data), "%s/series-%zu.dat", dir, i);
        rc = write_series(data, &c->series[i], err);
    }
    if (rc == 0)
        rc = write_script(script, c, dir, picture, err);
    if (rc == 0)
        rc = run_gnuplot(script, log, err);
    if (rc == 0)
        rc = copy_picture(picture, c->out, c->svg, err);
    rt_remove_tree(dir);
    return rc;
}
