/*
 * cli/cmd.h — the subcommands of build/nodewarden.
 *
 * Each subcommand lives in cli/cmd_<name>.c and is called with argv[0]
 * set to the subcommand name. Exit codes: 0 success, 1 the command ran and
 * found a problem (invalid objects, failed checks), 2 usage or I/O error.
 *
 * Thread: main.
 */
#ifndef NW_CLI_CMD_H
#define NW_CLI_CMD_H

#define NW_EXIT_OK 0
#define NW_EXIT_FAIL 1
#define NW_EXIT_USAGE 2

int nw_cmd_serve(int argc, char **argv);
int nw_cmd_check(int argc, char **argv);
int nw_cmd_plan(int argc, char **argv);
int nw_cmd_doctor(int argc, char **argv);
int nw_cmd_kube_dump(int argc, char **argv);
int nw_cmd_kube_lease(int argc, char **argv);
/** `nodewarden aws VERB`: the EC2 provider by hand (cli/cmd_aws.c). */
int nw_cmd_aws(int argc, char **argv);

/** Print "nodewarden <cmd>: not built yet" to stderr and return NW_EXIT_USAGE. */
int nw_cmd_not_built(const char *name);

#endif
