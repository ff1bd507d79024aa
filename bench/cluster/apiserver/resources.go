package main

import (
	"sort"
	"strings"
)

// resource describes one REST resource the stand-in serves.
type resource struct {
	group      string // "" for the core group
	version    string
	plural     string
	kind       string
	namespaced bool
	status     bool // has a status subresource: writes to the object keep its status, writes to /status keep the rest
	verbs      []string
}

// apiVersion as it appears in objects ("v1", "apps/v1").
func (r *resource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

// key of the resource in the store: "pods", "nodeclaims.karpenter.sh".
func (r *resource) key() string {
	if r.group == "" {
		return r.plural
	}
	return r.plural + "." + r.group
}

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// The resources served: what nodewarden's scaler lists, watches and writes (the twelve
// cached kinds, leases, events, secrets, volumeattachments) and a few that a kubectl
// or a person poking at the stand-in expects.
var resources = []*resource{
	{"", "v1", "pods", "Pod", true, true, allVerbs},
	{"", "v1", "nodes", "Node", false, true, allVerbs},
	{"", "v1", "namespaces", "Namespace", false, true, allVerbs},
	{"", "v1", "persistentvolumes", "PersistentVolume", false, true, allVerbs},
	{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, true, allVerbs},
	{"", "v1", "events", "Event", true, false, allVerbs},
	{"", "v1", "secrets", "Secret", true, false, allVerbs},
	{"", "v1", "configmaps", "ConfigMap", true, false, allVerbs},
	{"", "v1", "services", "Service", true, true, allVerbs},
	{"", "v1", "serviceaccounts", "ServiceAccount", true, false, allVerbs},
	{"apps", "v1", "daemonsets", "DaemonSet", true, true, allVerbs},
	{"apps", "v1", "deployments", "Deployment", true, true, allVerbs},
	{"apps", "v1", "replicasets", "ReplicaSet", true, true, allVerbs},
	{"apps", "v1", "statefulsets", "StatefulSet", true, true, allVerbs},
	{"batch", "v1", "jobs", "Job", true, true, allVerbs},
	{"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, true, allVerbs},
	{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false, false, allVerbs},
	{"storage.k8s.io", "v1", "csinodes", "CSINode", false, false, allVerbs},
	{"storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", false, true, allVerbs},
	{"coordination.k8s.io", "v1", "leases", "Lease", true, false, allVerbs},
	{"events.k8s.io", "v1", "events", "Event", true, false, allVerbs},
	{"karpenter.sh", "v1", "nodepools", "NodePool", false, true, allVerbs},
	{"karpenter.sh", "v1", "nodeclaims", "NodeClaim", false, true, allVerbs},
	{"karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", false, true, allVerbs},
}

var byGV = map[string]map[string]*resource{} // "apps/v1" -> plural -> resource

func init() {
	for _, r := range resources {
		gv := r.apiVersion()
		if byGV[gv] == nil {
			byGV[gv] = map[string]*resource{}
		}
		byGV[gv][r.plural] = r
	}
}

// groups in discovery order (the core group is served under /api).
func groups() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range resources {
		if r.group != "" && !seen[r.group] {
			seen[r.group] = true
			out = append(out, r.group)
		}
	}
	sort.Strings(out)
	return out
}

func resourcesOf(gv string) []*resource {
	var out []*resource
	for _, r := range resources {
		if r.apiVersion() == gv {
			out = append(out, r)
		}
	}
	return out
}

// reqPath is a parsed request path: /api/v1/namespaces/ns/pods/name/status.
type reqPath struct {
	res       *resource
	namespace string
	name      string
	sub       string
}

// parsePath returns ok=false for paths that are not a served resource.
func parsePath(p string) (reqPath, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var gv string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, rest = parts[1]+"/"+parts[2], parts[3:]
	default:
		return reqPath{}, false
	}
	rs := byGV[gv]
	if rs == nil {
		return reqPath{}, false
	}
	var out reqPath
	if len(rest) >= 2 && rest[0] == "namespaces" {
		if len(rest) == 2 { // GET /api/v1/namespaces/x: the namespace object itself
			out.res = rs["namespaces"]
			out.name = rest[1]
			return out, out.res != nil
		}
		if len(rest) == 3 && rest[2] == "status" && rs["namespaces"] != nil {
			return reqPath{res: rs["namespaces"], name: rest[1], sub: "status"}, true
		}
		out.namespace = rest[1]
		rest = rest[2:]
	}
	if len(rest) == 0 || len(rest) > 3 {
		return reqPath{}, false
	}
	out.res = rs[rest[0]]
	if out.res == nil {
		return reqPath{}, false
	}
	if out.namespace != "" && !out.res.namespaced {
		return reqPath{}, false
	}
	if len(rest) >= 2 {
		out.name = rest[1]
	}
	if len(rest) == 3 {
		out.sub = rest[2]
	}
	return out, true
}
