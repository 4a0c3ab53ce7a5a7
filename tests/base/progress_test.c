/* progress_test.c - ground/progress: the line's content, bar vs plain lines,
 * silence for quick steps, and the final line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ground/ground.h"
#include "ground/progress.h"

/* The line of a step LABEL in MB of which DONE of TOTAL bytes (0: unknown)
 * are done after SECONDS, with a bar or plain. */
static void line_at(const char *label, uint64_t total, uint64_t done, double seconds, int bar,
                    char *line, size_t cap)
{
    rt_progress p;
    rt_progress_start_on(&p, NULL, 0, label, "MB", 1e6, total);
    p.done = done;
    rt_progress_format(&p, p.t0 + seconds, bar, line, cap);
}

static void test_line_with_total_has_percent_rate_and_eta(void **state)
{
    (void)state;
    char line[256];
    /* 25 MB in 10 s: 2.5 MB/s, 75 MB left: 30 s */
    line_at("reading r.txt", 100000000, 25000000, 10.0, 0, line, sizeof(line));
    assert_string_equal(line, "rotor: reading r.txt  25%  25.0/100.0 MB  2.5 MB/s  ETA 0:30");
    line_at("reading r.txt", 100000000, 25000000, 10.0, 1, line, sizeof(line));
    assert_non_null(strstr(line, " [######..................]  25%"));
}

static void test_line_without_total_has_amount_and_elapsed(void **state)
{
    (void)state;
    char line[256];
    line_at("reading standard input", 0, 3000000, 125.0, 1, line, sizeof(line));
    assert_string_equal(line, "rotor: reading standard input  3.0 MB  0.0 MB/s  elapsed 2:05");
}

/* Draw through a memory stream: quick steps print nothing; a plain stream
 * gets whole lines, a terminal gets "\r" redraws and one final newline. */
static void run(int tty, int force_draw, char **text)
{
    size_t len;
    FILE *fp = open_memstream(text, &len);
    assert_non_null(fp);
    rt_progress p;
    rt_progress_start_on(&p, fp, tty, "sampling", "docs", 1, 10);
    rt_progress_set(&p, 3);
    if (force_draw) {
        p.next = 0; /* as if the first delay had passed */
        rt_progress_set(&p, 5);
    }
    rt_progress_set(&p, 10);
    rt_progress_end(&p);
    fclose(fp);
}

static void test_drawing(void **state)
{
    (void)state;
    char *t = NULL;
    run(0, 0, &t);
    assert_string_equal(t, ""); /* a quick step shows nothing */
    free(t);
    run(0, 1, &t);
    assert_null(strchr(t, '\r'));
    assert_non_null(strstr(t, "rotor: sampling  50%  5/10 docs"));
    assert_non_null(strstr(t, "\nrotor: sampling 100%  10/10 docs"));
    assert_non_null(strstr(t, "done in"));
    free(t);
    run(1, 1, &t);
    assert_int_equal(t[0], '\r');
    assert_non_null(strstr(t, "[############............]  50%"));
    assert_non_null(strstr(t, "\rrotor: sampling [########################] 100%"));
    assert_int_equal(t[strlen(t) - 1], '\n');
    assert_ptr_equal(strchr(t, '\n'), t + strlen(t) - 1);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_with_total_has_percent_rate_and_eta),
        cmocka_unit_test(test_line_without_total_has_amount_and_elapsed),
        cmocka_unit_test(test_drawing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
