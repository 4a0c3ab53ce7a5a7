/* log.c - leveled one-line logging to stderr, and time/RSS helpers. */
#define _GNU_SOURCE
#include "ground/ground.h"

#include <string.h>
#include <sys/resource.h>
#include <time.h>

int rt_log_level = RT_LOG_INFO;

int rt_log_level_parse(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int level = RT_LOG_ERROR; level <= RT_LOG_DEBUG; level++)
        if (!strcmp(s, names[level]))
            return level;
    return -1;
}

void rt_log(int level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warning", "", "debug"};
    if (level > rt_log_level)
        return;
    char raw[2048], line[4 * sizeof(raw) + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    rt_one_line(line, sizeof(line), raw); /* a newline in a file name cannot split it */
    /* One fprintf per line so lines from threads never interleave mid-line. */
    if (level == RT_LOG_INFO)
        fprintf(stderr, "rotor: %s\n", line);
    else
        fprintf(stderr, "rotor: %s: %s\n", tags[level], line);
}

double rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long rt_peak_rss_kib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return ru.ru_maxrss;
}
