/* scaler/aws/ec2xml.c — EC2/STS XML response parsers; see ec2xml.h. */
#include "scaler/aws/ec2xml.h"

#include <ctype.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlreader.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/oom.h"

#define LIST_MAX 1000000 /* records per list: far above any real page set */

/* ---- helpers ---------------------------------------------------------------- */

static xmlDocPtr load(const char *xml, size_t len, xmlNode **root, nw_err_t *err)
{
    *root = NULL;
    if (!xml || len == 0)
        return nw_err_set(err, NW_EPARSE, "response", "empty response body"), NULL;
    if (len > INT_MAX)
        return nw_err_set(err, NW_EPARSE, "response", "response too large"), NULL;
    xmlDocPtr d = xmlReadMemory(xml, (int)len, NULL, NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                    XML_PARSE_NOBLANKS | XML_PARSE_NOCDATA);
    if (!d) {
        nw_err_set(err, NW_EPARSE, "response", "malformed XML");
        return NULL;
    }
    *root = xmlDocGetRootElement(d);
    if (!*root) {
        xmlFreeDoc(d);
        nw_err_set(err, NW_EPARSE, "response", "XML document has no root element");
        return NULL;
    }
    return d;
}

static bool is_el(const xmlNode *n, const char *name)
{
    return n && n->type == XML_ELEMENT_NODE && n->name && strcmp((const char *)n->name, name) == 0;
}

static xmlNode *child(xmlNode *n, const char *name)
{
    if (!n)
        return NULL;
    for (xmlNode *c = n->children; c; c = c->next)
        if (is_el(c, name))
            return c;
    return NULL;
}

/* Follow a '/'-separated element path. */
static xmlNode *at(xmlNode *n, const char *path)
{
    char seg[96];
    while (n && *path) {
        const char *sl = strchr(path, '/');
        size_t l = sl ? (size_t)(sl - path) : strlen(path);
        if (l >= sizeof seg)
            return NULL;
        memcpy(seg, path, l);
        seg[l] = 0;
        n = child(n, seg);
        path += l + (sl ? 1 : 0);
    }
    return n;
}

static void text(xmlNode *n, char *out, size_t len)
{
    if (len == 0)
        return;
    out[0] = 0;
    if (!n)
        return;
    xmlChar *c = xmlNodeGetContent(n);
    if (!c)
        return;
    /* trim surrounding whitespace */
    const char *s = (const char *)c;
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t l = strlen(s);
    while (l > 0 && isspace((unsigned char)s[l - 1]))
        l--;
    if (l >= len)
        l = len - 1;
    memcpy(out, s, l);
    out[l] = 0;
    xmlFree(c);
}

#define TXT(node, path, field) text(at((node), (path)), (field), sizeof(field))

static int64_t num(xmlNode *n, const char *path)
{
    char b[64];
    text(at(n, path), b, sizeof b);
    if (!*b)
        return 0;
    char *end;
    long long v = strtoll(b, &end, 10);
    return *end == 0 || *end == '.' ? (int64_t)v : 0;
}

static double dbl(xmlNode *n, const char *path)
{
    char b[64];
    text(at(n, path), b, sizeof b);
    if (!*b)
        return 0;
    char *end;
    double v = strtod(b, &end);
    return *end == 0 ? v : 0;
}

static bool boolean(xmlNode *n, const char *path)
{
    char b[16];
    text(at(n, path), b, sizeof b);
    return strcmp(b, "true") == 0;
}

static int64_t when(xmlNode *n, const char *path)
{
    char b[64];
    int64_t ns = 0;
    text(at(n, path), b, sizeof b);
    if (*b && nw_clock_time_parse(b, &ns) != NW_OK)
        ns = 0;
    return ns;
}

static xmlNode *first_item(xmlNode *set)
{
    return child(set, "item");
}

static xmlNode *next_item(xmlNode *it)
{
    for (it = it->next; it; it = it->next)
        if (is_el(it, "item"))
            return it;
    return NULL;
}

#define FOREACH_ITEM(set, it) for (xmlNode *it = first_item(set); it; it = next_item(it))

/* Append a zeroed element to a growable array; NULL when out of memory or too long. */
static void *push(void **v, size_t *n, size_t *cap, size_t sz)
{
    if (*n >= LIST_MAX)
        return NULL;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        void *nv = realloc(*v, nc * sz);
        if (!nv)
            return NULL;
        *v = nv;
        *cap = nc;
    }
    void *p = (char *)*v + (*n)++ * sz;
    memset(p, 0, sz);
    return p;
}

#define PUSH(list) push((void **)&(list)->v, &(list)->n, &(list)->cap, sizeof(*(list)->v))

void nw_ec2xml_tags_free(nw_ec2_tags_t *t)
{
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

/* The tagSet's items, at most NW_EC2_MAX_TAGS, into an array of their count; an
 * allocation failure aborts (a resource read without its tags could be taken for one
 * nodewarden does not own). */
static void tags(xmlNode *set, nw_ec2_tags_t *t)
{
    int n = 0;
    FOREACH_ITEM(set, it)
    {
        if (n < NW_EC2_MAX_TAGS)
            n++;
    }
    t->n = 0;
    t->v = n ? nw_oom_check(calloc((size_t)n, sizeof *t->v), "EC2 tags") : NULL;
    FOREACH_ITEM(set, it)
    {
        if (t->n >= n)
            break;
        TXT(it, "key", t->v[t->n].key);
        TXT(it, "value", t->v[t->n].value);
        t->n++;
    }
}

static NW_MUST_USE nw_rc_t expect(xmlNode *root, const char *name, nw_err_t *err)
{
    if (is_el(root, name))
        return NW_OK;
    if (is_el(root, "Response") || is_el(root, "ErrorResponse"))
        return nw_err_set(err, NW_EPARSE, name, "got an error document instead of %s", name);
    return nw_err_set(err, NW_EPARSE, name, "unexpected root element <%.64s>, want <%s>",
                      root->name ? (const char *)root->name : "?", name);
}

static void next_token(xmlNode *root, char *next, size_t nextlen)
{
    if (next && nextlen)
        text(child(root, "nextToken"), next, nextlen);
}

#define OOM(err) nw_err_set((err), NW_ENOMEM, "response", "out of memory or too many records")

/* The common shape of a Describe*-style response: root element `root` holding
 * <set><item>...</item>...</set>; each item is appended to the list (zeroed, `size`
 * bytes) and filled by fill(), which returns false when a required field is missing:
 * then the item is dropped and the error is `bad_path`: `bad_msg`. Paged responses
 * also return their nextToken. */
typedef struct {
    const char *root, *set;
    size_t size;
    bool (*fill)(xmlNode *it, void *elem);
    const char *bad_path, *bad_msg;
    bool paged;
} item_list_t;

static NW_MUST_USE nw_rc_t parse_list(const item_list_t *t, const char *xml, size_t len, void **v,
                                      size_t *n, size_t *cap, char *next, size_t nextlen,
                                      nw_err_t *err)
{
    xmlNode *root;
    nw_rc_t rc = NW_OK;
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    if ((rc = expect(root, t->root, err)) != NW_OK)
        goto out;
    FOREACH_ITEM(child(root, t->set), it)
    {
        void *e = push(v, n, cap, t->size);
        if (!e) {
            rc = OOM(err);
            goto out;
        }
        if (!t->fill(it, e)) {
            (*n)--;
            rc = nw_err_set(err, NW_EPARSE, t->bad_path, "%s", t->bad_msg);
            goto out;
        }
    }
    if (t->paged)
        next_token(root, next, nextlen);
out:
    xmlFreeDoc(d);
    return rc;
}

#define PARSE_LIST(t, xml, len, list, next, nextlen, err)                                          \
    parse_list((t), (xml), (len), (void **)&(list)->v, &(list)->n, &(list)->cap, (next),           \
               (nextlen), (err))

/* ---- errors --------------------------------------------------------------- */

nw_rc_t nw_ec2xml_parse_error(const char *xml, size_t len, nw_ec2xml_error_t *out, nw_err_t *err)
{
    xmlNode *root;
    memset(out, 0, sizeof *out);
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    xmlNode *e = NULL;
    if (is_el(root, "Response")) {
        e = at(root, "Errors/Error");
        TXT(root, "RequestID", out->request_id);
    } else if (is_el(root, "ErrorResponse")) {
        e = child(root, "Error");
        TXT(root, "RequestId", out->request_id);
    }
    TXT(e, "Code", out->code);
    TXT(e, "Message", out->message);
    xmlFreeDoc(d);
    if (!*out->code)
        return nw_err_set(err, NW_EPARSE, "Error.Code", "no error code in error response");
    return NW_OK;
}

/* ---- placement groups --------------------------------------------------------- */

void nw_ec2xml_pgs_free(nw_ec2_pgs_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_pg(xmlNode *it, void *e)
{
    nw_ec2_pg_t *p = e;
    TXT(it, "groupId", p->id);
    TXT(it, "groupName", p->name);
    TXT(it, "strategy", p->strategy);
    TXT(it, "state", p->state);
    TXT(it, "spreadLevel", p->spread_level);
    p->partitions = (int)num(it, "partitionCount");
    return *p->id != 0;
}

static const item_list_t PGS = {"DescribePlacementGroupsResponse",
                                "placementGroupSet",
                                sizeof(nw_ec2_pg_t),
                                fill_pg,
                                "placementGroupSet.item.groupId",
                                "missing",
                                false};

nw_rc_t nw_ec2xml_parse_placement_groups(const char *xml, size_t len, nw_ec2_pgs_t *out,
                                         nw_err_t *err)
{
    return PARSE_LIST(&PGS, xml, len, out, NULL, 0, err);
}

/* ---- capacity reservations ------------------------------------------------------ */

void nw_ec2xml_crs_free(nw_ec2_crs_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_cr(xmlNode *it, void *e)
{
    nw_ec2_cr_t *r = e;
    TXT(it, "capacityReservationId", r->id);
    TXT(it, "instanceType", r->type);
    TXT(it, "availabilityZone", r->zone);
    TXT(it, "availabilityZoneId", r->zone_id);
    TXT(it, "ownerId", r->owner);
    TXT(it, "instanceMatchCriteria", r->match);
    TXT(it, "state", r->state);
    TXT(it, "reservationType", r->reservation_type);
    r->interruptible = boolean(it, "interruptible");
    r->available = num(it, "availableInstanceCount");
    r->total = num(it, "totalInstanceCount");
    r->end_ns = when(it, "endDate");
    return *r->id != 0 && *r->type != 0 && *r->zone != 0;
}

static const item_list_t CRS = {"DescribeCapacityReservationsResponse",
                                "capacityReservationSet",
                                sizeof(nw_ec2_cr_t),
                                fill_cr,
                                "capacityReservationSet.item",
                                "missing capacityReservationId, instanceType or availabilityZone",
                                true};

nw_rc_t nw_ec2xml_parse_capacity_reservations(const char *xml, size_t len, nw_ec2_crs_t *out,
                                              char *next, size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&CRS, xml, len, out, next, nextlen, err);
}

/* ---- IAM instance profiles -------------------------------------------------- */

void nw_ec2xml_iam_profiles_free(nw_iam_profiles_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static NW_MUST_USE nw_rc_t iam_profile(xmlNode *ip, nw_iam_profiles_t *out, nw_err_t *err)
{
    nw_iam_profile_t *p = push((void **)&out->v, &out->n, &out->cap, sizeof *p);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "InstanceProfile", "out of memory");
    TXT(ip, "InstanceProfileName", p->name);
    TXT(ip, "Path", p->path);
    TXT(ip, "Arn", p->arn);
    TXT(ip, "Roles/member/RoleName", p->role);
    if (!*p->name)
        return nw_err_set(err, NW_EPARSE, "InstanceProfile", "no InstanceProfileName");
    return NW_OK;
}

nw_rc_t nw_ec2xml_parse_iam_profiles(const char *xml, size_t len, nw_iam_profiles_t *out,
                                     char *marker, size_t mlen, nw_err_t *err)
{
    xmlNode *root;
    if (marker && mlen)
        marker[0] = 0;
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    nw_rc_t rc = NW_OK;
    xmlNode *res = NULL;
    for (xmlNode *c = root->children; c && !res; c = c->next)
        if (c->type == XML_ELEMENT_NODE && c->name &&
            strstr((const char *)c->name, "Result") != NULL)
            res = c;
    xmlNode *one = child(res, "InstanceProfile"), *set = child(res, "InstanceProfiles");
    if (!res || (!one && !set))
        rc = nw_err_set(err, NW_EPARSE, "InstanceProfile", "no InstanceProfile in the answer");
    if (one && rc == NW_OK)
        rc = iam_profile(one, out, err);
    for (xmlNode *m = set ? set->children : NULL; m && rc == NW_OK; m = m->next)
        if (is_el(m, "member"))
            rc = iam_profile(m, out, err);
    char trunc[16];
    TXT(res, "IsTruncated", trunc);
    if (rc == NW_OK && marker && mlen && strcmp(trunc, "true") == 0)
        text(child(res, "Marker"), marker, mlen);
    xmlFreeDoc(d);
    return rc;
}

/* ---- instance types --------------------------------------------------------- */

void nw_ec2xml_itypes_free(nw_ec2_itypes_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static void parse_itype(xmlNode *it, nw_ec2_itype_t *t)
{
    TXT(it, "instanceType", t->name);
    t->vcpus = (int)num(it, "vCpuInfo/defaultVCpus");
    t->memory_mib = num(it, "memoryInfo/sizeInMiB");
    text(first_item(at(it, "processorInfo/supportedArchitectures")), t->arch, sizeof t->arch);
    TXT(it, "processorInfo/manufacturer", t->cpu_manufacturer);
    t->clock_ghz = dbl(it, "processorInfo/sustainedClockSpeedInGhz");
    char ebs[32] = "";
    TXT(it, "ebsInfo/ebsOptimizedSupport", ebs);
    if (strcmp(ebs, "default") == 0)
        t->ebs_mbps = num(it, "ebsInfo/ebsOptimizedInfo/maximumBandwidthInMbps");
    FOREACH_ITEM(at(it, "gpuInfo/gpus"), g)
    {
        if (!*t->gpu_name) {
            TXT(g, "name", t->gpu_name);
            TXT(g, "manufacturer", t->gpu_manufacturer);
            t->gpu_memory_mib = num(g, "memoryInfo/sizeInMiB");
        }
        t->gpu_count += (int)num(g, "count");
        t->gpu_logical_count += (int)num(g, "logicalGpuCount");
    }
    FOREACH_ITEM(at(it, "neuronInfo/neuronDevices"), nd)
    {
        if (!*t->accel_name) {
            TXT(nd, "name", t->accel_name);
            snprintf(t->accel_manufacturer, sizeof t->accel_manufacturer, "AWS");
            t->accel_memory_mib = num(nd, "memoryInfo/sizeInMiB");
        }
        int c = (int)num(nd, "count");
        t->accel_count += c;
        t->neuron_cores += c * (int)num(nd, "coreInfo/count");
    }
    if (!*t->accel_name) {
        FOREACH_ITEM(at(it, "inferenceAcceleratorInfo/accelerators"), ac)
        {
            if (!*t->accel_name) {
                TXT(ac, "name", t->accel_name);
                TXT(ac, "manufacturer", t->accel_manufacturer);
            }
            t->accel_count += (int)num(ac, "count");
        }
    }
    xmlNode *net = child(it, "networkInfo");
    int64_t defcard = num(net, "defaultNetworkCardIndex");
    t->max_enis = (int)num(net, "maximumNetworkInterfaces");
    t->network_cards = (int)num(net, "maximumNetworkCards");
    char ena[32];
    TXT(net, "enaSupport", ena);
    t->ena_unsupported = strcmp(ena, "unsupported") == 0;
    FOREACH_ITEM(at(it, "processorInfo/supportedFeatures"), f)
    {
        char fs[64];
        text(f, fs, sizeof fs);
        t->nested_virt |= strcmp(fs, "nested-virtualization") == 0;
    }
    FOREACH_ITEM(at(it, "placementGroupInfo/supportedStrategies"), s)
    {
        char ss[32];
        text(s, ss, sizeof ss);
        t->pg_strategies |= strcmp(ss, "cluster") == 0     ? 1u
                            : strcmp(ss, "partition") == 0 ? 2u
                            : strcmp(ss, "spread") == 0    ? 4u
                                                           : 0u;
    }
    FOREACH_ITEM(child(net, "networkCards"), card)
    {
        int64_t ci = num(card, "networkCardIndex");
        if (ci >= 0 && ci < 32)
            t->card_enis[ci] = (int)num(card, "maximumNetworkInterfaces");
        if (num(card, "networkCardIndex") == defcard) {
            t->max_enis = (int)num(card, "maximumNetworkInterfaces");
            t->network_mbps = (int64_t)(dbl(card, "baselineBandwidthInGbps") * 1000.0 + 0.5);
        }
    }
    t->ipv4_per_eni = (int)num(net, "ipv4AddressesPerInterface");
    if (boolean(net, "efaSupported"))
        t->efa_max = (int)num(net, "efaInfo/maximumEfaInterfaces");
    t->encryption_in_transit = boolean(net, "encryptionInTransitSupported");
    char nvme[32];
    TXT(it, "instanceStorageInfo/nvmeSupport", nvme);
    if (strcmp(nvme, "required") == 0 || strcmp(nvme, "supported") == 0)
        t->local_nvme_gb = num(it, "instanceStorageInfo/totalSizeInGB");
    t->instance_store_gb = num(it, "instanceStorageInfo/totalSizeInGB");
    TXT(it, "hypervisor", t->hypervisor);
    t->bare_metal = boolean(it, "bareMetal");
    FOREACH_ITEM(child(it, "supportedUsageClasses"), uc)
    {
        char u[32];
        text(uc, u, sizeof u);
        if (strcmp(u, "spot") == 0)
            t->spot_supported = 1;
        else if (strcmp(u, "on-demand") == 0)
            t->on_demand_supported = 1;
    }
}

static bool fill_itype(xmlNode *it, void *e)
{
    nw_ec2_itype_t *t = e;
    parse_itype(it, t);
    return *t->name != 0;
}

static const item_list_t ITYPES = {"DescribeInstanceTypesResponse",
                                   "instanceTypeSet",
                                   sizeof(nw_ec2_itype_t),
                                   fill_itype,
                                   "instanceTypeSet.item.instanceType",
                                   "missing",
                                   true};

nw_rc_t nw_ec2xml_parse_instance_types(const char *xml, size_t len, nw_ec2_itypes_t *out,
                                       char *next, size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&ITYPES, xml, len, out, next, nextlen, err);
}

/* ---- offerings, spot prices, zones ------------------------------------------- */

void nw_ec2xml_offerings_free(nw_ec2_offerings_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_offering(xmlNode *it, void *e)
{
    nw_ec2_offering_t *o = e;
    TXT(it, "instanceType", o->type);
    TXT(it, "location", o->location);
    return *o->type && *o->location;
}

static const item_list_t OFFERINGS = {"DescribeInstanceTypeOfferingsResponse",
                                      "instanceTypeOfferingSet",
                                      sizeof(nw_ec2_offering_t),
                                      fill_offering,
                                      "instanceTypeOfferingSet.item",
                                      "instanceType or location missing",
                                      true};

nw_rc_t nw_ec2xml_parse_offerings(const char *xml, size_t len, nw_ec2_offerings_t *out, char *next,
                                  size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&OFFERINGS, xml, len, out, next, nextlen, err);
}

void nw_ec2xml_spot_prices_free(nw_ec2_spot_prices_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_spot_price(xmlNode *it, void *e)
{
    nw_ec2_spot_price_t *p = e;
    TXT(it, "instanceType", p->type);
    TXT(it, "availabilityZone", p->zone);
    p->price = dbl(it, "spotPrice");
    p->timestamp_ns = when(it, "timestamp");
    return *p->type && *p->zone && p->price > 0;
}

static const item_list_t SPOT_PRICES = {
    "DescribeSpotPriceHistoryResponse",
    "spotPriceHistorySet",
    sizeof(nw_ec2_spot_price_t),
    fill_spot_price,
    "spotPriceHistorySet.item",
    "instanceType, availabilityZone or spotPrice missing or invalid",
    true};

nw_rc_t nw_ec2xml_parse_spot_prices(const char *xml, size_t len, nw_ec2_spot_prices_t *out,
                                    char *next, size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&SPOT_PRICES, xml, len, out, next, nextlen, err);
}

void nw_ec2xml_istatuses_free(nw_ec2_istatuses_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* The details of one status summary (<instanceStatus>, <systemStatus>) as checks. */
static void status_checks(xmlNode *summary, const char *category, nw_ec2_istatus_t *s)
{
    FOREACH_ITEM(child(summary, "details"), d)
    {
        if (s->nchecks >= NW_EC2_MAX_STATUS_CHECKS)
            return;
        nw_ec2_status_check_t *c = &s->checks[s->nchecks++];
        snprintf(c->category, sizeof c->category, "%s", category);
        TXT(d, "name", c->name);
        TXT(d, "status", c->status);
        c->impaired_since_ns = when(d, "impairedSince");
    }
}

static bool fill_istatus(xmlNode *it, void *e)
{
    nw_ec2_istatus_t *s = e;
    TXT(it, "instanceId", s->id);
    TXT(it, "availabilityZone", s->zone);
    TXT(it, "instanceState/name", s->state);
    TXT(it, "instanceStatus/status", s->instance_status);
    TXT(it, "systemStatus/status", s->system_status);
    status_checks(child(it, "instanceStatus"), "instance", s);
    status_checks(child(it, "systemStatus"), "system", s);
    FOREACH_ITEM(child(it, "eventsSet"), ev)
    {
        if (s->nchecks >= NW_EC2_MAX_STATUS_CHECKS)
            break;
        nw_ec2_status_check_t *c = &s->checks[s->nchecks++];
        snprintf(c->category, sizeof c->category, "event");
        TXT(ev, "code", c->name);
        c->not_before_ns = when(ev, "notBefore");
    }
    return *s->id != 0;
}

static const item_list_t ISTATUS = {"DescribeInstanceStatusResponse",
                                    "instanceStatusSet",
                                    sizeof(nw_ec2_istatus_t),
                                    fill_istatus,
                                    "instanceStatusSet.item",
                                    "instanceId missing",
                                    true};

nw_rc_t nw_ec2xml_parse_instance_status(const char *xml, size_t len, nw_ec2_istatuses_t *out,
                                        char *next, size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&ISTATUS, xml, len, out, next, nextlen, err);
}

void nw_ec2xml_zones_free(nw_ec2_zones_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_zone(xmlNode *it, void *e)
{
    nw_ec2_zone_t *z = e;
    TXT(it, "zoneName", z->name);
    TXT(it, "zoneId", z->zone_id);
    TXT(it, "zoneState", z->state);
    return true;
}

static const item_list_t ZONES = {"DescribeAvailabilityZonesResponse",
                                  "availabilityZoneInfo",
                                  sizeof(nw_ec2_zone_t),
                                  fill_zone,
                                  "",
                                  "",
                                  false};

nw_rc_t nw_ec2xml_parse_zones(const char *xml, size_t len, nw_ec2_zones_t *out, nw_err_t *err)
{
    return PARSE_LIST(&ZONES, xml, len, out, NULL, 0, err);
}

/* ---- subnets, security groups, images ----------------------------------------- */

void nw_ec2xml_subnets_free(nw_ec2_subnets_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nw_ec2xml_tags_free(&l->v[i].tags);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_subnet(xmlNode *it, void *e)
{
    nw_ec2_subnet_t *s = e;
    TXT(it, "subnetId", s->id);
    TXT(it, "availabilityZone", s->zone);
    TXT(it, "availabilityZoneId", s->zone_id);
    TXT(it, "vpcId", s->vpc_id);
    s->available_ips = num(it, "availableIpAddressCount");
    if (!*s->id)
        return false; /* before the tags: a dropped item owns nothing */
    tags(child(it, "tagSet"), &s->tags);
    return true;
}

static const item_list_t SUBNETS = {"DescribeSubnetsResponse",
                                    "subnetSet",
                                    sizeof(nw_ec2_subnet_t),
                                    fill_subnet,
                                    "subnetSet.item.subnetId",
                                    "missing",
                                    true};

nw_rc_t nw_ec2xml_parse_subnets(const char *xml, size_t len, nw_ec2_subnets_t *out, char *next,
                                size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&SUBNETS, xml, len, out, next, nextlen, err);
}

void nw_ec2xml_sgs_free(nw_ec2_sgs_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nw_ec2xml_tags_free(&l->v[i].tags);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_sg(xmlNode *it, void *e)
{
    nw_ec2_sg_t *s = e;
    TXT(it, "groupId", s->id);
    TXT(it, "groupName", s->name);
    TXT(it, "vpcId", s->vpc_id);
    if (!*s->id)
        return false; /* before the tags: a dropped item owns nothing */
    tags(child(it, "tagSet"), &s->tags);
    return true;
}

static const item_list_t SGS = {"DescribeSecurityGroupsResponse",
                                "securityGroupInfo",
                                sizeof(nw_ec2_sg_t),
                                fill_sg,
                                "securityGroupInfo.item.groupId",
                                "missing",
                                true};

nw_rc_t nw_ec2xml_parse_sgs(const char *xml, size_t len, nw_ec2_sgs_t *out, char *next,
                            size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&SGS, xml, len, out, next, nextlen, err);
}

void nw_ec2xml_images_free(nw_ec2_images_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nw_ec2xml_tags_free(&l->v[i].tags);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_image(xmlNode *it, void *e)
{
    nw_ec2_image_t *im = e;
    TXT(it, "imageId", im->id);
    TXT(it, "name", im->name);
    TXT(it, "architecture", im->arch);
    TXT(it, "imageState", im->state);
    TXT(it, "imageOwnerId", im->owner);
    im->creation_ns = when(it, "creationDate");
    im->deprecation_ns = when(it, "deprecationTime");
    if (!*im->id)
        return false; /* before the tags: a dropped item owns nothing */
    tags(child(it, "tagSet"), &im->tags);
    return true;
}

static const item_list_t IMAGES = {"DescribeImagesResponse",
                                   "imagesSet",
                                   sizeof(nw_ec2_image_t),
                                   fill_image,
                                   "imagesSet.item.imageId",
                                   "missing",
                                   true};

nw_rc_t nw_ec2xml_parse_images(const char *xml, size_t len, nw_ec2_images_t *out, char *next,
                               size_t nextlen, nw_err_t *err)
{
    return PARSE_LIST(&IMAGES, xml, len, out, next, nextlen, err);
}

/* ---- launch templates ------------------------------------------------------------ */

void nw_ec2xml_lts_free(nw_ec2_lts_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static NW_MUST_USE nw_rc_t one_lt(xmlNode *n, nw_ec2_lts_t *out, nw_err_t *err)
{
    nw_ec2_lt_t *t = PUSH(out);
    if (!t)
        return OOM(err);
    TXT(n, "launchTemplateId", t->id);
    TXT(n, "launchTemplateName", t->name);
    t->latest_version = num(n, "latestVersionNumber");
    if (!*t->id) {
        out->n--;
        return nw_err_set(err, NW_EPARSE, "launchTemplate.launchTemplateId", "missing");
    }
    return NW_OK;
}

nw_rc_t nw_ec2xml_parse_launch_templates(const char *xml, size_t len, nw_ec2_lts_t *out, char *next,
                                         size_t nextlen, nw_err_t *err)
{
    xmlNode *root;
    nw_rc_t rc = NW_OK;
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    if (next && nextlen)
        next[0] = 0;
    if (is_el(root, "DescribeLaunchTemplatesResponse")) {
        FOREACH_ITEM(child(root, "launchTemplates"), it)
        {
            if ((rc = one_lt(it, out, err)) != NW_OK)
                goto out;
        }
        next_token(root, next, nextlen);
    } else if (is_el(root, "CreateLaunchTemplateResponse") ||
               is_el(root, "DeleteLaunchTemplateResponse")) {
        xmlNode *lt = child(root, "launchTemplate");
        if (!lt) {
            rc = nw_err_set(err, NW_EPARSE, "launchTemplate", "missing");
            goto out;
        }
        rc = one_lt(lt, out, err);
    } else {
        rc = expect(root, "DescribeLaunchTemplatesResponse", err);
    }
out:
    xmlFreeDoc(d);
    return rc;
}

/* ---- instances ---------------------------------------------------------------------- */

void nw_ec2xml_instances_free(nw_ec2_instances_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        nw_ec2xml_tags_free(&l->v[i].tags);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static NW_MUST_USE nw_rc_t instances_set(xmlNode *set, nw_ec2_instances_t *out, nw_err_t *err)
{
    FOREACH_ITEM(set, it)
    {
        nw_ec2_instance_t *i = PUSH(out);
        if (!i)
            return OOM(err);
        TXT(it, "instanceId", i->id);
        TXT(it, "instanceType", i->type);
        TXT(it, "imageId", i->image_id);
        TXT(it, "placement/availabilityZone", i->zone);
        TXT(it, "placement/availabilityZoneId", i->zone_id);
        TXT(it, "placement/groupId", i->pg_id);
        i->partition = (int)num(it, "placement/partitionNumber");
        TXT(it, "instanceState/name", i->state);
        TXT(it, "subnetId", i->subnet_id);
        TXT(it, "privateIpAddress", i->private_ip);
        TXT(it, "instanceLifecycle", i->lifecycle);
        TXT(it, "spotInstanceRequestId", i->spot_request_id);
        TXT(it, "capacityReservationId", i->capacity_reservation_id);
        TXT(it, "iamInstanceProfile/arn", i->profile_arn);
        i->launch_ns = when(it, "launchTime");
        tags(child(it, "tagSet"), &i->tags);
        FOREACH_ITEM(child(it, "groupSet"), g)
        {
            if (i->nsg < NW_EC2_MAX_INSTANCE_SGS) {
                TXT(g, "groupId", i->sg_ids[i->nsg]);
                if (i->sg_ids[i->nsg][0])
                    i->nsg++;
            }
        }
        if (!*i->id) {
            nw_ec2xml_tags_free(&i->tags);
            out->n--;
            return nw_err_set(err, NW_EPARSE, "instancesSet.item.instanceId", "missing");
        }
    }
    return NW_OK;
}

#define XML_OPTS                                                                                   \
    (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOBLANKS |              \
     XML_PARSE_NOCDATA)

/* The reader on an element at depth `depth` named `name`. */
static bool reader_at(xmlTextReaderPtr r, int depth, const char *name)
{
    const xmlChar *n = xmlTextReaderConstLocalName(r);
    return xmlTextReaderNodeType(r) == XML_READER_TYPE_ELEMENT && xmlTextReaderDepth(r) == depth &&
           n && strcmp((const char *)n, name) == 0;
}

/* A reservationSet's items, one reservation expanded at a time (the reader frees each
 * before it reads the next). Starts on the set's element; ends past it. */
static NW_MUST_USE nw_rc_t stream_reservations(xmlTextReaderPtr r, nw_ec2_instances_t *out,
                                               int *ret, nw_err_t *err)
{
    if (xmlTextReaderIsEmptyElement(r)) {
        *ret = xmlTextReaderRead(r);
        return NW_OK;
    }
    *ret = xmlTextReaderRead(r);
    while (*ret == 1 && xmlTextReaderDepth(r) >= 2) {
        if (!reader_at(r, 2, "item")) {
            *ret = xmlTextReaderRead(r);
            continue;
        }
        xmlNode *res = xmlTextReaderExpand(r);
        if (!res)
            return nw_err_set(err, NW_EPARSE, "response", "malformed XML");
        nw_rc_t rc = instances_set(child(res, "instancesSet"), out, err);
        if (rc != NW_OK)
            return rc;
        *ret = xmlTextReaderNext(r);
    }
    return NW_OK;
}

/* DescribeInstances, streamed: a page of 1,000 instances takes about 20 MB as a document
 * tree, where the reader holds one reservation at a time. The reader is on the root
 * element. */
static NW_MUST_USE nw_rc_t stream_instances(xmlTextReaderPtr r, nw_ec2_instances_t *out, char *next,
                                            size_t nextlen, nw_err_t *err)
{
    if (xmlTextReaderIsEmptyElement(r))
        return NW_OK;
    int ret = xmlTextReaderRead(r);
    while (ret == 1 && xmlTextReaderDepth(r) >= 1) {
        if (reader_at(r, 1, "reservationSet")) {
            nw_rc_t rc = stream_reservations(r, out, &ret, err);
            if (rc != NW_OK)
                return rc;
            continue;
        }
        if (reader_at(r, 1, "nextToken") && next && nextlen) {
            xmlNode *t = xmlTextReaderExpand(r);
            if (!t)
                return nw_err_set(err, NW_EPARSE, "response", "malformed XML");
            text(t, next, nextlen);
        }
        ret = xmlTextReaderNodeType(r) == XML_READER_TYPE_ELEMENT ? xmlTextReaderNext(r)
                                                                  : xmlTextReaderRead(r);
    }
    while (ret == 1) /* the rest of the document: malformed XML after the root's end fails */
        ret = xmlTextReaderRead(r);
    if (ret < 0)
        return nw_err_set(err, NW_EPARSE, "response", "malformed XML");
    return NW_OK;
}

nw_rc_t nw_ec2xml_parse_instances(const char *xml, size_t len, nw_ec2_instances_t *out, char *next,
                                  size_t nextlen, nw_err_t *err)
{
    xmlNode *root;
    nw_rc_t rc = NW_OK;
    if (next && nextlen)
        next[0] = 0;
    if (xml && len > 0 && len <= INT_MAX) {
        xmlTextReaderPtr r = xmlReaderForMemory(xml, (int)len, NULL, NULL, XML_OPTS);
        int ret = r ? xmlTextReaderRead(r) : -1;
        while (ret == 1 && xmlTextReaderNodeType(r) != XML_READER_TYPE_ELEMENT)
            ret = xmlTextReaderRead(r);
        if (ret == 1 && reader_at(r, 0, "DescribeInstancesResponse")) {
            rc = stream_instances(r, out, next, nextlen, err);
            xmlFreeTextReader(r);
            return rc;
        }
        xmlFreeTextReader(r); /* another document (RunInstances, an error): as a tree */
    }
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    if (next && nextlen)
        next[0] = 0;
    if (is_el(root, "DescribeInstancesResponse")) {
        FOREACH_ITEM(child(root, "reservationSet"), r)
        {
            if ((rc = instances_set(child(r, "instancesSet"), out, err)) != NW_OK)
                goto out;
        }
        next_token(root, next, nextlen);
    } else if (is_el(root, "RunInstancesResponse")) {
        rc = instances_set(child(root, "instancesSet"), out, err);
    } else {
        rc = expect(root, "DescribeInstancesResponse", err);
    }
out:
    xmlFreeDoc(d);
    return rc;
}

void nw_ec2xml_state_changes_free(nw_ec2_state_changes_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool fill_state_change(xmlNode *it, void *e)
{
    nw_ec2_state_change_t *s = e;
    TXT(it, "instanceId", s->id);
    TXT(it, "currentState/name", s->current);
    TXT(it, "previousState/name", s->previous);
    return true;
}

static const item_list_t STATE_CHANGES = {"TerminateInstancesResponse",
                                          "instancesSet",
                                          sizeof(nw_ec2_state_change_t),
                                          fill_state_change,
                                          "",
                                          "",
                                          false};

nw_rc_t nw_ec2xml_parse_terminate(const char *xml, size_t len, nw_ec2_state_changes_t *out,
                                  nw_err_t *err)
{
    return PARSE_LIST(&STATE_CHANGES, xml, len, out, NULL, 0, err);
}

/* ---- CreateFleet ---------------------------------------------------------------------- */

void nw_ec2xml_fleet_result_free(nw_ec2_fleet_result_t *r)
{
    free(r->inst);
    free(r->errs);
    memset(r, 0, sizeof *r);
}

nw_rc_t nw_ec2xml_parse_fleet(const char *xml, size_t len, nw_ec2_fleet_result_t *out,
                              nw_err_t *err)
{
    xmlNode *root;
    nw_rc_t rc = NW_OK;
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    if ((rc = expect(root, "CreateFleetResponse", err)) != NW_OK)
        goto out;
    TXT(root, "fleetId", out->fleet_id);
    FOREACH_ITEM(child(root, "fleetInstanceSet"), it)
    {
        xmlNode *ov = at(it, "launchTemplateAndOverrides/overrides");
        char type[NW_EC2_ID], life[32];
        TXT(it, "instanceType", type);
        if (!*type)
            TXT(ov, "instanceType", type);
        TXT(it, "lifecycle", life);
        FOREACH_ITEM(child(it, "instanceIds"), idn)
        {
            nw_ec2_fleet_instance_t *fi =
                push((void **)&out->inst, &out->ninst, &out->capinst, sizeof *out->inst);
            if (!fi) {
                rc = OOM(err);
                goto out;
            }
            text(idn, fi->instance_id, sizeof fi->instance_id);
            snprintf(fi->type, sizeof fi->type, "%s", type);
            snprintf(fi->lifecycle, sizeof fi->lifecycle, "%s", life);
            TXT(ov, "availabilityZone", fi->zone);
            TXT(ov, "subnetId", fi->subnet_id);
            TXT(ov, "imageId", fi->image_id);
            TXT(it, "launchTemplateAndOverrides/launchTemplateSpecification/launchTemplateId",
                fi->lt_id);
            if (!*fi->instance_id) {
                out->ninst--;
                rc = nw_err_set(err, NW_EPARSE, "fleetInstanceSet.item.instanceIds.item", "empty");
                goto out;
            }
        }
    }
    FOREACH_ITEM(child(root, "errorSet"), it)
    {
        nw_ec2_fleet_error_t *fe =
            push((void **)&out->errs, &out->nerrs, &out->caperrs, sizeof *out->errs);
        if (!fe) {
            rc = OOM(err);
            goto out;
        }
        xmlNode *ov = at(it, "launchTemplateAndOverrides/overrides");
        TXT(it, "errorCode", fe->code);
        TXT(it, "errorMessage", fe->message);
        TXT(it, "lifecycle", fe->lifecycle);
        TXT(ov, "instanceType", fe->type);
        TXT(ov, "availabilityZone", fe->zone);
        TXT(ov, "subnetId", fe->subnet_id);
        TXT(it, "launchTemplateAndOverrides/launchTemplateSpecification/launchTemplateId",
            fe->lt_id);
    }
out:
    xmlFreeDoc(d);
    return rc;
}

nw_rc_t nw_ec2xml_expect_root(const char *xml, size_t len, const char *rootname, nw_err_t *err)
{
    xmlNode *root;
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    nw_rc_t rc = expect(root, rootname, err);
    xmlFreeDoc(d);
    return rc;
}

/* ---- STS ------------------------------------------------------------------------------ */

nw_rc_t nw_ec2xml_parse_sts(const char *xml, size_t len, nw_sts_result_t *out, nw_err_t *err)
{
    xmlNode *root;
    nw_rc_t rc = NW_OK;
    memset(out, 0, sizeof *out);
    xmlDocPtr d = load(xml, len, &root, err);
    if (!d)
        return NW_EPARSE;
    bool web = is_el(root, "AssumeRoleWithWebIdentityResponse");
    if (web || is_el(root, "AssumeRoleResponse")) {
        const char *res = web ? "AssumeRoleWithWebIdentityResult" : "AssumeRoleResult";
        xmlNode *r = child(root, res);
        xmlNode *c = child(r, "Credentials");
        TXT(c, "AccessKeyId", out->access_key_id);
        TXT(c, "SecretAccessKey", out->secret_access_key);
        TXT(c, "SessionToken", out->session_token);
        out->expiration_ns = when(c, "Expiration");
        TXT(r, "AssumedRoleUser/Arn", out->arn);
        if (!*out->access_key_id || !*out->secret_access_key || !*out->session_token)
            rc = nw_err_set(err, NW_EPARSE, res,
                            "%s.Credentials: AccessKeyId, SecretAccessKey or SessionToken missing",
                            res);
        else if (out->expiration_ns == 0)
            rc = nw_err_set(err, NW_EPARSE, res,
                            "%s.Credentials.Expiration: missing or not an RFC 3339 time", res);
    } else if (is_el(root, "GetCallerIdentityResponse")) {
        xmlNode *r = child(root, "GetCallerIdentityResult");
        TXT(r, "Arn", out->arn);
        TXT(r, "Account", out->account);
        TXT(r, "UserId", out->user_id);
        if (!*out->arn)
            rc = nw_err_set(err, NW_EPARSE, "GetCallerIdentityResult.Arn", "missing");
    } else {
        rc = expect(root, "AssumeRoleWithWebIdentityResponse", err);
    }
    xmlFreeDoc(d);
    return rc;
}
