package main

// The generated cluster: Nodes and their NodeClaims, DaemonSet pods on every node, pods of
// Deployments (through ReplicaSets), StatefulSets (with PVCs and zonal PVs) and Jobs, PDBs,
// namespaces, StorageClasses, CSINodes, one EC2NodeClass and two NodePools. Objects are
// shaped and sized as kube-apiserver sends them (managedFields, conditions with
// timestamps, container statuses, the projected service-account volume), and serialized
// once: a LIST sends the stored bytes.

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"time"
)

// genConfig is what to generate.
type genConfig struct {
	nodes, pods int
	cluster     string // the simulator's cluster name (discovery tags)
	region      string
	seed        int64
	hashes      hashes
}

// hashes are the drift-hash annotations nodewarden computes for the NodePools and the
// EC2NodeClass (learned by the driver from a first short run): generated NodeClaims carry
// them, as NodeClaims Karpenter launched from these pools would.
type hashes struct {
	NodePools      map[string]string `json:"nodepools"`
	EC2NodeClasses map[string]string `json:"ec2nodeclasses"`
}

const (
	nodePoolHashVersion  = "v3"
	nodeClassHashVersion = "v5"
	burstLabel           = "bench.nodewarden.io/pool"
)

var letters = []byte("bcdfghjklmnpqrstvwxz2456789")

var rng = rand.New(rand.NewSource(1))

func randSuffix(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.Intn(len(letters))]
	}
	return string(b)
}

func hexID(n int) string {
	const h = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = h[rng.Intn(16)]
	}
	return string(b)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// ---- instance types of the existing nodes (all in the simulator's catalog) ----------

type itype struct {
	name, family, size, category string
	gen, cpu, memGi, maxPods     int
}

var nodeTypes = []itype{
	{"m5.2xlarge", "m5", "2xlarge", "m", 5, 8, 32, 58},
	{"m5.4xlarge", "m5", "4xlarge", "m", 5, 16, 64, 234},
	{"m6i.2xlarge", "m6i", "2xlarge", "m", 6, 8, 32, 58},
	{"c5.4xlarge", "c5", "4xlarge", "c", 5, 16, 32, 234},
	{"c6i.4xlarge", "c6i", "4xlarge", "c", 6, 16, 32, 234},
	{"r5.2xlarge", "r5", "2xlarge", "r", 5, 8, 64, 58},
	{"r6i.2xlarge", "r6i", "2xlarge", "r", 6, 8, 64, 58},
}

// ---- shared object parts -------------------------------------------------------------

type ownerRef struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

var trueP = func() *bool { b := true; return &b }()

type managedField struct {
	Manager     string          `json:"manager"`
	Operation   string          `json:"operation"`
	APIVersion  string          `json:"apiVersion"`
	Time        string          `json:"time"`
	FieldsType  string          `json:"fieldsType"`
	FieldsV1    json.RawMessage `json:"fieldsV1"`
	Subresource string          `json:"subresource,omitempty"`
}

type objectMeta struct {
	Name                       string            `json:"name"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        string            `json:"uid"`
	ResourceVersion            string            `json:"resourceVersion"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          string            `json:"creationTimestamp"`
	DeletionTimestamp          string            `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []ownerRef        `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	ManagedFields              []managedField    `json:"managedFields,omitempty"`
}

type condition struct {
	Type               string  `json:"type"`
	Status             string  `json:"status"`
	ObservedGeneration int64   `json:"observedGeneration,omitempty"`
	LastProbeTime      *string `json:"lastProbeTime,omitempty"`
	LastHeartbeatTime  string  `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime string  `json:"lastTransitionTime"`
	Reason             string  `json:"reason,omitempty"`
	Message            string  `json:"message,omitempty"`
}

// fieldsV1 renders a managedFields fieldsV1 set ("f:a":{"f:b":{}} ...) from dotted paths.
func fieldsV1(paths ...string) json.RawMessage {
	type node map[string]node
	root := node{}
	for _, p := range paths {
		cur := root
		for _, part := range strings.Split(p, "|") {
			if cur[part] == nil {
				cur[part] = node{}
			}
			cur = cur[part]
		}
	}
	var render func(n node, top bool) any
	render = func(n node, top bool) any {
		m := map[string]any{}
		if len(n) > 1 && !top {
			m["."] = map[string]any{}
		}
		for k, c := range n {
			m[k] = render(c, false)
		}
		return m
	}
	return mustJSON(render(root, true))
}

// ---- the generated objects' store -----------------------------------------------------

// put stores a generated object without an event: the cluster's state before anyone
// watches. Caller holds s.mu.
func (s *store) put(r *resource, ns, name, uid string, labels map[string]string, nodeName, phase string, build func(rv string) []byte) *object {
	rv := s.nextRV()
	o := &object{key: objKey(ns, name), ns: ns, name: name, uid: uid, rv: rv, labels: labels,
		nodeName: nodeName, phase: phase, gen: true}
	o.data = build(rvString(rv))
	ks := s.kind(r)
	ks.objs[o.key] = o
	ks.sorted = nil
	return o
}

func res(group, plural string) *resource {
	for _, r := range resources {
		if r.group == group && r.plural == plural {
			return r
		}
	}
	panic("no resource " + plural)
}

var (
	rPods       = res("", "pods")
	rNodes      = res("", "nodes")
	rNamespaces = res("", "namespaces")
	rPVs        = res("", "persistentvolumes")
	rPVCs       = res("", "persistentvolumeclaims")
	rDS         = res("apps", "daemonsets")
	rPDBs       = res("policy", "poddisruptionbudgets")
	rSCs        = res("storage.k8s.io", "storageclasses")
	rCSINodes   = res("storage.k8s.io", "csinodes")
	rNodePools  = res("karpenter.sh", "nodepools")
	rNodeClaims = res("karpenter.sh", "nodeclaims")
	rNodeClass  = res("karpenter.k8s.aws", "ec2nodeclasses")
)

// genNode is what the pods and the churn need to know of a node.
type genNode struct {
	name, zone, hostIP string
	podCIDR            int
	free               int // workload pod slots left while placing
	nextIP             int
}

// cluster is the generator's memory of what it made.
type cluster struct {
	cfg       genConfig
	nodes     []*genNode
	workloads []*workload // the Deployments' templates, reused by the churn and the burst
	born      time.Time
	zones     []string
	poolUID   map[string]string
}

func (c *cluster) podIP(n *genNode) string {
	n.nextIP++
	return fmt.Sprintf("10.%d.%d.%d", 64+n.podCIDR/256%64, n.podCIDR%256, n.nextIP%250+2)
}

// generate fills the store. It returns the generator's memory for the churn.
func generate(s *store, cfg genConfig) *cluster {
	rng = rand.New(rand.NewSource(cfg.seed))
	c := &cluster{cfg: cfg, born: time.Now().Add(-48 * time.Hour), poolUID: map[string]string{}}
	for _, z := range "abc" {
		c.zones = append(c.zones, cfg.region+string(z))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.genNamespaces(s)
	c.genStorageClasses(s)
	c.genNodePools(s)
	c.genNodes(s)
	c.genPods(s)
	for _, ks := range s.kinds {
		ks.oldestRV = s.rv
	}
	return c
}

// ---- namespaces, storage classes --------------------------------------------------------

var teamNamespaces = func() []string {
	var out []string
	for _, t := range []string{"payments", "checkout", "search", "catalog", "identity", "ads", "ml", "data", "web", "mobile"} {
		for _, e := range []string{"prod", "staging", "canary", "batch", "internal"} {
			out = append(out, t+"-"+e)
		}
	}
	return out
}()

func (c *cluster) genNamespaces(s *store) {
	all := append([]string{"default", "kube-system", "kube-public", "kube-node-lease", "nodewarden"}, teamNamespaces...)
	for _, ns := range all {
		uid := s.newUID()
		created := c.born
		labels := map[string]string{"kubernetes.io/metadata.name": ns}
		if strings.Contains(ns, "-") && !strings.HasPrefix(ns, "kube-") {
			labels["team"] = strings.SplitN(ns, "-", 2)[0]
			labels["environment"] = strings.SplitN(ns, "-", 2)[1]
		}
		s.put(rNamespaces, "", ns, uid, labels, "", "Active", func(rv string) []byte {
			return mustJSON(map[string]any{"kind": "Namespace", "apiVersion": "v1",
				"metadata": objectMeta{Name: ns, UID: uid, ResourceVersion: rv, CreationTimestamp: ts(created), Labels: labels,
					ManagedFields: []managedField{{Manager: "kubectl-create", Operation: "Update", APIVersion: "v1", Time: ts(created),
						FieldsType: "FieldsV1", FieldsV1: fieldsV1("f:metadata|f:labels|f:kubernetes.io/metadata.name")}}},
				"spec":   map[string]any{"finalizers": []string{"kubernetes"}},
				"status": map[string]any{"phase": "Active"}})
		})
	}
}

func (c *cluster) genStorageClasses(s *store) {
	for i, name := range []string{"gp3", "gp2"} {
		uid := s.newUID()
		ann := map[string]string{}
		if i == 0 {
			ann["storageclass.kubernetes.io/is-default-class"] = "true"
		}
		s.put(rSCs, "", name, uid, nil, "", "", func(rv string) []byte {
			return mustJSON(map[string]any{"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1",
				"metadata":    objectMeta{Name: name, UID: uid, ResourceVersion: rv, CreationTimestamp: ts(c.born), Annotations: ann},
				"provisioner": "ebs.csi.aws.com", "parameters": map[string]string{"type": name, "encrypted": "true"},
				"reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true})
		})
	}
}

// ---- NodePools and the EC2NodeClass -------------------------------------------------------

func (c *cluster) genNodePools(s *store) {
	cls := "default"
	uid := s.newUID()
	ann := map[string]string{}
	if h := c.cfg.hashes.EC2NodeClasses[cls]; h != "" {
		ann["karpenter.k8s.aws/ec2nodeclass-hash"] = h
		ann["karpenter.k8s.aws/ec2nodeclass-hash-version"] = nodeClassHashVersion
	}
	tag := map[string]string{"karpenter.sh/discovery": c.cfg.cluster}
	s.put(rNodeClass, "", cls, uid, nil, "", "", func(rv string) []byte {
		return mustJSON(map[string]any{"kind": "EC2NodeClass", "apiVersion": "karpenter.k8s.aws/v1",
			"metadata": objectMeta{Name: cls, UID: uid, ResourceVersion: rv, Generation: 1, CreationTimestamp: ts(c.born),
				Annotations: ann, Finalizers: []string{"karpenter.k8s.aws/termination"}},
			"spec": map[string]any{
				"amiFamily":                  "Custom",
				"amiSelectorTerms":           []any{map[string]any{"tags": tag}},
				"subnetSelectorTerms":        []any{map[string]any{"tags": tag}},
				"securityGroupSelectorTerms": []any{map[string]any{"tags": tag}},
				"role":                       "KarpenterNodeRole-" + c.cfg.cluster,
				"userData":                   "#!/bin/bash\nkubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:0000\n",
				"metadataOptions": map[string]any{"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
					"httpPutResponseHopLimit": 1, "httpTokens": "required"},
				"tags": map[string]string{"team": "platform"},
			}})
	})
	// "default" holds the existing nodes; "burst" is where the burst's pods must go (their
	// nodeSelector), so none of them fits on an existing node.
	for _, pool := range []string{"default", "burst"} {
		pool := pool
		uid := s.newUID()
		c.poolUID[pool] = uid
		ann := map[string]string{}
		if h := c.cfg.hashes.NodePools[pool]; h != "" {
			ann["karpenter.sh/nodepool-hash"] = h
			ann["karpenter.sh/nodepool-hash-version"] = nodePoolHashVersion
		}
		tmplLabels := map[string]string{"team": "platform"}
		if pool == "burst" {
			tmplLabels[burstLabel] = "burst"
		}
		s.put(rNodePools, "", pool, uid, nil, "", "", func(rv string) []byte {
			return mustJSON(map[string]any{"kind": "NodePool", "apiVersion": "karpenter.sh/v1",
				"metadata": objectMeta{Name: pool, UID: uid, ResourceVersion: rv, Generation: 1, CreationTimestamp: ts(c.born), Annotations: ann},
				"spec": map[string]any{
					"template": map[string]any{
						"metadata": map[string]any{"labels": tmplLabels},
						"spec": map[string]any{
							"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": cls},
							"requirements": []any{
								map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []string{"amd64"}},
								map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []string{"linux"}},
								map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []string{"on-demand", "spot"}},
								map[string]any{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": []string{"c", "m", "r"}},
								map[string]any{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": []string{"4"}},
							},
							"expireAfter": "Never",
						},
					},
					// the benchmark keeps the cluster it measures: no consolidation, and no
					// disruption of any kind (budget 0)
					"disruption": map[string]any{"consolidationPolicy": "WhenEmptyOrUnderutilized",
						"consolidateAfter": "Never", "budgets": []any{map[string]any{"nodes": "0"}}},
				}})
		})
	}
}

// ---- Nodes, NodeClaims, CSINodes ------------------------------------------------------------

// images a node has pulled: status.images, about 40 entries as on a busy node
var nodeImages = func() []any {
	var out []any
	repos := []string{"public.ecr.aws/eks-distro/kubernetes/pause", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni",
		"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy", "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver",
		"quay.io/prometheus/node-exporter", "cr.fluentbit.io/fluent/fluent-bit", "registry.k8s.io/coredns/coredns",
		"docker.io/library/nginx", "docker.io/library/redis", "ghcr.io/example/payments-api", "ghcr.io/example/checkout-web",
		"ghcr.io/example/search-indexer", "ghcr.io/example/catalog-api", "ghcr.io/example/identity", "ghcr.io/example/ads-server",
		"ghcr.io/example/ml-inference", "ghcr.io/example/data-etl", "ghcr.io/example/web-frontend", "ghcr.io/example/mobile-bff",
		"docker.io/envoyproxy/envoy"}
	for i := 0; i < 40; i++ {
		repo := repos[i%len(repos)]
		tag := fmt.Sprintf("v1.%d.%d", i%7, i)
		digest := fmt.Sprintf("%064x", uint64(i+1)*0x9e3779b97f4a7c15)
		out = append(out, map[string]any{"names": []string{repo + "@sha256:" + digest[:64], repo + ":" + tag},
			"sizeBytes": 20000000 + i*7340033})
	}
	return out
}()

func (c *cluster) genNodes(s *store) {
	for i := 0; i < c.cfg.nodes; i++ {
		t := nodeTypes[i%len(nodeTypes)]
		zone := c.zones[i%len(c.zones)]
		ct := "on-demand"
		if i%3 == 2 {
			ct = "spot"
		}
		ip := fmt.Sprintf("10.%d.%d.%d", i/62500%64, i/250%250, i%250+2)
		name := "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + c.cfg.region + ".compute.internal"
		iid := "i-0" + hexID(16)
		pid := "aws:///" + zone + "/" + iid
		claim := "default-" + randSuffix(5)
		created := c.born.Add(time.Duration(i) * time.Second)
		n := &genNode{name: name, zone: zone, hostIP: ip, podCIDR: i, free: 16}
		c.nodes = append(c.nodes, n)
		allocCPU := fmt.Sprintf("%dm", t.cpu*1000-80-t.cpu*10)
		allocMem := fmt.Sprintf("%dKi", t.memGi*1024*1024-(255+11*t.maxPods)*1024-100*1024)
		capacity := map[string]string{"cpu": fmt.Sprint(t.cpu), "memory": fmt.Sprintf("%dKi", t.memGi*1024*1024-200*1024),
			"pods": fmt.Sprint(t.maxPods), "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
		alloc := map[string]string{"cpu": allocCPU, "memory": allocMem, "pods": fmt.Sprint(t.maxPods),
			"ephemeral-storage": "95551679124", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
		labels := map[string]string{
			"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": t.name, "beta.kubernetes.io/os": "linux",
			"failure-domain.beta.kubernetes.io/region": c.cfg.region, "failure-domain.beta.kubernetes.io/zone": zone,
			"k8s.io/cloud-provider-aws": "7d2c1f4f5c9e3b1a", "karpenter.k8s.aws/ec2nodeclass": "default",
			"karpenter.k8s.aws/instance-category": t.category, "karpenter.k8s.aws/instance-cpu": fmt.Sprint(t.cpu),
			"karpenter.k8s.aws/instance-cpu-manufacturer": "intel", "karpenter.k8s.aws/instance-ebs-bandwidth": "4750",
			"karpenter.k8s.aws/instance-encryption-in-transit-supported": "false", "karpenter.k8s.aws/instance-family": t.family,
			"karpenter.k8s.aws/instance-generation": fmt.Sprint(t.gen), "karpenter.k8s.aws/instance-hypervisor": "nitro",
			"karpenter.k8s.aws/instance-memory": fmt.Sprint(t.memGi * 1024), "karpenter.k8s.aws/instance-network-bandwidth": "2500",
			"karpenter.k8s.aws/instance-size": t.size, "karpenter.sh/capacity-type": ct, "karpenter.sh/initialized": "true",
			"karpenter.sh/nodepool": "default", "karpenter.sh/registered": "true", "kubernetes.io/arch": "amd64",
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": t.name,
			"team": "platform", "topology.ebs.csi.aws.com/zone": zone, "topology.k8s.aws/zone-id": "usw2-az" + zone[len(zone)-1:],
			"topology.kubernetes.io/region": c.cfg.region, "topology.kubernetes.io/zone": zone,
		}
		poolHash := c.cfg.hashes.NodePools["default"]
		classHash := c.cfg.hashes.EC2NodeClasses["default"]
		claimUID := s.newUID()
		nodeUID := s.newUID()
		condTimes := ts(created.Add(40 * time.Second))
		// the NodeClaim Karpenter launched for this node
		s.put(rNodeClaims, "", claim, claimUID, map[string]string{"karpenter.sh/nodepool": "default"}, "", "", func(rv string) []byte {
			ann := map[string]string{"karpenter.k8s.aws/tagged": "true", "compatibility.karpenter.k8s.aws/kubelet-drift-hash": "15379597991425564585"}
			if poolHash != "" {
				ann["karpenter.sh/nodepool-hash"] = poolHash
				ann["karpenter.sh/nodepool-hash-version"] = nodePoolHashVersion
			}
			if classHash != "" {
				ann["karpenter.k8s.aws/ec2nodeclass-hash"] = classHash
				ann["karpenter.k8s.aws/ec2nodeclass-hash-version"] = nodeClassHashVersion
			}
			cl := map[string]string{}
			for k, v := range labels {
				if strings.HasPrefix(k, "karpenter.") || strings.HasPrefix(k, "node.kubernetes.io/") || strings.HasPrefix(k, "kubernetes.io/arch") ||
					k == "topology.kubernetes.io/zone" || k == "topology.kubernetes.io/region" || k == "team" || k == "kubernetes.io/os" {
					cl[k] = v
				}
			}
			delete(cl, "karpenter.sh/registered")
			delete(cl, "karpenter.sh/initialized")
			cond := func(typ string) condition {
				return condition{Type: typ, Status: "True", ObservedGeneration: 1, LastTransitionTime: condTimes, Reason: typ, Message: ""}
			}
			return mustJSON(map[string]any{"kind": "NodeClaim", "apiVersion": "karpenter.sh/v1",
				"metadata": objectMeta{Name: claim, UID: claimUID, ResourceVersion: rv, Generation: 1, CreationTimestamp: ts(created),
					Labels: cl, Annotations: ann, Finalizers: []string{"karpenter.sh/termination"},
					OwnerReferences: []ownerRef{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: "default", UID: c.poolUID["default"], BlockOwnerDeletion: trueP}},
					ManagedFields: []managedField{
						{Manager: "karpenter", Operation: "Update", APIVersion: "karpenter.sh/v1", Time: ts(created), FieldsType: "FieldsV1",
							FieldsV1: fieldsV1("f:metadata|f:annotations|f:karpenter.sh/nodepool-hash", "f:metadata|f:annotations|f:karpenter.k8s.aws/tagged",
								"f:metadata|f:finalizers|v:\"karpenter.sh/termination\"", "f:metadata|f:labels|f:karpenter.sh/nodepool",
								"f:metadata|f:labels|f:node.kubernetes.io/instance-type", "f:metadata|f:ownerReferences|k:{\"uid\":\"\"}",
								"f:spec|f:expireAfter", "f:spec|f:nodeClassRef|f:group", "f:spec|f:nodeClassRef|f:kind", "f:spec|f:nodeClassRef|f:name",
								"f:spec|f:requirements", "f:spec|f:resources|f:requests|f:cpu", "f:spec|f:resources|f:requests|f:memory",
								"f:spec|f:resources|f:requests|f:pods")},
						{Manager: "karpenter", Operation: "Update", APIVersion: "karpenter.sh/v1", Time: condTimes, FieldsType: "FieldsV1", Subresource: "status",
							FieldsV1: fieldsV1("f:status|f:allocatable|f:cpu", "f:status|f:allocatable|f:memory", "f:status|f:allocatable|f:pods",
								"f:status|f:capacity|f:cpu", "f:status|f:capacity|f:memory", "f:status|f:capacity|f:pods", "f:status|f:conditions",
								"f:status|f:imageID", "f:status|f:lastPodEventTime", "f:status|f:nodeName", "f:status|f:providerID")},
					}},
				"spec": map[string]any{
					"expireAfter":  "Never",
					"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
					"requirements": []any{
						map[string]any{"key": "karpenter.sh/nodepool", "operator": "In", "values": []string{"default"}},
						map[string]any{"key": "karpenter.k8s.aws/ec2nodeclass", "operator": "In", "values": []string{"default"}},
						map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []string{"amd64"}},
						map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []string{"linux"}},
						map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []string{ct}},
						map[string]any{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": []string{"c", "m", "r"}},
						map[string]any{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": []string{"4"}},
						map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []string{t.name}},
						map[string]any{"key": "team", "operator": "In", "values": []string{"platform"}},
					},
					"resources": map[string]any{"requests": map[string]string{"cpu": "4210m", "memory": "9000Mi", "pods": "20"}},
				},
				"status": map[string]any{
					"providerID": pid, "imageID": "ami-0sim0000000000001", "nodeName": name,
					"capacity":         map[string]string{"cpu": capacity["cpu"], "memory": capacity["memory"], "pods": capacity["pods"], "ephemeral-storage": "20Gi"},
					"allocatable":      map[string]string{"cpu": allocCPU, "memory": allocMem, "pods": alloc["pods"], "ephemeral-storage": "17Gi"},
					"lastPodEventTime": condTimes,
					"conditions":       []condition{cond("Launched"), cond("Registered"), cond("Initialized"), cond("Ready")},
				}})
		})
		hb := ts(time.Now().Add(-time.Duration(rng.Intn(240)) * time.Second))
		s.put(rNodes, "", name, nodeUID, labels, "", "", func(rv string) []byte {
			nc := func(typ, st, reason, msg string) condition {
				return condition{Type: typ, Status: st, LastHeartbeatTime: hb, LastTransitionTime: condTimes, Reason: reason, Message: msg}
			}
			return mustJSON(map[string]any{"kind": "Node", "apiVersion": "v1",
				"metadata": objectMeta{Name: name, UID: nodeUID, ResourceVersion: rv, CreationTimestamp: ts(created.Add(25 * time.Second)),
					Labels: labels,
					Annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": ip, "csi.volume.kubernetes.io/nodeid": `{"ebs.csi.aws.com":"` + iid + `"}`,
						"karpenter.k8s.aws/ec2nodeclass-hash": classHash, "karpenter.k8s.aws/ec2nodeclass-hash-version": nodeClassHashVersion,
						"karpenter.sh/nodepool-hash": poolHash, "karpenter.sh/nodepool-hash-version": nodePoolHashVersion,
						"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
					OwnerReferences: []ownerRef{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: claim, UID: claimUID, BlockOwnerDeletion: trueP}},
					Finalizers:      []string{"karpenter.sh/termination"},
					ManagedFields: []managedField{
						{Manager: "kubelet", Operation: "Update", APIVersion: "v1", Time: ts(created.Add(25 * time.Second)), FieldsType: "FieldsV1",
							FieldsV1: fieldsV1("f:metadata|f:annotations|f:alpha.kubernetes.io/provided-node-ip", "f:metadata|f:annotations|f:node.alpha.kubernetes.io/ttl",
								"f:metadata|f:annotations|f:volumes.kubernetes.io/controller-managed-attach-detach", "f:metadata|f:labels|f:beta.kubernetes.io/arch",
								"f:metadata|f:labels|f:beta.kubernetes.io/os", "f:metadata|f:labels|f:kubernetes.io/arch", "f:metadata|f:labels|f:kubernetes.io/hostname",
								"f:metadata|f:labels|f:kubernetes.io/os", "f:spec|f:providerID")},
						{Manager: "karpenter", Operation: "Update", APIVersion: "v1", Time: condTimes, FieldsType: "FieldsV1",
							FieldsV1: fieldsV1("f:metadata|f:finalizers|v:\"karpenter.sh/termination\"", "f:metadata|f:labels|f:karpenter.sh/initialized",
								"f:metadata|f:labels|f:karpenter.sh/nodepool", "f:metadata|f:labels|f:karpenter.sh/registered",
								"f:metadata|f:ownerReferences|k:{\"uid\":\""+claimUID+"\"}")},
						{Manager: "kubelet", Operation: "Update", APIVersion: "v1", Time: hb, FieldsType: "FieldsV1", Subresource: "status",
							FieldsV1: fieldsV1("f:status|f:allocatable|f:cpu", "f:status|f:allocatable|f:memory", "f:status|f:capacity|f:cpu",
								"f:status|f:conditions|k:{\"type\":\"DiskPressure\"}|f:lastHeartbeatTime", "f:status|f:conditions|k:{\"type\":\"MemoryPressure\"}|f:lastHeartbeatTime",
								"f:status|f:conditions|k:{\"type\":\"PIDPressure\"}|f:lastHeartbeatTime", "f:status|f:conditions|k:{\"type\":\"Ready\"}|f:lastHeartbeatTime",
								"f:status|f:images", "f:status|f:nodeInfo|f:bootID", "f:status|f:volumesInUse")},
					}},
				"spec": map[string]any{"providerID": pid, "podCIDR": fmt.Sprintf("10.%d.%d.0/24", 64+i/256%64, i%256)},
				"status": map[string]any{
					"capacity": capacity, "allocatable": alloc,
					"conditions": []condition{
						nc("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
						nc("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
						nc("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
						nc("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
					},
					"addresses":       []map[string]string{{"type": "InternalIP", "address": ip}, {"type": "InternalDNS", "address": name}, {"type": "Hostname", "address": name}},
					"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]int{"Port": 10250}},
					"nodeInfo": map[string]string{"machineID": hexID(32), "systemUUID": "ec2" + hexID(29), "bootID": hexID(8) + "-" + hexID(4) + "-" + hexID(4) + "-" + hexID(4) + "-" + hexID(12),
						"kernelVersion": "6.1.119-129.201.amzn2023.x86_64", "osImage": "Amazon Linux 2023.6.20241212", "containerRuntimeVersion": "containerd://1.7.23",
						"kubeletVersion": "v1.35.4", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
					"images": nodeImages,
				}})
		})
		csiUID := s.newUID()
		s.put(rCSINodes, "", name, csiUID, nil, "", "", func(rv string) []byte {
			return mustJSON(map[string]any{"kind": "CSINode", "apiVersion": "storage.k8s.io/v1",
				"metadata": objectMeta{Name: name, UID: csiUID, ResourceVersion: rv, CreationTimestamp: ts(created.Add(30 * time.Second)),
					Annotations:     map[string]string{"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume"},
					OwnerReferences: []ownerRef{{APIVersion: "v1", Kind: "Node", Name: name, UID: nodeUID}}},
				"spec": map[string]any{"drivers": []any{map[string]any{"name": "ebs.csi.aws.com", "nodeID": iid,
					"topologyKeys": []string{"kubernetes.io/os", "topology.ebs.csi.aws.com/zone", "topology.kubernetes.io/zone"},
					"allocatable":  map[string]int{"count": 25}}}}})
		})
	}
}
