/* files.h - what a command reads and writes, checked together before it runs. */
#ifndef CF_TOOLS_FILES_H
#define CF_TOOLS_FILES_H

#include "options.h"

/* Refuse an output that is one of the inputs (--save onto --resume aside) or another
 * output, naming both roles; then lock every output against another cflux until the
 * tool exits. 0, or 1 with one line printed. */
int files_check(const command *c, const args *a);

#endif
