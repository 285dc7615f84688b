/* plot.h - training curves as SVG (the tool's --plot). */
#ifndef CF_TOOLS_PLOT_H
#define CF_TOOLS_PLOT_H

typedef struct plot_epoch {
    int epoch;
    double train_loss, val_loss, test_loss;   /* NAN: absent */
    double train_acc, val_acc, test_acc;
} plot_epoch;

/* Write the curves of n epochs to path; 0 or -1 (errno says why). */
int plot_write_svg(const char *path, const plot_epoch *e, int n, const char *title);

#endif
