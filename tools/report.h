/* report.h - the HTML page of a training run (--report). */
#ifndef CF_TOOLS_REPORT_H
#define CF_TOOLS_REPORT_H

#include "cflux.h"

typedef struct report {
    const char *path;
    const char *model;               /* the model file */
    const char *command;             /* the command line as typed */
    const char *settings[24][2];     /* what the run used: name, value */
    int nsettings;
    char *summary;                   /* the model's summary table, or NULL */
    double *lr_x, *lr_y;             /* the learning rate's schedule: epoch, rate */
    int nlr;
    cf_model *m;
    cf_trainer *t;
    const cf_dataset *test;          /* scored after every epoch; NULL: none */
    int text;                        /* text data: no per-class figures */
    int val;                         /* a validation split: the best epoch is marked */
} report;

/* Write the page (crash-safe): status is a line on how the run stands; final drops
 * the page's reload. 0, or 1 with the message printed. */
int report_write(report *r, const char *status, int final);

#endif
