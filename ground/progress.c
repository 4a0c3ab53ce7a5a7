/* progress.c - see progress.h. */
#include "ground/progress.h"
#include "ground/ground.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TTY_DELAY 1.0   /* seconds before a bar appears */
#define TTY_EVERY 0.2   /* seconds between redraws */
#define PLAIN_EVERY 5.0 /* seconds between plain lines (and before the first) */
#define BAR_WIDTH 24

void rt_progress_start_on(rt_progress *p, FILE *fp, int tty, const char *what, const char *unit,
                          double scale, uint64_t total)
{
    memset(p, 0, sizeof(*p));
    p->fp = fp;
    p->tty = tty;
    snprintf(p->what, sizeof(p->what), "%s", what);
    snprintf(p->unit, sizeof(p->unit), "%s", unit);
    p->scale = scale > 0 ? scale : 1;
    p->total = total;
    p->t0 = rt_now();
    p->next = p->t0 + (tty ? TTY_DELAY : PLAIN_EVERY);
}

void rt_progress_start(rt_progress *p, const char *what, const char *unit, double scale,
                       uint64_t total)
{
    int on = rt_log_level >= RT_LOG_INFO;
    rt_progress_start_on(p, on ? stderr : NULL, on && isatty(STDERR_FILENO), what, unit, scale,
                         total);
}

void rt_progress_start_reading(rt_progress *p, int fd, const char *path)
{
    struct stat sb;
    uint64_t size = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
    char what[96];
    snprintf(what, sizeof(what), "reading %s", path);
    rt_progress_start(p, what, "MB", 1e6, size);
}

/* "0:07", "12:34", "1:02:03" */
static void clock_text(double secs, char *out, size_t cap)
{
    unsigned long s = secs > 0 ? (unsigned long)(secs + 0.5) : 0;
    if (s >= 3600)
        snprintf(out, cap, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(out, cap, "%lu:%02lu", s / 60, s % 60);
}

void rt_progress_format(const rt_progress *p, double now, int bar, char *out, size_t cap)
{
    double dt = now - p->t0;
    double done = (double)p->done / p->scale, rate = dt > 0 ? done / dt : 0;
    int finished = p->ended || (p->total && p->done >= p->total);
    int digits = p->scale == 1 ? 0 : 1; /* whole documents, tenths of MB */
    size_t n = (size_t)snprintf(out, cap, "rotor: %s", p->what);
    if (p->total) {
        double frac = (double)p->done / (double)p->total;
        if (frac > 1)
            frac = 1;
        if (bar && n < cap) {
            char b[BAR_WIDTH + 1];
            int full = (int)(frac * BAR_WIDTH);
            for (int i = 0; i < BAR_WIDTH; i++)
                b[i] = i < full ? '#' : '.';
            b[BAR_WIDTH] = '\0';
            n += (size_t)snprintf(out + n, cap - n, " [%s]", b);
        }
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, " %3.0f%%  %.*f/%.*f %s", 100 * frac, digits,
                                  done, digits, (double)p->total / p->scale, p->unit);
    } else if (n < cap) {
        n += (size_t)snprintf(out + n, cap - n, "  %.*f %s", digits, done, p->unit);
    }
    if (n < cap)
        n += (size_t)snprintf(out + n, cap - n, "  %.1f %s/s", rate, p->unit);
    char t[32];
    if (finished || !p->total || rate <= 0) {
        clock_text(dt, t, sizeof(t));
        if (n < cap)
            snprintf(out + n, cap - n, "  %s %s", finished ? "done in" : "elapsed", t);
    } else {
        clock_text(((double)p->total / p->scale - done) / rate, t, sizeof(t));
        if (n < cap)
            snprintf(out + n, cap - n, "  ETA %s", t);
    }
}

static void draw(rt_progress *p, double now)
{
    char line[256];
    rt_progress_format(p, now, p->tty, line, sizeof(line));
    /* one fprintf per line, like rt_log; "\033[K" clears what a longer
     * previous line left behind */
    if (p->tty)
        fprintf(p->fp, "\r%s\033[K", line);
    else
        fprintf(p->fp, "%s\n", line);
    fflush(p->fp);
    p->shown = 1;
}

void rt_progress_set(rt_progress *p, uint64_t done)
{
    p->done = done;
    if (!p->fp)
        return;
    double now = rt_now();
    if (now < p->next)
        return;
    draw(p, now);
    p->next = now + (p->tty ? TTY_EVERY : PLAIN_EVERY);
}

void rt_progress_end(rt_progress *p)
{
    p->ended = 1;
    if (!p->fp || !p->shown)
        return;
    draw(p, rt_now());
    if (p->tty)
        fputc('\n', p->fp);
    p->fp = NULL;
}
