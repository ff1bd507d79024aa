package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// workload is the pod template of one controller (a Deployment's ReplicaSet, a
// StatefulSet, a Job, a DaemonSet): its pods share everything but their names, node,
// addresses and times, so the spec is rendered once with placeholders.
type workload struct {
	kind           string // Deployment, StatefulSet, Job, DaemonSet
	ns, name       string
	ownerKind      string // ReplicaSet for a Deployment
	ownerName      string
	ownerUID       string
	ownerAPI       string
	labels         map[string]string
	annotations    map[string]string
	spec           []byte // the pod spec without nodeName and the closing brace; @@KAA@@ and @@POD@@ placeholders
	containers     []string
	images         []string
	mfSpec         json.RawMessage
	mfStatus       json.RawMessage
	cpu, mem       string // the app container's requests
	replicas       int
	priorityClass  string
	unschedulable  bool // the burst: pending with PodScheduled=False/Unschedulable
	dsNodeAffinity bool
	made           int
}

// pod stages
const (
	stNew           = iota // created, not bound
	stBound                // nodeName set, containers creating
	stRunning              // Running and Ready
	stTerminating          // deletionTimestamp set
	stUnschedulable        // the scheduler found no node (the burst)
)

// podState is one pod of a workload.
type podState struct {
	w       *workload
	name    string
	uid     string
	kaa     string
	created time.Time
	started time.Time
	deleted time.Time
	node    *genNode
	podIP   string
	stage   int
	cids    [2]string
}

func boolp(b bool) *bool { return &b }

var podTolerations = []any{
	map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
	map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
}

var dsTolerations = []any{
	map[string]any{"operator": "Exists"},
	map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
	map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
	map[string]any{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
	map[string]any{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
	map[string]any{"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
	map[string]any{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
}

func container(name, image, cpu, mem string, port int, env []any, withProbes bool, mounts []any) map[string]any {
	c := map[string]any{
		"name": name, "image": image,
		"env":                      env,
		"resources":                map[string]any{"requests": map[string]string{"cpu": cpu, "memory": mem}, "limits": map[string]string{"memory": mem}},
		"volumeMounts":             mounts,
		"terminationMessagePath":   "/dev/termination-log",
		"terminationMessagePolicy": "File",
		"imagePullPolicy":          "IfNotPresent",
	}
	if port > 0 {
		c["securityContext"] = map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
			"runAsNonRoot": true, "capabilities": map[string]any{"drop": []string{"ALL"}}}
		c["ports"] = []any{map[string]any{"name": "http", "containerPort": port, "protocol": "TCP"}}
	}
	if withProbes {
		probe := func(path string, delay int) map[string]any {
			return map[string]any{"httpGet": map[string]any{"path": path, "port": "http", "scheme": "HTTP"},
				"initialDelaySeconds": delay, "timeoutSeconds": 2, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
		}
		c["livenessProbe"] = probe("/healthz", 15)
		c["readinessProbe"] = probe("/ready", 5)
	}
	return c
}

func envVars(app string) []any {
	return []any{
		map[string]any{"name": "APP_NAME", "value": app},
		map[string]any{"name": "LOG_LEVEL", "value": "info"},
		map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.name"}}},
		map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
		map[string]any{"name": "NODE_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
	}
}

// kubeAPIAccess is the projected service-account volume every pod gets.
func kubeAPIAccess() map[string]any {
	return map[string]any{"name": "kube-api-access-@@KAA@@", "projected": map[string]any{"defaultMode": 420, "sources": []any{
		map[string]any{"serviceAccountToken": map[string]any{"expirationSeconds": 3607, "path": "token"}},
		map[string]any{"configMap": map[string]any{"name": "kube-root-ca.crt", "items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}},
		map[string]any{"downwardAPI": map[string]any{"items": []any{map[string]any{"path": "namespace",
			"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}}},
	}}}
}

var kaaMount = map[string]any{"name": "kube-api-access-@@KAA@@", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}

// newWorkload renders a workload's pod template.
func newWorkload(kind, ns, name string, replicas int, cpu, mem string) *workload {
	w := &workload{kind: kind, ns: ns, name: name, replicas: replicas, cpu: cpu, mem: mem}
	app := name
	image := "ghcr.io/example/" + strings.SplitN(ns, "-", 2)[0] + "-" + name + ":v2." + strconv.Itoa(len(name)%9) + ".1"
	w.labels = map[string]string{"app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/instance": app + "-" + ns,
		"app.kubernetes.io/part-of": strings.SplitN(ns, "-", 2)[0], "team": strings.SplitN(ns, "-", 2)[0]}
	w.annotations = map[string]string{"prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": "2026-11-28T09:14:03Z"}
	mounts := []any{map[string]any{"name": "config", "mountPath": "/etc/" + app, "readOnly": true}, kaaMount}
	volumes := []any{map[string]any{"name": "config", "configMap": map[string]any{"name": app + "-config", "defaultMode": 420}}, kubeAPIAccess()}
	spec := map[string]any{
		"restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
		"serviceAccountName": app, "serviceAccount": app, "securityContext": map[string]any{"fsGroup": 2000},
		"schedulerName": "default-scheduler", "tolerations": podTolerations, "priority": 0,
		"enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
	}
	side := container("envoy", "docker.io/envoyproxy/envoy:v1.31.2", "50m", "64Mi", 0,
		[]any{map[string]any{"name": "ENVOY_UID", "value": "0"}}, false, []any{})
	switch kind {
	case "Deployment", "Batch":
		hash := randSuffix(10)
		w.ownerKind, w.ownerName, w.ownerAPI = "ReplicaSet", name+"-"+hash, "apps/v1"
		w.labels["pod-template-hash"] = hash
		spec["topologySpreadConstraints"] = []any{map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
			"whenUnsatisfiable": "ScheduleAnyway", "labelSelector": map[string]any{"matchLabels": map[string]string{"app": app}}}}
		if kind == "Batch" { // a Deployment of batch workers: spread over zones, no anti-affinity
			w.kind = "Deployment"
			break
		}
		spec["affinity"] = map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
			map[string]any{"weight": 100, "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname",
				"labelSelector": map[string]any{"matchLabels": map[string]string{"app": app}}}}}}}
	case "StatefulSet":
		w.ownerKind, w.ownerName, w.ownerAPI = "StatefulSet", name, "apps/v1"
		w.labels["controller-revision-hash"] = name + "-" + randSuffix(10)
		w.labels["apps.kubernetes.io/pod-index"] = "@@IDX@@"
		w.labels["statefulset.kubernetes.io/pod-name"] = "@@POD@@"
		spec["hostname"], spec["subdomain"] = "@@POD@@", name
		volumes = append([]any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "data-@@POD@@"}}}, volumes...)
		mounts = append(mounts, map[string]any{"name": "data", "mountPath": "/var/lib/" + app})
	case "Job":
		uid := randSuffix(8)
		w.ownerKind, w.ownerName, w.ownerAPI = "Job", name, "batch/v1"
		w.labels = map[string]string{"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
			"controller-uid": uid, "job-name": name, "team": strings.SplitN(ns, "-", 2)[0]}
		spec["restartPolicy"] = "Never"
	case "DaemonSet":
		w.ownerKind, w.ownerName, w.ownerAPI = "DaemonSet", name, "apps/v1"
		w.labels = map[string]string{"k8s-app": name, "controller-revision-hash": randSuffix(9), "pod-template-generation": "3"}
		spec["tolerations"] = dsTolerations
		spec["priorityClassName"], spec["priority"] = "system-node-critical", 2000001000
		spec["hostNetwork"] = true
		spec["affinity"] = map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchFields": []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []string{"@@NODE@@"}}}}}}}}
		image = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/" + name + ":v1.35.4-eksbuild.1"
		w.dsNodeAffinity = true
		w.priorityClass = "system-node-critical"
		side = container("metrics", "quay.io/prometheus/node-exporter:v1.8.2", "10m", "24Mi", 9100, envVars(name)[:2], false, []any{})
	}
	w.ownerUID = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Intn(65536), rng.Intn(4096), rng.Intn(4096), rng.Int63()&0xffffffffffff)
	spec["volumes"] = volumes
	spec["containers"] = []any{container("app", image, cpu, mem, 8080, envVars(app), true, mounts), side}
	w.containers = []string{"app", side["name"].(string)}
	w.images = []string{image, side["image"].(string)}
	b := mustJSON(spec)
	w.spec = b[:len(b)-1] // the closing brace comes after nodeName
	// kube-controller-manager's managed fields: the template it wrote
	paths := []string{"f:metadata|f:generateName", "f:metadata|f:ownerReferences|k:{\"uid\":\"" + w.ownerUID + "\"}"}
	for k := range w.labels {
		paths = append(paths, "f:metadata|f:labels|f:"+k)
	}
	for k := range w.annotations {
		paths = append(paths, "f:metadata|f:annotations|f:"+k)
	}
	for ci, c := range spec["containers"].([]any) {
		cm := c.(map[string]any)
		pre := "f:spec|f:containers|k:{\"name\":\"" + cm["name"].(string) + "\"}|"
		for _, f := range []string{"f:image", "f:name", "f:resources|f:limits|f:memory", "f:resources|f:requests|f:cpu",
			"f:resources|f:requests|f:memory"} {
			paths = append(paths, pre+f)
		}
		if ci > 0 {
			continue
		}
		for _, f := range []string{"f:imagePullPolicy", "f:securityContext|f:readOnlyRootFilesystem", "f:terminationMessagePath"} {
			paths = append(paths, pre+f)
		}
		for _, e := range cm["env"].([]any)[:3] {
			paths = append(paths, pre+"f:env|k:{\"name\":\""+e.(map[string]any)["name"].(string)+"\"}|f:name")
		}
	}
	for _, f := range []string{"f:dnsPolicy", "f:restartPolicy", "f:schedulerName", "f:serviceAccountName", "f:volumes|k:{\"name\":\"config\"}|f:configMap|f:name"} {
		paths = append(paths, "f:spec|"+f)
	}
	w.mfSpec = fieldsV1(paths...)
	sp := []string{"f:status|f:conditions|k:{\"type\":\"ContainersReady\"}|f:status", "f:status|f:conditions|k:{\"type\":\"Initialized\"}|f:status",
		"f:status|f:conditions|k:{\"type\":\"PodReadyToStartContainers\"}|f:status", "f:status|f:conditions|k:{\"type\":\"Ready\"}|f:status",
		"f:status|f:containerStatuses", "f:status|f:hostIP", "f:status|f:hostIPs", "f:status|f:phase", "f:status|f:podIP",
		"f:status|f:podIPs|k:{\"ip\":\"\"}|f:ip", "f:status|f:startTime"}
	w.mfStatus = fieldsV1(sp...)
	return w
}

// newPod makes the next pod of w, with a name no stored pod has. Caller holds s.mu.
func (w *workload) newPod(s *store, created time.Time) *podState {
	p := &podState{w: w, uid: s.newUID(), kaa: randSuffix(5), created: created}
	switch w.kind {
	case "StatefulSet":
		p.name = fmt.Sprintf("%s-%d", w.name, w.made)
	default:
		prefix := w.name + "-"
		if w.kind == "Deployment" {
			prefix = w.ownerName + "-"
		}
		// five random characters repeat within a few thousand pods of one owner (the
		// burst's 10,000 had three pairs): draw again while the name is taken
		pods := s.kind(rPods).objs
		for {
			p.name = prefix + randSuffix(5)
			if pods[objKey(w.ns, p.name)] == nil {
				break
			}
		}
	}
	w.made++
	return p
}

type podStatus struct {
	Phase             string      `json:"phase"`
	Conditions        []condition `json:"conditions,omitempty"`
	HostIP            string      `json:"hostIP,omitempty"`
	HostIPs           []ipEntry   `json:"hostIPs,omitempty"`
	PodIP             string      `json:"podIP,omitempty"`
	PodIPs            []ipEntry   `json:"podIPs,omitempty"`
	StartTime         string      `json:"startTime,omitempty"`
	ContainerStatuses []ctrStatus `json:"containerStatuses,omitempty"`
	QOSClass          string      `json:"qosClass"`
}

type ipEntry struct {
	IP string `json:"ip"`
}

type ctrStatus struct {
	Name         string         `json:"name"`
	State        map[string]any `json:"state"`
	LastState    map[string]any `json:"lastState"`
	Ready        bool           `json:"ready"`
	RestartCount int            `json:"restartCount"`
	Image        string         `json:"image"`
	ImageID      string         `json:"imageID"`
	ContainerID  string         `json:"containerID,omitempty"`
	Started      *bool          `json:"started,omitempty"`
	VolumeMounts []any          `json:"volumeMounts,omitempty"`
}

// render serializes the pod at resourceVersion rv.
func (p *podState) render(rv string) []byte {
	w := p.w
	labels, mf := w.labels, []managedField{{Manager: "kube-controller-manager", Operation: "Update", APIVersion: "v1",
		Time: ts(p.created), FieldsType: "FieldsV1", FieldsV1: w.mfSpec}}
	if w.kind == "StatefulSet" {
		labels = map[string]string{}
		for k, v := range w.labels {
			labels[k] = strings.ReplaceAll(strings.ReplaceAll(v, "@@POD@@", p.name), "@@IDX@@", p.name[strings.LastIndex(p.name, "-")+1:])
		}
	}
	if p.stage == stRunning || p.stage == stTerminating {
		mf = append(mf, managedField{Manager: "kubelet", Operation: "Update", APIVersion: "v1", Time: ts(p.started.Add(3 * time.Second)),
			FieldsType: "FieldsV1", FieldsV1: w.mfStatus, Subresource: "status"})
	}
	md := objectMeta{Name: p.name, Namespace: w.ns, UID: p.uid, ResourceVersion: rv, CreationTimestamp: ts(p.created),
		Labels: labels, Annotations: w.annotations, ManagedFields: mf,
		OwnerReferences: []ownerRef{{APIVersion: w.ownerAPI, Kind: w.ownerKind, Name: w.ownerName, UID: w.ownerUID, Controller: trueP, BlockOwnerDeletion: trueP}}}
	if w.kind != "StatefulSet" {
		md.GenerateName = p.name[:len(p.name)-5]
	}
	if p.stage == stTerminating {
		md.DeletionTimestamp = ts(p.deleted.Add(30 * time.Second))
		g := int64(30)
		md.DeletionGracePeriodSeconds = &g
	}
	st := podStatus{Phase: "Pending", QOSClass: "Burstable"}
	created := ts(p.created)
	switch p.stage {
	case stUnschedulable:
		st.Conditions = []condition{{Type: "PodScheduled", Status: "False", LastProbeTime: nil, LastTransitionTime: created,
			Reason: "Unschedulable", Message: "0/5000 nodes are available: 5000 node(s) didn't match Pod's node affinity/selector. preemption: 0/5000 nodes are available: 5000 Preemption is not helpful for scheduling."}}
	case stBound:
		st.Conditions = []condition{
			{Type: "PodReadyToStartContainers", Status: "False", LastTransitionTime: created},
			{Type: "Initialized", Status: "True", LastTransitionTime: created},
			{Type: "Ready", Status: "False", LastTransitionTime: created, Reason: "ContainersNotReady", Message: "containers with unready status: [" + strings.Join(w.containers, " ") + "]"},
			{Type: "ContainersReady", Status: "False", LastTransitionTime: created, Reason: "ContainersNotReady", Message: "containers with unready status: [" + strings.Join(w.containers, " ") + "]"},
			{Type: "PodScheduled", Status: "True", LastTransitionTime: created},
		}
		st.HostIP, st.HostIPs, st.StartTime = p.node.hostIP, []ipEntry{{p.node.hostIP}}, created
		for i, c := range w.containers {
			st.ContainerStatuses = append(st.ContainerStatuses, ctrStatus{Name: c, Image: w.images[i], Started: boolp(false),
				State: map[string]any{"waiting": map[string]any{"reason": "ContainerCreating"}}, LastState: map[string]any{}})
		}
	case stRunning, stTerminating:
		start := ts(p.started)
		ready := ts(p.started.Add(4 * time.Second))
		st.Phase = "Running"
		st.Conditions = []condition{
			{Type: "PodReadyToStartContainers", Status: "True", LastTransitionTime: start},
			{Type: "Initialized", Status: "True", LastTransitionTime: created},
			{Type: "Ready", Status: "True", LastTransitionTime: ready},
			{Type: "ContainersReady", Status: "True", LastTransitionTime: ready},
			{Type: "PodScheduled", Status: "True", LastTransitionTime: created},
		}
		st.HostIP, st.HostIPs, st.StartTime = p.node.hostIP, []ipEntry{{p.node.hostIP}}, created
		st.PodIP, st.PodIPs = p.podIP, []ipEntry{{p.podIP}}
		for i, c := range w.containers {
			st.ContainerStatuses = append(st.ContainerStatuses, ctrStatus{Name: c, Image: w.images[i], Ready: true, Started: boolp(true),
				ImageID:     strings.SplitN(w.images[i], ":", 2)[0] + "@sha256:" + fmt.Sprintf("%064x", uint64(len(w.images[i]))*0x9e3779b97f4a7c15),
				ContainerID: "containerd://" + p.cids[i],
				State:       map[string]any{"running": map[string]any{"startedAt": start}}, LastState: map[string]any{}})
			if i == 0 {
				cs := &st.ContainerStatuses[0]
				cs.VolumeMounts = []any{map[string]any{"name": "kube-api-access-" + p.kaa, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
					"readOnly": true, "recursiveReadOnly": "Disabled"}}
			}
		}
	}
	var b bytes.Buffer
	b.Grow(6500)
	b.WriteString(`{"kind":"Pod","apiVersion":"v1","metadata":`)
	b.Write(mustJSON(md))
	b.WriteString(`,"spec":`)
	spec := bytes.ReplaceAll(w.spec, []byte("@@KAA@@"), []byte(p.kaa))
	if w.kind == "StatefulSet" {
		spec = bytes.ReplaceAll(spec, []byte("@@POD@@"), []byte(p.name))
	}
	if w.dsNodeAffinity {
		spec = bytes.ReplaceAll(spec, []byte("@@NODE@@"), []byte(p.node.name))
	}
	b.Write(spec)
	if p.node != nil && p.stage != stNew && p.stage != stUnschedulable {
		b.WriteString(`,"nodeName":"` + p.node.name + `"`)
	}
	if w.unschedulable {
		b.WriteString(`,"nodeSelector":{"` + burstLabel + `":"burst"}`)
	}
	b.WriteString(`},"status":`)
	b.Write(mustJSON(st))
	b.WriteString("}")
	return b.Bytes()
}

func (p *podState) nodeName() string {
	if p.node == nil || p.stage == stNew || p.stage == stUnschedulable {
		return ""
	}
	return p.node.name
}

func (p *podState) phase() string {
	if p.stage == stRunning || p.stage == stTerminating {
		return "Running"
	}
	return "Pending"
}

func (p *podState) labels() map[string]string {
	if p.w.kind != "StatefulSet" {
		return p.w.labels
	}
	out := map[string]string{}
	for k, v := range p.w.labels {
		out[k] = strings.ReplaceAll(strings.ReplaceAll(v, "@@POD@@", p.name), "@@IDX@@", p.name[strings.LastIndex(p.name, "-")+1:])
	}
	return out
}

// object builds the stored object of p at a new resourceVersion. Caller holds s.mu.
func (p *podState) object(s *store) *object {
	rv := s.nextRV()
	o := &object{key: objKey(p.w.ns, p.name), ns: p.w.ns, name: p.name, uid: p.uid, rv: rv, labels: p.labels(),
		nodeName: p.nodeName(), phase: p.phase(), deleting: p.stage == stTerminating, gen: true}
	o.data = p.render(rvString(rv))
	return o
}

// ---- the generated pods ----------------------------------------------------------------

var daemonSets = []struct{ name, cpu, mem string }{
	{"kube-proxy", "100m", "64Mi"}, {"aws-node", "50m", "128Mi"}, {"ebs-csi-node", "30m", "120Mi"}, {"node-exporter", "50m", "64Mi"},
}

var appNames = []string{"api", "web", "worker", "gateway", "indexer", "cache", "scheduler", "notifier", "renderer", "ingest",
	"auth", "billing", "ledger", "feed", "ranker", "profile", "search", "graph", "export", "import"}

func (c *cluster) genPods(s *store) {
	n := len(c.nodes)
	nds := len(daemonSets)
	if n > 0 && c.cfg.pods < nds*n {
		nds = c.cfg.pods / n
	}
	rest := c.cfg.pods - nds*n
	if n == 0 {
		rest = 0
	}
	// DaemonSets and their pods
	for _, d := range daemonSets[:nds] {
		w := newWorkload("DaemonSet", "kube-system", d.name, n, d.cpu, d.mem)
		c.genDaemonSet(s, w)
		for _, node := range c.nodes {
			p := w.newPod(s, node2created(c, node))
			p.node, p.stage, p.started = node, stRunning, p.created.Add(5*time.Second)
			p.podIP = node.hostIP // host network
			p.cids = [2]string{hexID(64), hexID(64)}
			c.putPod(s, p)
		}
	}
	if rest <= 0 {
		return
	}
	per := (rest+n-1)/n + 2
	for _, node := range c.nodes {
		node.free = per
	}
	cursor := 0
	place := func() *genNode {
		for k := 0; k < n; k++ {
			node := c.nodes[(cursor+k*7919)%n]
			if node.free > 0 {
				node.free--
				cursor += 13
				return node
			}
		}
		node := c.nodes[cursor%n]
		cursor++
		return node
	}
	cpus := []string{"50m", "100m", "200m", "250m", "300m", "500m"}
	mems := []string{"64Mi", "128Mi", "256Mi", "384Mi", "512Mi", "768Mi"}
	made, i := 0, 0
	for made < rest {
		ns := teamNamespaces[i%len(teamNamespaces)]
		app := appNames[(i/len(teamNamespaces))%len(appNames)]
		if i >= len(teamNamespaces)*len(appNames) {
			app += "-" + strconv.Itoa(i/(len(teamNamespaces)*len(appNames)))
		}
		kind, replicas := "Deployment", 10+rng.Intn(31)
		switch i % 10 {
		case 3:
			kind, replicas = "StatefulSet", 3+rng.Intn(3)
		case 7:
			kind, replicas = "Job", 5+rng.Intn(16)
			app += "-" + strconv.Itoa(int(c.born.Unix()/60)%100000)
		}
		if replicas > rest-made {
			replicas = rest - made
		}
		w := newWorkload(kind, ns, app, replicas, cpus[rng.Intn(len(cpus))], mems[rng.Intn(len(mems))])
		created := c.born.Add(time.Duration(30+i) * time.Minute)
		for r := 0; r < replicas; r++ {
			p := w.newPod(s, created.Add(time.Duration(r)*time.Second))
			p.node, p.stage, p.started = place(), stRunning, p.created.Add(3*time.Second)
			p.podIP = c.podIP(p.node)
			p.cids = [2]string{hexID(64), hexID(64)}
			c.putPod(s, p)
			if kind == "StatefulSet" {
				c.genVolume(s, w, p)
			}
		}
		if kind == "Deployment" && replicas >= 10 || kind == "StatefulSet" {
			c.genPDB(s, w)
		}
		if kind == "Deployment" {
			c.workloads = append(c.workloads, w)
		}
		made += replicas
		i++
	}
}

func node2created(c *cluster, n *genNode) time.Time {
	return c.born.Add(time.Duration(n.podCIDR)*time.Second + time.Minute)
}

// putPod stores a generated pod without an event. Caller holds s.mu.
func (c *cluster) putPod(s *store, p *podState) {
	s.put(rPods, p.w.ns, p.name, p.uid, p.labels(), p.nodeName(), p.phase(), p.render)
}

func (c *cluster) genDaemonSet(s *store, w *workload) {
	n := len(c.nodes)
	uid := w.ownerUID
	spec := append(append([]byte(nil), w.spec...), '}')
	spec = bytes.ReplaceAll(spec, []byte("@@KAA@@"), []byte("xxxxx"))
	spec = bytes.ReplaceAll(spec, []byte(`{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["@@NODE@@"]}]}]}}}`), []byte(`{}`))
	s.put(rDS, w.ns, w.name, uid, map[string]string{"k8s-app": w.name}, "", "", func(rv string) []byte {
		return mustJSON(map[string]any{"kind": "DaemonSet", "apiVersion": "apps/v1",
			"metadata": objectMeta{Name: w.name, Namespace: w.ns, UID: uid, ResourceVersion: rv, Generation: 3, CreationTimestamp: ts(c.born),
				Labels: map[string]string{"k8s-app": w.name}, Annotations: map[string]string{"deprecated.daemonset.template.generation": "3"}},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]string{"k8s-app": w.name}},
				"template":             map[string]any{"metadata": map[string]any{"labels": map[string]string{"k8s-app": w.name}}, "spec": json.RawMessage(spec)},
				"updateStrategy":       map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "10%", "maxSurge": 0}},
				"revisionHistoryLimit": 10},
			"status": map[string]any{"currentNumberScheduled": n, "numberMisscheduled": 0, "desiredNumberScheduled": n, "numberReady": n,
				"observedGeneration": 3, "updatedNumberScheduled": n, "numberAvailable": n}})
	})
}

func (c *cluster) genPDB(s *store, w *workload) {
	name := w.name
	uid := s.newUID()
	spec := map[string]any{"selector": map[string]any{"matchLabels": map[string]string{"app": w.labels["app"]}}}
	if w.kind == "StatefulSet" {
		spec["minAvailable"] = w.replicas - 1
	} else {
		spec["maxUnavailable"] = "10%"
	}
	allowed := 1 + w.replicas/10
	if w.kind == "StatefulSet" {
		allowed = 1
	}
	s.put(rPDBs, w.ns, name, uid, map[string]string{"app": w.labels["app"]}, "", "", func(rv string) []byte {
		return mustJSON(map[string]any{"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
			"metadata": objectMeta{Name: name, Namespace: w.ns, UID: uid, ResourceVersion: rv, Generation: 1, CreationTimestamp: ts(c.born),
				Labels: map[string]string{"app": w.labels["app"]}},
			"spec": spec,
			"status": map[string]any{"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": w.replicas,
				"desiredHealthy": w.replicas - allowed, "expectedPods": w.replicas,
				"conditions": []condition{{Type: "DisruptionAllowed", Status: "True", ObservedGeneration: 1, LastTransitionTime: ts(c.born), Reason: "SufficientPods"}}}})
	})
}

// genVolume makes a StatefulSet pod's PVC and its zonal PV.
func (c *cluster) genVolume(s *store, w *workload, p *podState) {
	pvc := "data-" + p.name
	pv := "pvc-" + s.newUID()
	pvcUID, pvUID := s.newUID(), s.newUID()
	zone := p.node.zone
	s.put(rPVCs, w.ns, pvc, pvcUID, map[string]string{"app": w.labels["app"]}, "", "Bound", func(rv string) []byte {
		return mustJSON(map[string]any{"kind": "PersistentVolumeClaim", "apiVersion": "v1",
			"metadata": objectMeta{Name: pvc, Namespace: w.ns, UID: pvcUID, ResourceVersion: rv, CreationTimestamp: ts(p.created),
				Labels: map[string]string{"app": w.labels["app"]},
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
					"volume.beta.kubernetes.io/storage-provisioner": "ebs.csi.aws.com", "volume.kubernetes.io/selected-node": p.node.name,
					"volume.kubernetes.io/storage-provisioner": "ebs.csi.aws.com"},
				Finalizers: []string{"kubernetes.io/pvc-protection"}},
			"spec": map[string]any{"accessModes": []string{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]string{"storage": "50Gi"}},
				"volumeName": pv, "storageClassName": "gp3", "volumeMode": "Filesystem"},
			"status": map[string]any{"phase": "Bound", "accessModes": []string{"ReadWriteOnce"}, "capacity": map[string]string{"storage": "50Gi"}}})
	})
	s.put(rPVs, "", pv, pvUID, nil, "", "Bound", func(rv string) []byte {
		return mustJSON(map[string]any{"kind": "PersistentVolume", "apiVersion": "v1",
			"metadata": objectMeta{Name: pv, UID: pvUID, ResourceVersion: rv, CreationTimestamp: ts(p.created),
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com", "volume.kubernetes.io/provisioner-deletion-secret-name": "",
					"volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
				Finalizers: []string{"external-provisioner.volume.kubernetes.io/finalizer", "kubernetes.io/pv-protection"}},
			"spec": map[string]any{"accessModes": []string{"ReadWriteOnce"}, "capacity": map[string]string{"storage": "50Gi"},
				"claimRef": map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": pvc, "namespace": w.ns, "uid": pvcUID},
				"csi": map[string]any{"driver": "ebs.csi.aws.com", "fsType": "ext4", "volumeHandle": "vol-0" + hexID(16),
					"volumeAttributes": map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": "1733412345678-8081-ebs.csi.aws.com"}},
				"nodeAffinity": map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
					map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []string{zone}}}}}}},
				"persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gp3", "volumeMode": "Filesystem"},
			"status": map[string]any{"phase": "Bound", "lastPhaseTransitionTime": ts(p.created)}})
	})
}
