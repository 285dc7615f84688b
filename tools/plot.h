/* plot.h - training curves as SVG (the tool's --plot). */
#ifndef CF_TOOLS_PLOT_H
#define CF_TOOLS_PLOT_H

#include "cflux.h"

/* Write the curves of n epochs to path (crash-safe; the title is escaped); 0, or -1
 * with the message printed. */
int plot_write_svg(const char *path, const cf_epoch_stats *e, int n, const char *title);

#endif
