/* plot.h - training curves as SVG (the tool's --plot). */
#ifndef CF_TOOLS_PLOT_H
#define CF_TOOLS_PLOT_H

#include <stdio.h>

#include "cflux.h"

/* Write the curves of n epochs to path (crash-safe; the title is escaped): the losses
 * and a classifier's accuracies, or a regression's R² (plot.c says how the axes are
 * chosen); 0, or -1 with the message printed. */
int plot_write_svg(const char *path, const cf_epoch_stats *e, int n, const char *title);

/* The same curves as an <svg> element written to f (for a page). 0, or -1 when out of
 * memory. */
int plot_svg(FILE *f, const cf_epoch_stats *e, int n, const char *title);

/* One curve y(x) of n points as an <svg> element (the learning rate by step). 0. */
int plot_xy_svg(FILE *f, const double *x, const double *y, int n, const char *xlabel, const char *ylabel);

/* s as XML/HTML text: the five reserved characters escaped. */
void plot_escape(FILE *f, const char *s);

#endif
