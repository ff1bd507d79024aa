/*
 * api/drifthash.c — NodePool and EC2NodeClass static-drift hashes (see drifthash.h),
 * computed as Karpenter computes them: mitchellh/hashstructure v2.0.2, FormatV2, options
 * SlicesAsSets, IgnoreZeroValue and ZeroNil, walking Karpenter's Go types.
 *
 * hashstructure's walk, value by value (H is FNV-1 64, Go's hash/fnv New64, over bytes;
 * ordered(a, b) = H(a as 8 bytes LE, b as 8 bytes LE); finish(a) = H(a as 8 bytes LE)):
 *   string           H(bytes)                      (named string types too)
 *   bool             H(1 byte: 0 or 1)             int32 / int64: H(4 / 8 bytes LE)
 *   time.Time        H(MarshalBinary(t))           time.Duration: an int64 (ns)
 *   pointer          the value pointed to; nil: the zero value of that type (ZeroNil)
 *   struct           h = H(type name); for each exported field in declaration order that
 *                    is not tagged hash:"ignore" and is not its type's zero value
 *                    (IgnoreZeroValue): h = finish(h ^ ordered(H(field name), field hash));
 *                    a field tagged hash:"string" is hashed as its String()
 *   slice            XOR of the element hashes (SlicesAsSets; no finish)
 *   map              finish(XOR of ordered(H(key), H(value)))
 * Zero values follow Go, not JSON: a nil pointer, nil slice or nil map is zero, but an
 * empty list or object present in the JSON ([] / {}) is not, and a pointer to "" is not.
 *
 * The Go types are tables below (go_type_t), the NodePool's NodeClaimTemplate and the
 * EC2NodeClassSpec, with their Go field names, order, kinds and tags; the JSON object is
 * read through them, as Karpenter's JSON decoding fills the Go structs.
 */
#include "api/drifthash.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "api/quantity.h"
#include "common/clock.h"
#include "common/json.h"

#define FNV_INIT UINT64_C(14695981039346656037)
#define FNV_PRIME UINT64_C(1099511628211)
#define MAX_DEPTH 16

/* ---- hashstructure's primitives ---- */

/* FNV-1 (multiply, then xor): Go's hash/fnv New64, hashstructure's default Hasher */
static uint64_t fnv1(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = FNV_INIT;
    for (size_t i = 0; i < n; i++) {
        h *= FNV_PRIME;
        h ^= b[i];
    }
    return h;
}

static uint64_t hstr(const char *s)
{
    return fnv1(s, strlen(s));
}

static void le(unsigned char *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t hint(uint64_t v, int bytes)
{
    unsigned char b[8];
    le(b, v, bytes);
    return fnv1(b, (size_t)bytes);
}

static uint64_t ordered(uint64_t a, uint64_t b)
{
    unsigned char buf[16];
    le(buf, a, 8);
    le(buf + 8, b, 8);
    return fnv1(buf, sizeof buf);
}

static uint64_t finish(uint64_t a)
{
    return hint(a, 8);
}

/* ---- the Go types ---- */

typedef enum {
    GO_STRING,
    GO_BOOL,
    GO_INT32,
    GO_INT64,
    GO_DURATION, /* time.Duration, read from a Go duration string */
    GO_TIME,     /* time.Time, read from RFC 3339 */
    GO_STRUCT,
    GO_SLICE,
    GO_MAP, /* map[string]elem */
} go_kind_t;

enum {
    F_PTR = 1,    /* *T */
    F_IGNORE = 2, /* hash:"ignore" */
    F_QTY_STR = 4 /* *resource.Quantity tagged hash:"string": hashed as its String() */
};

typedef struct go_type go_type_t;

typedef struct {
    const char *name; /* the Go field name, hashed */
    const char *json; /* its JSON key; NULL: the field is the whole JSON value (an
                         embedded time.Duration / time.Time read from one string) */
    const go_type_t *type;
    unsigned flags;
} go_field_t;

struct go_type {
    go_kind_t kind;
    const char *name; /* struct: the Go type name, hashed */
    const go_field_t *fields;
    size_t nfields;
    const go_type_t *elem; /* slice and map */
    unsigned elem_flags;   /* F_PTR for []*T */
};

#define FIELDS(a) a, sizeof a / sizeof *a

static const go_type_t T_STRING = {GO_STRING, NULL, NULL, 0, NULL, 0};
static const go_type_t T_BOOL = {GO_BOOL, NULL, NULL, 0, NULL, 0};
static const go_type_t T_INT32 = {GO_INT32, NULL, NULL, 0, NULL, 0};
static const go_type_t T_INT64 = {GO_INT64, NULL, NULL, 0, NULL, 0};
static const go_type_t T_GODURATION = {GO_DURATION, NULL, NULL, 0, NULL, 0};
static const go_type_t T_GOTIME = {GO_TIME, NULL, NULL, 0, NULL, 0};
static const go_type_t T_MAP_STRING = {GO_MAP, NULL, NULL, 0, &T_STRING, 0};
static const go_type_t T_SLICE_STRING = {GO_SLICE, NULL, NULL, 0, &T_STRING, 0};
/* a slice that is never hashed, only asked whether it is nil (reflect IsZero of the
 * struct that holds it counts ignored fields too) */
static const go_type_t T_SLICE_UNHASHED = {GO_SLICE, NULL, NULL, 0, NULL, 0};

/* k8s.io/apimachinery metav1.Duration: struct { time.Duration }, JSON "1h" */
static const go_field_t METAV1_DURATION[] = {{"Duration", NULL, &T_GODURATION, 0}};
static const go_type_t T_METAV1_DURATION = {GO_STRUCT, "Duration", FIELDS(METAV1_DURATION), NULL,
                                            0};
/* metav1.Time: struct { time.Time }, JSON RFC 3339 */
static const go_field_t METAV1_TIME[] = {{"Time", NULL, &T_GOTIME, 0}};
static const go_type_t T_METAV1_TIME = {GO_STRUCT, "Time", FIELDS(METAV1_TIME), NULL, 0};
/* karpenter v1.NillableDuration: struct { *time.Duration; Raw []byte `hash:"ignore"` };
 * "Never" leaves the pointer nil (Raw is set exactly when the pointer is, and ignored) */
static const go_field_t NILLABLE_DURATION[] = {{"Duration", NULL, &T_GODURATION, F_PTR}};
static const go_type_t T_NILLABLE_DURATION = {GO_STRUCT, "NillableDuration",
                                              FIELDS(NILLABLE_DURATION), NULL, 0};

/* k8s.io/api core/v1 Taint */
static const go_field_t TAINT[] = {{"Key", "key", &T_STRING, 0},
                                   {"Value", "value", &T_STRING, 0},
                                   {"Effect", "effect", &T_STRING, 0},
                                   {"TimeAdded", "timeAdded", &T_METAV1_TIME, F_PTR}};
static const go_type_t T_TAINT = {GO_STRUCT, "Taint", FIELDS(TAINT), NULL, 0};
static const go_type_t T_SLICE_TAINT = {GO_SLICE, NULL, NULL, 0, &T_TAINT, 0};

/* sigs.k8s.io/karpenter pkg/apis/v1: ObjectMeta, NodeClassReference, NodeClaimTemplateSpec,
 * NodeClaimTemplate (NodePool.Spec.Template) */
static const go_field_t OBJECT_META[] = {{"Labels", "labels", &T_MAP_STRING, 0},
                                         {"Annotations", "annotations", &T_MAP_STRING, 0}};
static const go_type_t T_OBJECT_META = {GO_STRUCT, "ObjectMeta", FIELDS(OBJECT_META), NULL, 0};
static const go_field_t NODECLASS_REF[] = {{"Kind", "kind", &T_STRING, 0},
                                           {"Name", "name", &T_STRING, 0},
                                           {"Group", "group", &T_STRING, 0}};
static const go_type_t T_NODECLASS_REF = {GO_STRUCT, "NodeClassReference", FIELDS(NODECLASS_REF),
                                          NULL, 0};
static const go_field_t NODECLAIM_TEMPLATE_SPEC[] = {
    {"Taints", "taints", &T_SLICE_TAINT, 0},
    {"StartupTaints", "startupTaints", &T_SLICE_TAINT, 0},
    {"Requirements", "requirements", &T_SLICE_UNHASHED, F_IGNORE},
    {"NodeClassRef", "nodeClassRef", &T_NODECLASS_REF, F_PTR},
    {"TerminationGracePeriod", "terminationGracePeriod", &T_METAV1_DURATION, F_PTR},
    {"ExpireAfter", "expireAfter", &T_NILLABLE_DURATION, 0}};
static const go_type_t T_NODECLAIM_TEMPLATE_SPEC = {GO_STRUCT, "NodeClaimTemplateSpec",
                                                    FIELDS(NODECLAIM_TEMPLATE_SPEC), NULL, 0};
static const go_field_t NODECLAIM_TEMPLATE[] = {{"ObjectMeta", "metadata", &T_OBJECT_META, 0},
                                                {"Spec", "spec", &T_NODECLAIM_TEMPLATE_SPEC, 0}};
static const go_type_t T_NODECLAIM_TEMPLATE = {GO_STRUCT, "NodeClaimTemplate",
                                               FIELDS(NODECLAIM_TEMPLATE), NULL, 0};

/* aws/karpenter-provider-aws pkg/apis/v1: EC2NodeClassSpec and what it holds */
static const go_field_t PLACEMENT_GROUP_SELECTOR[] = {{"Name", "name", &T_STRING, F_PTR},
                                                      {"ID", "id", &T_STRING, F_PTR}};
static const go_type_t T_PLACEMENT_GROUP_SELECTOR = {GO_STRUCT, "PlacementGroupSelector",
                                                     FIELDS(PLACEMENT_GROUP_SELECTOR), NULL, 0};
static const go_type_t T_MAP_METAV1_DURATION = {GO_MAP, NULL, NULL, 0, &T_METAV1_DURATION, 0};
static const go_field_t KUBELET[] = {
    {"ClusterDNS", "clusterDNS", &T_SLICE_STRING, 0},
    {"MaxPods", "maxPods", &T_INT32, F_PTR},
    {"PodsPerCore", "podsPerCore", &T_INT32, F_PTR},
    {"SystemReserved", "systemReserved", &T_MAP_STRING, 0},
    {"KubeReserved", "kubeReserved", &T_MAP_STRING, 0},
    {"EvictionHard", "evictionHard", &T_MAP_STRING, 0},
    {"EvictionSoft", "evictionSoft", &T_MAP_STRING, 0},
    {"EvictionSoftGracePeriod", "evictionSoftGracePeriod", &T_MAP_METAV1_DURATION, 0},
    {"EvictionMaxPodGracePeriod", "evictionMaxPodGracePeriod", &T_INT32, F_PTR},
    {"ImageGCHighThresholdPercent", "imageGCHighThresholdPercent", &T_INT32, F_PTR},
    {"ImageGCLowThresholdPercent", "imageGCLowThresholdPercent", &T_INT32, F_PTR},
    {"CPUCFSQuota", "cpuCFSQuota", &T_BOOL, F_PTR}};
static const go_type_t T_KUBELET = {GO_STRUCT, "KubeletConfiguration", FIELDS(KUBELET), NULL, 0};
static const go_field_t BLOCK_DEVICE[] = {
    {"DeleteOnTermination", "deleteOnTermination", &T_BOOL, F_PTR},
    {"Encrypted", "encrypted", &T_BOOL, F_PTR},
    {"IOPS", "iops", &T_INT64, F_PTR},
    {"KMSKeyID", "kmsKeyID", &T_STRING, F_PTR},
    {"SnapshotID", "snapshotID", &T_STRING, F_PTR},
    {"Throughput", "throughput", &T_INT64, F_PTR},
    {"VolumeInitializationRate", "volumeInitializationRate", &T_INT32, F_PTR},
    {"VolumeSize", "volumeSize", &T_STRING, F_PTR | F_QTY_STR},
    {"VolumeType", "volumeType", &T_STRING, F_PTR}};
static const go_type_t T_BLOCK_DEVICE = {GO_STRUCT, "BlockDevice", FIELDS(BLOCK_DEVICE), NULL, 0};
static const go_field_t BLOCK_DEVICE_MAPPING[] = {{"DeviceName", "deviceName", &T_STRING, F_PTR},
                                                  {"EBS", "ebs", &T_BLOCK_DEVICE, F_PTR},
                                                  {"RootVolume", "rootVolume", &T_BOOL, 0}};
static const go_type_t T_BLOCK_DEVICE_MAPPING = {GO_STRUCT, "BlockDeviceMapping",
                                                 FIELDS(BLOCK_DEVICE_MAPPING), NULL, 0};
static const go_type_t T_SLICE_BDM = {GO_SLICE, NULL, NULL, 0, &T_BLOCK_DEVICE_MAPPING, F_PTR};
static const go_field_t NETWORK_INTERFACE[] = {
    {"NetworkCardIndex", "networkCardIndex", &T_INT32, 0},
    {"DeviceIndex", "deviceIndex", &T_INT32, 0},
    {"InterfaceType", "interfaceType", &T_STRING, 0}};
static const go_type_t T_NETWORK_INTERFACE = {GO_STRUCT, "NetworkInterface",
                                              FIELDS(NETWORK_INTERFACE), NULL, 0};
static const go_type_t T_SLICE_NETWORK_INTERFACE = {GO_SLICE, NULL, NULL, 0, &T_NETWORK_INTERFACE,
                                                    F_PTR};
static const go_field_t METADATA_OPTIONS[] = {
    {"HTTPEndpoint", "httpEndpoint", &T_STRING, F_PTR},
    {"HTTPProtocolIPv6", "httpProtocolIPv6", &T_STRING, F_PTR},
    {"HTTPPutResponseHopLimit", "httpPutResponseHopLimit", &T_INT64, F_PTR},
    {"HTTPTokens", "httpTokens", &T_STRING, F_PTR}};
static const go_type_t T_METADATA_OPTIONS = {GO_STRUCT, "MetadataOptions", FIELDS(METADATA_OPTIONS),
                                             NULL, 0};
static const go_field_t CONNECTION_TRACKING[] = {
    {"TCPEstablishedTimeout", "tcpEstablishedTimeout", &T_INT32, F_PTR},
    {"UDPStreamTimeout", "udpStreamTimeout", &T_INT32, F_PTR},
    {"UDPTimeout", "udpTimeout", &T_INT32, F_PTR}};
static const go_type_t T_CONNECTION_TRACKING = {GO_STRUCT, "ConnectionTracking",
                                                FIELDS(CONNECTION_TRACKING), NULL, 0};
static const go_field_t CPU_OPTIONS[] = {
    {"NestedVirtualization", "nestedVirtualization", &T_STRING, F_PTR}};
static const go_type_t T_CPU_OPTIONS = {GO_STRUCT, "CPUOptions", FIELDS(CPU_OPTIONS), NULL, 0};
static const go_field_t EC2NODECLASS_SPEC[] = {
    {"SubnetSelectorTerms", "subnetSelectorTerms", NULL, F_IGNORE},
    {"SecurityGroupSelectorTerms", "securityGroupSelectorTerms", NULL, F_IGNORE},
    {"CapacityReservationSelectorTerms", "capacityReservationSelectorTerms", NULL, F_IGNORE},
    {"PlacementGroupSelector", "placementGroupSelector", &T_PLACEMENT_GROUP_SELECTOR, F_PTR},
    {"AssociatePublicIPAddress", "associatePublicIPAddress", &T_BOOL, F_PTR},
    {"IPPrefixCount", "ipPrefixCount", NULL, F_IGNORE},
    {"AMISelectorTerms", "amiSelectorTerms", NULL, F_IGNORE},
    {"AMIFamily", "amiFamily", NULL, F_IGNORE},
    {"UserData", "userData", &T_STRING, F_PTR},
    {"Role", "role", &T_STRING, 0},
    {"InstanceProfile", "instanceProfile", &T_STRING, F_PTR},
    {"Tags", "tags", &T_MAP_STRING, 0},
    {"Kubelet", "kubelet", &T_KUBELET, F_PTR},
    {"BlockDeviceMappings", "blockDeviceMappings", &T_SLICE_BDM, 0},
    {"InstanceStorePolicy", "instanceStorePolicy", &T_STRING, F_PTR},
    {"NetworkInterfaces", "networkInterfaces", &T_SLICE_NETWORK_INTERFACE, 0},
    {"DetailedMonitoring", "detailedMonitoring", &T_BOOL, F_PTR},
    {"MetadataOptions", "metadataOptions", &T_METADATA_OPTIONS, F_PTR},
    {"ConnectionTracking", "connectionTracking", &T_CONNECTION_TRACKING, F_PTR},
    {"Context", "context", &T_STRING, F_PTR},
    {"CPUOptions", "cpuOptions", &T_CPU_OPTIONS, F_PTR}};
static const go_type_t T_EC2NODECLASS_SPEC = {GO_STRUCT, "EC2NodeClassSpec",
                                              FIELDS(EC2NODECLASS_SPEC), NULL, 0};

/* ---- reading JSON through the Go types ---- */

typedef struct {
    nw_err_t *err;
    char path[256];
} walk_t;

static NW_MUST_USE nw_rc_t bad(walk_t *w, const char *what)
{
    return nw_err_set(w->err, NW_EINVAL, w->path, "%s: %s", w->path, what);
}

/* absent and JSON null decode to Go's zero value (the API server prunes nulls anyway) */
static bool absent(const cJSON *v)
{
    return !v || cJSON_IsNull(v);
}

/* The JSON value a field reads: a member of the struct's object, or the value itself. */
static const cJSON *field_json(const go_field_t *f, const cJSON *v)
{
    if (!f->json)
        return v;
    return cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, f->json) : NULL;
}

/* A Go duration; "Never" (NillableDuration) is absent. */
static NW_MUST_USE nw_rc_t read_duration(walk_t *w, const cJSON *v, int64_t *ns, int *never)
{
    *ns = 0;
    *never = 0;
    if (absent(v))
        return NW_OK;
    if (!cJSON_IsString(v))
        return bad(w, "must be a duration string");
    bool is_never = false;
    if (nw_duration_parse_or_never(v->valuestring, true, ns, &is_never, NULL) != NW_OK)
        return bad(w, "invalid duration");
    if (is_never) {
        *ns = 0;
        *never = 1;
    }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t read_int(walk_t *w, const cJSON *v, int bits, int64_t *out)
{
    *out = 0;
    if (absent(v))
        return NW_OK;
    if (!cJSON_IsNumber(v))
        return bad(w, "must be an integer");
    double d = v->valuedouble;
    double lim = bits == 32 ? 2147483648.0 : 9223372036854775808.0;
    if (d != (double)(int64_t)d || d >= lim || d < -lim)
        return bad(w, "must be an integer in range");
    *out = (int64_t)d;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t is_zero(walk_t *w, const go_field_t *f, const cJSON *v, int *zero,
                                   int depth);
static NW_MUST_USE nw_rc_t push(walk_t *w, size_t *mark, const char *seg, int index);

/* reflect.Value.IsZero of a struct value: every field zero */
static NW_MUST_USE nw_rc_t struct_is_zero(walk_t *w, const go_type_t *t, const cJSON *v, int *zero,
                                          int depth)
{
    *zero = 1;
    if (depth > MAX_DEPTH)
        return bad(w, "nested too deeply");
    for (size_t i = 0; i < t->nfields && *zero; i++) {
        const go_field_t *f = &t->fields[i];
        if (!f->type) /* only in EC2NodeClassSpec, which is never asked */
            continue;
        size_t mark = strlen(w->path);
        nw_rc_t rc = f->json ? push(w, &mark, f->json, -1) : NW_OK;
        if (rc == NW_OK)
            rc = is_zero(w, f, field_json(f, v), zero, depth + 1);
        w->path[mark] = 0;
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t is_zero(walk_t *w, const go_field_t *f, const cJSON *v, int *zero,
                                   int depth)
{
    *zero = 1;
    if (f->type && f->type->kind == GO_DURATION) {
        int64_t ns;
        int never;
        nw_rc_t rc = read_duration(w, v, &ns, &never);
        if (rc != NW_OK || never)
            return rc;
        if (!absent(v))
            *zero = (f->flags & F_PTR) ? 0 : ns == 0;
        return NW_OK;
    }
    if (absent(v))
        return NW_OK;
    if (f->flags & F_PTR) {
        *zero = 0;
        return NW_OK;
    }
    switch (f->type->kind) {
    case GO_STRING:
        *zero = cJSON_IsString(v) && !*v->valuestring;
        return NW_OK;
    case GO_BOOL:
        *zero = cJSON_IsFalse(v);
        return NW_OK;
    case GO_INT32:
    case GO_INT64:
        *zero = cJSON_IsNumber(v) && v->valuedouble == 0;
        return NW_OK;
    case GO_STRUCT:
        return struct_is_zero(w, f->type, v, zero, depth);
    default: /* a present slice or map is not nil; a time is never the zero time here */
        *zero = 0;
        return NW_OK;
    }
}

/* Kubernetes' Quantity.String() of a quantity as ParseQuantity read it: the text as
 * typed when ParseQuantity's fast path finds it canonical (it keeps the string then),
 * else the canonical form (k8s.io/apimachinery pkg/api/resource quantity.go). */
static NW_MUST_USE nw_rc_t quantity_string(walk_t *w, const char *s, char *out, size_t cap)
{
    nw_quantity_t q;
    if (nw_quantity_parse(s, &q, NULL) != NW_OK)
        return bad(w, "invalid quantity");
    if (strcmp(s, "0") == 0) {
        snprintf(out, cap, "0");
        return NW_OK;
    }
    size_t pos = 0, end = strlen(s);
    if (s[pos] == '-' || s[pos] == '+')
        pos++;
    while (pos < end && s[pos] == '0')
        pos++;
    size_t num0 = pos;
    while (pos < end && isdigit((unsigned char)s[pos]))
        pos++;
    char num[64] = "0", denom[64] = "";
    if (pos > num0 && pos - num0 < sizeof num) {
        memcpy(num, s + num0, pos - num0);
        num[pos - num0] = 0;
    }
    bool echo = false;
    if (pos - num0 < sizeof num) {
        if (pos < end && s[pos] == '.') {
            size_t d0 = ++pos;
            while (pos < end && isdigit((unsigned char)s[pos]))
                pos++;
            if (pos - d0 < sizeof denom) {
                memcpy(denom, s + d0, pos - d0);
                denom[pos - d0] = 0;
            }
        }
        const char *suf = s + pos;
        static const char *const bin[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
        static const char dec[] = "num\0kMGTPE";
        static const int decexp[] = {-9, -6, -3, 0, 3, 6, 9, 12, 15, 18};
        int binexp = -1, exp = 0;
        for (int i = 0; i < 6; i++)
            if (strcmp(suf, bin[i]) == 0)
                binexp = 10 * (i + 1);
        if (binexp < 0 && strlen(suf) == 1) {
            const char *p = memchr(dec, *suf, sizeof dec - 1);
            exp = p && *suf ? decexp[p - dec] : 0;
        } else if (binexp < 0 && (*suf == 'e' || *suf == 'E'))
            exp = atoi(suf + 1);
        int nl = (int)strlen(num), dl = (int)strlen(denom);
        char shifted[130];
        snprintf(shifted, sizeof shifted, "%s%s", num, denom);
        if (binexp >= 0) {
            int precision = 15 - nl - (int)((float)binexp * 3 / 10) - 1;
            if (dl == 0 && precision >= 0) {
                int64_t value = strtoll(shifted, NULL, 10);
                if (value <= (INT64_MAX >> binexp))
                    echo = (value & 7) != 0;
            }
        } else if (18 - (nl + dl) >= 0) {
            int scale = exp - dl;
            size_t sl = strlen(shifted);
            if (scale >= -9)
                echo = scale % 3 == 0 && !(sl >= 3 && strcmp(shifted + sl - 3, "000") == 0) &&
                       shifted[0] != '0';
        }
    }
    if (echo)
        snprintf(out, cap, "%s", s);
    else
        nw_quantity_format(q, out, cap);
    return NW_OK;
}

/* time.Time.MarshalBinary of an RFC 3339 time decoded by metav1.Time (t.Local(); in
 * Karpenter's container the local zone is UTC, which MarshalBinary writes as offset 0,
 * not as the -1 it writes for time.UTC itself): version 1, seconds since year 1 (8 bytes
 * BE), nanoseconds (4 BE), zone offset in minutes (2 BE). */
static NW_MUST_USE nw_rc_t hash_time(walk_t *w, const cJSON *v, uint64_t *out)
{
    int64_t sec = 0, nsec = 0;
    bool utc = true; /* the zero time.Time is in time.UTC */
    if (!absent(v)) {
        int64_t ns;
        if (!cJSON_IsString(v) || nw_clock_time_parse(v->valuestring, &ns) != NW_OK)
            return bad(w, "must be an RFC 3339 time");
        sec = ns / 1000000000;
        nsec = ns % 1000000000;
        if (nsec < 0) {
            nsec += 1000000000;
            sec--;
        }
        sec += INT64_C(62135596800);
        utc = false;
    }
    unsigned char b[15];
    b[0] = 1;
    for (int i = 0; i < 8; i++)
        b[1 + i] = (unsigned char)((uint64_t)sec >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        b[9 + i] = (unsigned char)((uint64_t)nsec >> (24 - 8 * i));
    int16_t off = utc ? -1 : 0;
    b[13] = (unsigned char)((uint16_t)off >> 8);
    b[14] = (unsigned char)(uint16_t)off;
    *out = fnv1(b, sizeof b);
    return NW_OK;
}

static NW_MUST_USE nw_rc_t visit(walk_t *w, const go_type_t *t, const cJSON *v, int depth,
                                 uint64_t *out);

static NW_MUST_USE nw_rc_t push(walk_t *w, size_t *mark, const char *seg, int index)
{
    *mark = strlen(w->path);
    int n = index >= 0
                ? snprintf(w->path + *mark, sizeof w->path - *mark, "[%d]", index)
                : snprintf(w->path + *mark, sizeof w->path - *mark, "%s%s", *mark ? "." : "", seg);
    if (n < 0 || (size_t)n >= sizeof w->path - *mark) {
        w->path[*mark] = 0;
        return bad(w, "path too long");
    }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t visit_struct(walk_t *w, const go_type_t *t, const cJSON *v, int depth,
                                        uint64_t *out)
{
    if (!absent(v) && !cJSON_IsObject(v) && !(t->nfields && !t->fields[0].json))
        return bad(w, "must be an object");
    uint64_t h = hstr(t->name);
    for (size_t i = 0; i < t->nfields; i++) {
        const go_field_t *f = &t->fields[i];
        if (f->flags & F_IGNORE)
            continue;
        const cJSON *fv = field_json(f, v);
        size_t mark = strlen(w->path);
        nw_rc_t rc = f->json ? push(w, &mark, f->json, -1) : NW_OK;
        int zero = 1;
        if (rc == NW_OK)
            rc = is_zero(w, f, fv, &zero, depth + 1);
        uint64_t vh = 0;
        if (rc == NW_OK && !zero) {
            if (f->flags & F_QTY_STR) {
                char q[NW_QUANTITY_STR_MAX + 128];
                if (!cJSON_IsString(fv))
                    rc = bad(w, "must be a quantity string");
                else if ((rc = quantity_string(w, fv->valuestring, q, sizeof q)) == NW_OK)
                    vh = hstr(q);
            } else
                rc = visit(w, f->type, fv, depth + 1, &vh);
        }
        w->path[mark] = 0;
        if (rc != NW_OK)
            return rc;
        if (!zero)
            h = finish(h ^ ordered(hstr(f->name), vh));
    }
    *out = h;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t visit(walk_t *w, const go_type_t *t, const cJSON *v, int depth,
                                 uint64_t *out)
{
    if (depth > MAX_DEPTH)
        return bad(w, "nested too deeply");
    int64_t n = 0;
    nw_rc_t rc;
    switch (t->kind) {
    case GO_STRING:
        if (!absent(v) && !cJSON_IsString(v))
            return bad(w, "must be a string");
        *out = hstr(absent(v) ? "" : v->valuestring);
        return NW_OK;
    case GO_BOOL:
        if (!absent(v) && !cJSON_IsBool(v))
            return bad(w, "must be a boolean");
        *out = hint(cJSON_IsTrue(v) ? 1 : 0, 1);
        return NW_OK;
    case GO_INT32:
    case GO_INT64:
        if ((rc = read_int(w, v, t->kind == GO_INT32 ? 32 : 64, &n)) != NW_OK)
            return rc;
        *out = hint((uint64_t)n, t->kind == GO_INT32 ? 4 : 8);
        return NW_OK;
    case GO_DURATION: {
        int never;
        if ((rc = read_duration(w, v, &n, &never)) != NW_OK)
            return rc;
        *out = hint((uint64_t)n, 8);
        return NW_OK;
    }
    case GO_TIME:
        return hash_time(w, v, out);
    case GO_STRUCT:
        return visit_struct(w, t, v, depth, out);
    case GO_SLICE: {
        if (!absent(v) && !cJSON_IsArray(v))
            return bad(w, "must be a list");
        uint64_t h = 0;
        int i = 0;
        const cJSON *e, *list = absent(v) ? NULL : v;
        cJSON_ArrayForEach(e, list)
        {
            size_t mark;
            uint64_t eh = 0;
            if ((rc = push(w, &mark, NULL, i++)) != NW_OK)
                return rc;
            rc = visit(w, t->elem, e, depth + 1, &eh);
            w->path[mark] = 0;
            if (rc != NW_OK)
                return rc;
            h ^= eh;
        }
        *out = h;
        return NW_OK;
    }
    case GO_MAP: {
        if (!absent(v) && !cJSON_IsObject(v))
            return bad(w, "must be an object");
        uint64_t h = 0;
        const cJSON *e, *list = absent(v) ? NULL : v;
        cJSON_ArrayForEach(e, list)
        {
            /* a repeated key: Go's decoder keeps the last value */
            const cJSON *later = e->next;
            while (later && strcmp(later->string, e->string) != 0)
                later = later->next;
            if (later)
                continue;
            size_t mark;
            uint64_t eh = 0;
            if ((rc = push(w, &mark, e->string, -1)) != NW_OK)
                return rc;
            rc = visit(w, t->elem, e, depth + 1, &eh);
            w->path[mark] = 0;
            if (rc != NW_OK)
                return rc;
            h ^= ordered(hstr(e->string), eh);
        }
        *out = finish(h);
        return NW_OK;
    }
    }
    return bad(w, "unknown type");
}

static void to_text(uint64_t h, char out[NW_HASH_LEN])
{
    snprintf(out, NW_HASH_LEN, "%" PRIu64, h);
}

/* ---- NodePool: hashstructure.Hash(spec.template) (karpenter pkg/apis/v1/nodepool.go) ---- */

nw_rc_t nw_drifthash_nodepool(const cJSON *nodepool, char out[NW_HASH_LEN], nw_err_t *err)
{
    out[0] = 0;
    const cJSON *tmpl = nw_json_get(nw_json_get(nodepool, "spec"), "template");
    if (!cJSON_IsObject(tmpl))
        return nw_err_set(err, NW_EINVAL, "spec.template", "spec.template: Required value");
    walk_t w = {err, "spec.template"};
    uint64_t h = 0;
    nw_rc_t rc = visit(&w, &T_NODECLAIM_TEMPLATE, tmpl, 0, &h);
    if (rc != NW_OK)
        return rc;
    to_text(h, out);
    return NW_OK;
}

/* ---- EC2NodeClass: Hash([]any{spec, AMIFamily(), caBundle}) (aws pkg/apis/v1) ---- */

const char *nw_drifthash_ami_family(const cJSON *nodeclass)
{
    const cJSON *spec = nw_json_get(nodeclass, "spec");
    const cJSON *fam = nw_json_get(spec, "amiFamily");
    if (cJSON_IsString(fam)) /* a *string: set, even to "", wins */
        return fam->valuestring;
    static const char *const fams[][2] = {{"al2", "AL2"},
                                          {"al2023", "AL2023"},
                                          {"bottlerocket", "Bottlerocket"},
                                          {"windows2019", "Windows2019"},
                                          {"windows2022", "Windows2022"},
                                          {"windows2025", "Windows2025"}};
    const cJSON *t;
    cJSON_ArrayForEach(t, nw_json_get(spec, "amiSelectorTerms"))
    {
        const char *alias = nw_json_str(t, "alias");
        if (!alias || !*alias)
            continue;
        size_t n = strcspn(alias, "@");
        for (size_t i = 0; i < sizeof fams / sizeof *fams; i++)
            if (strlen(fams[i][0]) == n && strncmp(alias, fams[i][0], n) == 0)
                return fams[i][1];
        break;
    }
    return "Custom";
}

nw_rc_t nw_drifthash_ec2nodeclass(const cJSON *nodeclass, const char *ca_bundle,
                                  char out[NW_HASH_LEN], nw_err_t *err)
{
    out[0] = 0;
    const cJSON *spec = nw_json_get(nodeclass, "spec");
    if (!cJSON_IsObject(spec))
        return nw_err_set(err, NW_EINVAL, "spec", "spec: Required value");
    walk_t w = {err, "spec"};
    uint64_t h = 0;
    nw_rc_t rc = visit(&w, &T_EC2NODECLASS_SPEC, spec, 0, &h);
    if (rc != NW_OK)
        return rc;
    /* a []any walked as a set: the XOR of its three elements' hashes */
    h ^= hstr(nw_drifthash_ami_family(nodeclass));
    h ^= hstr(ca_bundle ? ca_bundle : "");
    to_text(h, out);
    return NW_OK;
}

/* ---- annotations ---- */

static cJSON *annotations(cJSON *obj)
{
    cJSON *md = nw_json_get_mut(obj, "metadata");
    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        md = nw_json_add_object(obj, "metadata");
    }
    cJSON *ann = nw_json_get_mut(md, "annotations");
    if (!cJSON_IsObject(ann)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        ann = nw_json_add_object(md, "annotations");
    }
    return ann;
}

static void put(cJSON *ann, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(ann, k);
    nw_json_add_string(ann, k, v);
}

nw_rc_t nw_drifthash_stamp_nodeclaim(cJSON *nodeclaim, const cJSON *nodepool,
                                     const cJSON *nodeclass, const char *ca_bundle, nw_err_t *err)
{
    char h[NW_HASH_LEN];
    nw_rc_t rc = NW_OK;
    cJSON *ann = annotations(nodeclaim);
    if (!ann)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    if (nodepool) {
        if ((rc = nw_drifthash_nodepool(nodepool, h, err)) == NW_OK) {
            put(ann, NW_ANN_NODEPOOL_HASH, h);
            put(ann, NW_ANN_NODEPOOL_HASH_VERSION, NW_NODEPOOL_HASH_VERSION);
        }
    }
    if (nodeclass) {
        nw_rc_t rc2 = nw_drifthash_ec2nodeclass(nodeclass, ca_bundle, h, rc == NW_OK ? err : NULL);
        if (rc2 == NW_OK) {
            put(ann, NW_ANN_NODECLASS_HASH, h);
            put(ann, NW_ANN_NODECLASS_HASH_VERSION, NW_NODECLASS_HASH_VERSION);
        } else if (rc == NW_OK)
            rc = rc2;
    }
    return rc;
}

bool nw_drifthash_annotation_is(const cJSON *obj, const char *key, const char *value)
{
    const char *v = nw_json_str(nw_json_get(nw_json_get(obj, "metadata"), "annotations"), key);
    return v && value && strcmp(v, value) == 0;
}
