/* commands.h - the tool's commands that live outside cflux.c. Each returns the exit
 * status: 0 ok, 1 bad model or data, 2 bad usage. */
#ifndef CF_TOOLS_COMMANDS_H
#define CF_TOOLS_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_predict(int argc, char **argv);

#endif
