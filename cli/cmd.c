#include "cli/cmd.h"

#include <stdio.h>

int nw_cmd_not_built(const char *name)
{
    fprintf(stderr, "nodewarden %s: not built yet\n", name);
    return NW_EXIT_USAGE;
}
