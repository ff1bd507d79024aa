/* server/cmd_serve.c — `nodewarden serve` (not built yet). */
#include "server/cmd.h"

int nw_cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return nw_cmd_not_built("serve");
}
