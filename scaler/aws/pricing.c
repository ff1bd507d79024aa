/* scaler/aws/pricing.c — the Price List Query API's GetProducts; see pricing.h. */
#include "scaler/aws/pricing.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "scaler/aws/awshttp.h"
#include "scaler/aws/awsjson.h"

#define MAX_PAGES 1000

struct nw_pricing {
    nw_awscfg_t cfg;
    nw_creds_t *creds;
    const nw_clock_t *clock;
    int page_size;
    long requests;
};

nw_rc_t nw_pricing_new(const nw_awscfg_t *cfg, nw_creds_t *creds, const nw_clock_t *clock,
                       nw_pricing_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!cfg->region[0] || !cfg->pricing[0])
        return nw_err_set(err, NW_EINVAL, "aws.endpoints.pricing",
                          "no Pricing API endpoint (the region is not known)");
    nw_pricing_t *p = calloc(1, sizeof *p);
    if (!p)
        return nw_err_set(err, NW_ENOMEM, "pricing", "out of memory");
    p->cfg = *cfg;
    p->creds = creds;
    p->clock = clock ? clock : nw_clock_system();
    p->page_size = 100;
    *out = p;
    return NW_OK;
}

void nw_pricing_free(nw_pricing_t *p)
{
    free(p);
}

void nw_pricing_set_page_size(nw_pricing_t *p, int n)
{
    p->page_size = n >= 1 && n <= 100 ? n : 100;
}

long nw_pricing_request_count(const nw_pricing_t *p)
{
    return p->requests;
}

/* ---- parsing ---- */

static NW_MUST_USE nw_rc_t add_price(nw_price_t **v, size_t *n, size_t *cap, const char *type,
                                     double price, nw_err_t *err)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        nw_price_t *q = realloc(*v, nc * sizeof *q);
        if (!q)
            return nw_err_set(err, NW_ENOMEM, "pricing", "out of memory");
        *v = q;
        *cap = nc;
    }
    nw_price_t *e = &(*v)[(*n)++];
    memset(e, 0, sizeof *e);
    snprintf(e->type, sizeof e->type, "%s", type);
    e->price = price;
    return NW_OK;
}

/* One PriceList entry (a JSON document in a string): its instance type and the OnDemand
 * terms' price per unit in currency (pricing.go onDemandPage: the last non-zero one). */
static NW_MUST_USE nw_rc_t parse_product(const char *doc, const char *currency, nw_price_t **v,
                                         size_t *n, size_t *cap, size_t idx, nw_err_t *err)
{
    cJSON *root = cJSON_Parse(doc);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return nw_err_set(err, NW_EPARSE, "PriceList", "PriceList[%zu]: not a JSON object", idx);
    }
    const cJSON *attrs = nw_json_get(nw_json_get(root, "product"), "attributes");
    const char *type = nw_json_str(attrs, "instanceType");
    double price = 0;
    const cJSON *term, *dim;
    const cJSON *od = nw_json_get(nw_json_get(root, "terms"), "OnDemand");
    if (!cJSON_IsObject(od))
        od = NULL;
    cJSON_ArrayForEach(term, od)
    {
        const cJSON *dims = nw_json_get(term, "priceDimensions");
        if (!cJSON_IsObject(dims))
            dims = NULL;
        cJSON_ArrayForEach(dim, dims)
        {
            const char *s = nw_json_str(nw_json_get(dim, "pricePerUnit"), currency);
            char *end = NULL;
            double d = s ? strtod(s, &end) : 0;
            if (s && end != s && *end == 0 && d > 0)
                price = d;
        }
    }
    nw_rc_t rc = NW_OK;
    if (type && *type && strlen(type) < sizeof(*v)->type && price > 0)
        rc = add_price(v, n, cap, type, price, err);
    cJSON_Delete(root);
    return rc;
}

nw_rc_t nw_pricing_parse_page(const char *json, size_t len, const char *currency, nw_price_t **v,
                              size_t *n, size_t *cap, char *next, size_t nextlen, nw_err_t *err)
{
    next[0] = 0;
    cJSON *root = json && len ? cJSON_ParseWithLength(json, len) : NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return nw_err_set(err, NW_EPARSE, "GetProducts", "GetProducts response: not a JSON object");
    }
    nw_rc_t rc = NW_OK;
    const cJSON *list = nw_json_get(root, "PriceList"), *it;
    const char *tok = nw_json_str(root, "NextToken");
    if (list && !cJSON_IsArray(list))
        rc = nw_err_set(err, NW_EPARSE, "PriceList", "PriceList: must be an array");
    else if (tok && strlen(tok) >= nextlen)
        rc = nw_err_set(err, NW_EPARSE, "NextToken", "NextToken: too long");
    else if (tok)
        snprintf(next, nextlen, "%s", tok);
    size_t i = 0;
    if (rc != NW_OK)
        list = NULL;
    cJSON_ArrayForEach(it, list)
    {
        if (!cJSON_IsString(it)) {
            rc = nw_err_set(err, NW_EPARSE, "PriceList", "PriceList[%zu]: must be a string", i);
            break;
        }
        if ((rc = parse_product(it->valuestring, currency, v, n, cap, i, err)) != NW_OK)
            break;
        i++;
    }
    cJSON_Delete(root);
    return rc;
}

/* ---- the call ---- */

static NW_MUST_USE nw_rc_t call(nw_pricing_t *p, const char *body, nw_buf_t *out,
                                nw_sqs_error_t *ae, nw_err_t *err)
{
    nw_awsjson_req_t r = {p->cfg.pricing,
                          p->cfg.pricing_region,
                          "pricing",
                          "AWSPriceListService.GetProducts",
                          1,
                          p->creds,
                          p->clock,
                          p->cfg.call_timeout_ms,
                          NULL,
                          "pricing"};
    p->requests++;
    return nw_awsjson_call(&r, body, out, ae, err);
}

static NW_MUST_USE nw_rc_t add_filter(nw_buf_t *b, const char *field, const char *value)
{
    nw_rc_t rc = nw_buf_adds(b, b->len && b->data[b->len - 1] == '}' ? ",{" : "{");
    if (rc == NW_OK)
        rc = nw_buf_addf(b, "\"Type\":\"TERM_MATCH\",\"Field\":\"%s\",\"Value\":\"", field);
    if (rc == NW_OK)
        rc = nw_buf_add_json_escaped(b, value);
    if (rc == NW_OK)
        rc = nw_buf_adds(b, "\"}");
    return rc;
}

/* One query (tenancy, product family) through all its pages. */
static NW_MUST_USE nw_rc_t query(nw_pricing_t *p, const char *tenancy, const char *family,
                                 const char *currency, nw_price_t **v, size_t *n, size_t *cap,
                                 nw_sqs_error_t *ae, nw_err_t *err)
{
    nw_buf_t req, resp;
    nw_buf_init(&req, 64 * 1024);
    nw_buf_init(&resp, NW_AWSHTTP_MAX_BODY);
    char next[4096] = "";
    size_t before = *n;
    nw_rc_t rc = NW_OK;
    for (int page = 0; rc == NW_OK; page++) {
        if (page == MAX_PAGES) {
            rc = nw_err_set(err, NW_EAWS, "pricing", "GetProducts: more than %d pages", MAX_PAGES);
            break;
        }
        nw_buf_reset(&req);
        rc = nw_buf_adds(&req, "{\"ServiceCode\":\"AmazonEC2\",\"FormatVersion\":\"aws_v1\","
                               "\"Filters\":[");
        if (rc == NW_OK)
            rc = add_filter(&req, "regionCode", p->cfg.region);
        if (rc == NW_OK)
            rc = add_filter(&req, "serviceCode", "AmazonEC2");
        if (rc == NW_OK)
            rc = add_filter(&req, "preInstalledSw", "NA");
        if (rc == NW_OK)
            rc = add_filter(&req, "operatingSystem", "Linux");
        if (rc == NW_OK)
            rc = add_filter(&req, "capacitystatus", "Used");
        if (rc == NW_OK)
            rc = add_filter(&req, "marketoption", "OnDemand");
        if (rc == NW_OK)
            rc = add_filter(&req, "tenancy", tenancy);
        if (rc == NW_OK)
            rc = add_filter(&req, "productFamily", family);
        if (rc == NW_OK)
            rc = nw_buf_addf(&req, "],\"MaxResults\":%d", p->page_size);
        if (rc == NW_OK && next[0]) {
            rc = nw_buf_adds(&req, ",\"NextToken\":\"");
            if (rc == NW_OK)
                rc = nw_buf_add_json_escaped(&req, next);
            if (rc == NW_OK)
                rc = nw_buf_adds(&req, "\"");
        }
        if (rc == NW_OK)
            rc = nw_buf_adds(&req, "}");
        if (rc != NW_OK) {
            rc = nw_err_set(err, rc, "pricing", "out of memory");
            break;
        }
        if ((rc = call(p, nw_buf_str(&req), &resp, ae, err)) != NW_OK ||
            (rc = nw_pricing_parse_page(resp.data, resp.len, currency, v, n, cap, next, sizeof next,
                                        err)) != NW_OK)
            break;
        if (!next[0])
            break;
    }
    if (rc == NW_OK && *n == before)
        rc = nw_err_set(err, NW_EAWS, "pricing",
                        "GetProducts: no on-demand pricing found (%s, %s, region %s)", tenancy,
                        family, p->cfg.region);
    nw_buf_cleanup(&req);
    nw_buf_cleanup(&resp);
    return rc;
}

nw_rc_t nw_pricing_on_demand(nw_pricing_t *p, nw_price_t **out, size_t *n, nw_sqs_error_t *ae,
                             nw_err_t *err)
{
    nw_sqs_error_t dummy;
    if (!ae)
        ae = &dummy;
    memset(ae, 0, sizeof *ae);
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    const char *currency = strncmp(p->cfg.region, "cn-", 3) == 0 ? "CNY" : "USD";
    nw_rc_t rc = query(p, "Shared", "Compute Instance", currency, out, n, &cap, ae, err);
    if (rc == NW_OK)
        rc =
            query(p, "Dedicated", "Compute Instance (bare metal)", currency, out, n, &cap, ae, err);
    if (rc != NW_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
