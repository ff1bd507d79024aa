/* server/cmd_check.c — `nodewarden check` (not built yet). */
#include "server/cmd.h"

int nw_cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return nw_cmd_not_built("check");
}
