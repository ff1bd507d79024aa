/* server/cmd_doctor.c — `nodewarden doctor` (not built yet). */
#include "server/cmd.h"

int nw_cmd_doctor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return nw_cmd_not_built("doctor");
}
