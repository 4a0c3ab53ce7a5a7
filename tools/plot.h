/* plot.h - line charts through gnuplot (tools/gnuplot.c), for `rotor plot`. */
#ifndef ROTOR_TOOLS_PLOT_H
#define ROTOR_TOOLS_PLOT_H

#include "ground/ground.h"

#include <stddef.h>

typedef struct plot_series {
    char title[256]; /* legend entry */
    double *x, *y;
    size_t n;
} plot_series;

typedef struct plot_chart {
    const char *out;   /* FILE.png or FILE.svg; written atomically */
    int svg;           /* else PNG */
    int width, height; /* pixels */
    const char *title; /* NULL: none */
    const char *xlabel, *ylabel;
    int log_y;
    const plot_series *series;
    size_t n_series;
} plot_chart;

/* Write the data and a script into a scratch directory under `tmpdir`, run
 * gnuplot on them (no shell; its output goes to stderr) and move the picture
 * to chart->out.  When gnuplot is not installed the error names the Debian
 * package to install. */
int plot_render(const plot_chart *chart, const char *tmpdir, rt_error *err);

#endif
