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

/* gnuplot SCRIPT, stdin from /dev/null and stdout onto stderr: rotor's
 * stdout carries nothing of it. */
static int run_gnuplot(const char *script, rt_error *err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "plot: out of memory");
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
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
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "plot: gnuplot failed (status %d); see its message above",
                       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return 0;
}

/* The picture gnuplot wrote must be there and non-empty before it replaces out. */
static int move_picture(const char *picture, const char *out, rt_error *err)
{
    struct stat sb;
    if (stat(picture, &sb) != 0 || sb.st_size == 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "plot: gnuplot wrote no picture");
    if (rename(picture, out) != 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot write", out);
    return 0;
}

int plot_render(const plot_chart *c, const char *tmpdir, rt_error *err)
{
    char dir[4096], script[4200], picture[4200];
    if (snprintf(dir, sizeof(dir), "%s/rotor-plot-XXXXXX", tmpdir) >= (int)sizeof(dir) ||
        snprintf(picture, sizeof(picture), "%s.tmp.%d", c->out, (int)getpid()) >=
            (int)sizeof(picture))
        return rt_fail(err, RT_EXIT_INPUT, "plot: path too long");
    if (!mkdtemp(dir))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot create", dir);
    snprintf(script, sizeof(script), "%s/plot.gp", dir);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->n_series; i++) {
        char data[4200];
        snprintf(data, sizeof(data), "%s/series-%zu.dat", dir, i);
        rc = write_series(data, &c->series[i], err);
    }
    if (rc == 0)
        rc = write_script(script, c, dir, picture, err);
    if (rc == 0)
        rc = run_gnuplot(script, err);
    if (rc == 0)
        rc = move_picture(picture, c->out, err);
    if (rc != 0)
        unlink(picture);
    rt_remove_tree(dir);
    return rc;
}
