/*
 * scaler/aws/userdata_int.h — what the files of the userData renderer share
 * (scaler/aws/userdata.h is their public face): the output buffer, the user's MIME parts, the
 * kubelet settings every family writes, and each family's renderer. Only for userdata.c (the
 * entry, nw_userdata_render), the renderers userdata_al2.c, userdata_al2023.c,
 * userdata_bottlerocket.c and userdata_kubeadm.c, userdata_mime.c (the user's MIME parts) and
 * userdata_common.c (the output buffer, the kubelet settings): a file calls only files after
 * it in this list (tools/check_layers.py fails on a link cycle).
 */
#ifndef NW_SCALER_AWS_USERDATA_INT_H
#define NW_SCALER_AWS_USERDATA_INT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "scaler/aws/userdata.h"

#define UD_MAX (16 * 1024 * 1024)
#define CT_SHELL "text/x-shellscript; charset=\"us-ascii\""
#define CT_NODECONFIG "application/node.eks.aws"

/* output buffer that remembers its first failure */
typedef struct {
    nw_buf_t b;
    nw_rc_t rc;
} out_t;

/* one MIME part of the userData */
typedef struct {
    char *headers; /* "Key: value\n" lines, canonical keys, sorted */
    char *content;
} part_t;

typedef struct {
    part_t *v;
    int n;
} parts_t;

/* ---- userdata_common.c: the output buffer, the kubelet settings ------------------------------ */

/** printf into o (nothing once o failed). */
void nw_userdata_common_put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** s quoted as Go's %q does for the printable ASCII Kubernetes labels and taints use. */
void nw_userdata_common_put_quoted(out_t *o, const char *s);
/** --node-labels="k=v,..." of the n labels l (nothing when there are none). */
void nw_userdata_common_node_label_arg(out_t *w, const nw_ud_label_t *l, int n);
/** Go's Duration.String of a duration text ("1m" -> "1m0s"); the text when it does not
 * parse. */
void nw_userdata_common_go_duration(const char *s, char *out, size_t n);
/** The integer spec.kubelet field k of kub; *has = 0 (and 0) when it is not a number. */
int64_t nw_userdata_common_kubelet_int(const cJSON *kub, const char *k, int *has);
/** spec.kubelet.clusterDNS[0], else the kube-dns Service's address; NULL when neither. */
const char *nw_userdata_common_cluster_dns(const nw_ud_opts_t *o);
/** True when the node is IPv6: its cluster DNS is not an IPv4 address. */
bool nw_userdata_common_ipv6_node(const nw_ud_opts_t *o);
/** spec.kubelet as KubeletConfiguration fields (new object, the caller deletes it). */
cJSON *nw_userdata_common_kubelet_config(const nw_ud_opts_t *o);

/* ---- userdata_mime.c: the user's MIME parts -------------------------------------------------- */

void nw_userdata_mime_parts_free(parts_t *p);
/** Append a part of Content-Type ctype. */
NW_MUST_USE nw_rc_t nw_userdata_mime_parts_add_typed(parts_t *p, const char *ctype,
                                                     const char *content);
/** The parts p as one multipart/mixed document into w. */
void nw_userdata_mime_write(out_t *w, const parts_t *p);
/** Finish a family's output: the script in s (its buffer is freed) as the last shell part
 * after the user's parts, the MIME document written to w, the parts freed. An error of s
 * or of the parts is "userData too large" on spec.userData. */
NW_MUST_USE nw_rc_t nw_userdata_mime_finish_shell(out_t *w, parts_t *parts, out_t *s,
                                                  nw_err_t *err);
/** The user's userData ud (NULL/"": none) as parts appended to out. */
NW_MUST_USE nw_rc_t nw_userdata_mime_custom_parts(const char *ud, int al2023, parts_t *out,
                                                  nw_err_t *err);

/* ---- userdata_<family>.c: the userData of o with the nl labels l a kubelet may set, into w --- */

NW_MUST_USE nw_rc_t nw_userdata_al2_render(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl,
                                           out_t *w, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_userdata_al2023_render(const nw_ud_opts_t *o, const nw_ud_label_t *l, int nl,
                                              out_t *w, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_userdata_bottlerocket_render(const nw_ud_opts_t *o, const nw_ud_label_t *l,
                                                    int nl, out_t *w, nw_err_t *err);
NW_MUST_USE nw_rc_t nw_userdata_kubeadm_render(const nw_ud_opts_t *o, const nw_ud_label_t *l,
                                               int nl, out_t *w, nw_err_t *err);

#endif
