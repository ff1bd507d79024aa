/* common/oom.c — see oom.h. */
#include "common/oom.h"

#include <stdlib.h>

#include "common/log.h"

_Noreturn void nw_oom(const char *what)
{
    /* the logger formats into a stack buffer: it does not allocate */
    nw_log_error("oom", "out of memory", NW_LS("what", what ? what : "?"));
    abort();
}

void *nw_oom_check(void *p, const char *what)
{
    if (!p)
        nw_oom(what);
    return p;
}
