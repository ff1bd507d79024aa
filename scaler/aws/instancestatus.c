/* scaler/aws/instancestatus.c — DescribeInstanceStatus as instance health (see
 * instancestatus.h). */
#include "scaler/aws/instancestatus.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nw_cloud_health_t *push(nw_cloud_healths_t *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        nw_cloud_health_t *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return NULL;
        l->v = v;
        l->cap = cap;
    }
    nw_cloud_health_t *h = &l->v[l->n++];
    memset(h, 0, sizeof *h);
    return h;
}

nw_rc_t nw_instancestatus_istatus_health(const nw_ec2_istatus_t *s, nw_cloud_healths_t *out)
{
    for (int i = 0; i < s->nchecks; i++) {
        const nw_ec2_status_check_t *c = &s->checks[i];
        nw_cloud_health_kind_t k;
        if (strcmp(c->category, "event") == 0)
            k = NW_CLOUD_HEALTH_EVENT;
        else if (strcmp(c->status, "failed") != 0)
            continue; /* passed, initializing, insufficient-data */
        else if (strcmp(c->category, "system") == 0)
            k = NW_CLOUD_HEALTH_SYSTEM;
        else if (strcmp(c->category, "instance") == 0)
            k = NW_CLOUD_HEALTH_INSTANCE;
        else
            continue;
        nw_cloud_health_t *h = push(out);
        if (!h)
            return NW_ENOMEM;
        snprintf(h->instance_id, sizeof h->instance_id, "%s", s->id);
        snprintf(h->name, sizeof h->name, "%s", c->name);
        h->kind = k;
        h->impaired_since_ns = k == NW_CLOUD_HEALTH_EVENT ? 0 : c->impaired_since_ns;
    }
    return NW_OK;
}

nw_rc_t nw_instancestatus_health(nw_ec2_t *ec2, nw_cloud_healths_t *out, nw_ec2_error_t *ae,
                                 nw_err_t *err)
{
    static const nw_ec2_filter_t sets[3] = {
        {"instance-status.status", {"impaired"}, 1},
        {"system-status.status", {"impaired"}, 1},
        {"event.code",
         {"instance-reboot", "system-reboot", "system-maintenance", "instance-retirement",
          "instance-stop"},
         5},
    };
    nw_ec2_istatuses_t all = {0};
    nw_rc_t rc = NW_OK;
    for (int f = 0; f < 3 && rc == NW_OK; f++)
        rc = nw_ec2_describe_instance_status(ec2, &sets[f], 1, &all, ae, err);
    for (size_t i = 0; rc == NW_OK && i < all.n; i++) {
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            dup = strcmp(all.v[j].id, all.v[i].id) == 0;
        if (!dup && nw_instancestatus_istatus_health(&all.v[i], out) != NW_OK)
            rc = nw_err_set(err, NW_ENOMEM, "DescribeInstanceStatus", "out of memory");
    }
    nw_ec2xml_istatuses_free(&all);
    return rc;
}
