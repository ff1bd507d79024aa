/* server/cmd_kube_dump.c — `nodewarden kube-dump` (not built yet). */
#include "server/cmd.h"

int nw_cmd_kube_dump(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return nw_cmd_not_built("kube-dump");
}
