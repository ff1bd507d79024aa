/* server/cmd_plan.c — `nodewarden plan` (not built yet). */
#include "server/cmd.h"

int nw_cmd_plan(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return nw_cmd_not_built("plan");
}
