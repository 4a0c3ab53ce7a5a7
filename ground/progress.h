/*
 * progress.h - progress of long steps (reading a big input, sampling new
 * documents, writing shards), on standard error only.
 *
 * On a terminal it is one line redrawn in place: a bar when the total is
 * known, the amount done, the rate and the time left.  Otherwise (a log
 * file, a pipe, a batch job) it is a plain line every few seconds.  A step
 * that ends within its first second shows nothing, so quick runs and tests
 * stay quiet; below RT_LOG_INFO (`--quiet`, ROTOR_LOG=warn) nothing is shown.
 * Standard output is never touched: it may carry data.
 *
 *   rt_progress p;
 *   rt_progress_start(&p, "reading ratings.txt", "MB", 1e6, file_size);
 *   while (...) rt_progress_set(&p, bytes_so_far);
 *   rt_progress_end(&p);
 */
#ifndef ROTOR_GROUND_PROGRESS_H
#define ROTOR_GROUND_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct rt_progress {
    FILE *fp;        /* NULL: silent */
    int tty;         /* redraw one line in place */
    char what[96];   /* "reading ratings.txt" */
    char unit[16];   /* "MB", "lines", "docs" */
    double scale;    /* shown amount = count / scale */
    uint64_t total;  /* 0: unknown (no bar, no ETA) */
    uint64_t done;   /* count so far */
    double t0, next; /* start; when to draw next */
    int shown;       /* something was drawn */
    int ended;       /* rt_progress_end was called */
} rt_progress;

/* Progress on stderr, a bar when stderr is a terminal; silent below
 * RT_LOG_INFO.  total 0 = unknown. */
void rt_progress_start(rt_progress *p, const char *what, const char *unit, double scale,
                       uint64_t total);
/* "reading PATH" in MB, of the size of fd when it is a regular file (no
 * total for pipes). */
void rt_progress_start_reading(rt_progress *p, int fd, const char *path);
/* The same on an explicit stream (NULL = silent), tty chosen by the caller. */
void rt_progress_start_on(rt_progress *p, FILE *fp, int tty, const char *what, const char *unit,
                          double scale, uint64_t total);
/* Record the amount done; draws only when it is time (cheap otherwise, but
 * it reads the clock: call it per chunk or per document, not per token). */
void rt_progress_set(rt_progress *p, uint64_t done);
/* Finish the line (terminal) or print the final amount (plain lines), if
 * anything was shown. */
void rt_progress_end(rt_progress *p);

/* The text of one progress line (no newline), for rt_progress and its test. */
void rt_progress_format(const rt_progress *p, double now, int bar, char *out, size_t cap);

#endif
