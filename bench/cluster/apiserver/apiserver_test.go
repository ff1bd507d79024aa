package main

// The stand-in's protocol, as the benchmark's checks rely on it: pagination gives one
// consistent snapshot, a watch resumes from a resourceVersion and answers 410 Gone once
// the window is dropped, writes follow the API server's rules (conflicts, finalizers,
// the status subresource, merge and JSON patches), and the churn emits exactly its rate.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func newTestServer(t *testing.T, nodes, pods int) (*store, *cluster, *httptest.Server) {
	t.Helper()
	st := newStore(1000)
	cl := generate(st, genConfig{nodes: nodes, pods: pods, cluster: "sim-cluster", region: "us-west-2", seed: 3})
	srv := &server{st: st, bookmark: 50 * time.Millisecond, lag: &lagLog{}}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return st, cl, ts
}

func do(t *testing.T, ts *httptest.Server, method, path, ctype, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	return resp.StatusCode, m
}

func TestGeneratedCluster(t *testing.T) {
	st, _, _ := newTestServer(t, 10, 200)
	if n := len(st.kind(rNodes).objs); n != 10 {
		t.Fatalf("nodes: %d", n)
	}
	if n := len(st.kind(rPods).objs); n != 200 {
		t.Fatalf("pods: %d", n)
	}
	if n := len(st.kind(rNodeClaims).objs); n != 10 {
		t.Fatalf("nodeclaims: %d", n)
	}
	for _, o := range st.kind(rPods).objs {
		var p struct {
			Metadata struct {
				Name            string `json:"name"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(o.data, &p); err != nil {
			t.Fatalf("pod %s: %v", o.key, err)
		}
		if p.Metadata.Name != o.name || p.Metadata.ResourceVersion != rvString(o.rv) || p.Spec.NodeName == "" || p.Spec.NodeName != o.nodeName {
			t.Fatalf("pod %s: stored fields disagree with its JSON: %+v", o.key, p)
		}
		if strings.Contains(string(o.data), "@@") {
			t.Fatalf("pod %s: a placeholder was left: %s", o.key, o.data)
		}
	}
}

func TestListPagesAreOneSnapshot(t *testing.T) {
	st, cl, ts := newTestServer(t, 5, 100)
	code, first := do(t, ts, "GET", "/api/v1/pods?limit=30", "", "")
	if code != 200 {
		t.Fatalf("list: %d", code)
	}
	md := first["metadata"].(map[string]any)
	rv, cont := md["resourceVersion"].(string), md["continue"].(string)
	seen := map[string]bool{}
	for _, it := range first["items"].([]any) {
		seen[it.(map[string]any)["metadata"].(map[string]any)["name"].(string)] = true
	}
	// changes between the pages must not show in the rest of the list
	st.mu.Lock()
	cl.changePods(st, 10, 5, rng)
	st.mu.Unlock()
	for cont != "" {
		code, page := do(t, ts, "GET", "/api/v1/pods?limit=30&continue="+url.QueryEscape(cont), "", "")
		if code != 200 {
			t.Fatalf("page: %d", code)
		}
		pm := page["metadata"].(map[string]any)
		if pm["resourceVersion"] != rv {
			t.Fatalf("page at rv %v, first page at %s", pm["resourceVersion"], rv)
		}
		for _, it := range page["items"].([]any) {
			n := it.(map[string]any)["metadata"].(map[string]any)["name"].(string)
			if seen[n] {
				t.Fatalf("%s twice", n)
			}
			seen[n] = true
		}
		cont, _ = pm["continue"].(string)
	}
	if len(seen) != 100 {
		t.Fatalf("the paged list has %d pods, the snapshot had 100", len(seen))
	}
	// a continue token of a dropped snapshot is 410
	st.mu.Lock()
	st.expire(st.kind(rPods))
	st.mu.Unlock()
	if code, _ := do(t, ts, "GET", "/api/v1/pods?limit=30&continue="+url.QueryEscape(md["continue"].(string)), "", ""); code != 410 {
		t.Fatalf("expired continue token: %d, want 410", code)
	}
}

// watchLines reads events of a watch until n arrived or the stream ended.
func watchLines(t *testing.T, ts *httptest.Server, path string, n int) []map[string]any {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for len(out) < n && sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event is not JSON: %s", sc.Bytes())
		}
		out = append(out, ev)
	}
	return out
}

func TestWatchResumeBookmarksAnd410(t *testing.T) {
	st, cl, ts := newTestServer(t, 5, 50)
	st.mu.Lock()
	rv0 := st.rv
	cl.changePods(st, 3, 2, rng)
	st.mu.Unlock()
	evs := watchLines(t, ts, fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d&allowWatchBookmarks=true&timeoutSeconds=2", rv0), 6)
	types := []string{}
	for _, e := range evs {
		types = append(types, e["type"].(string))
	}
	if strings.Join(types, ",") != "DELETED,DELETED,DELETED,ADDED,ADDED,BOOKMARK" {
		t.Fatalf("resumed watch: %v", types)
	}
	// the window dropped: a resume from before it is an ERROR event with 410 Expired
	st.mu.Lock()
	st.expire(st.kind(rPods))
	st.mu.Unlock()
	evs = watchLines(t, ts, fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d", rv0), 1)
	if len(evs) != 1 || evs[0]["type"] != "ERROR" {
		t.Fatalf("want one ERROR event, got %v", evs)
	}
	obj := evs[0]["object"].(map[string]any)
	if obj["code"].(float64) != 410 || obj["reason"] != "Expired" {
		t.Fatalf("ERROR event: %v", obj)
	}
}

func TestWritesFollowTheAPIServer(t *testing.T) {
	_, _, ts := newTestServer(t, 2, 10)
	const nc = "/apis/karpenter.sh/v1/nodeclaims"
	code, obj := do(t, ts, "POST", nc, "application/json",
		`{"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","metadata":{"generateName":"burst-","finalizers":["karpenter.sh/termination"],"labels":{"karpenter.sh/nodepool":"burst"}},"spec":{"resources":{"requests":{"pods":"7"}}},"status":{"providerID":"ignored"}}`)
	if code != 201 {
		t.Fatalf("create: %d %v", code, obj)
	}
	md := obj["metadata"].(map[string]any)
	name, rv := md["name"].(string), md["resourceVersion"].(string)
	if !strings.HasPrefix(name, "burst-") || obj["status"] != nil {
		t.Fatalf("created: %v", obj)
	}
	// a stale resourceVersion is a conflict
	if code, _ := do(t, ts, "PUT", nc+"/"+name, "application/json",
		`{"metadata":{"name":"`+name+`","resourceVersion":"1"},"spec":{}}`); code != 409 {
		t.Fatalf("stale update: %d, want 409", code)
	}
	// the status subresource writes only the status, the object only the rest
	code, obj = do(t, ts, "PATCH", nc+"/"+name+"/status", "application/merge-patch+json",
		`{"status":{"providerID":"aws:///us-west-2a/i-1"},"spec":{"resources":null}}`)
	if code != 200 || obj["status"].(map[string]any)["providerID"] != "aws:///us-west-2a/i-1" || obj["spec"].(map[string]any)["resources"] == nil {
		t.Fatalf("status patch: %d %v", code, obj)
	}
	code, obj = do(t, ts, "PATCH", nc+"/"+name, "application/json-patch+json",
		`[{"op":"test","path":"/metadata/labels/karpenter.sh~1nodepool","value":"burst"},{"op":"add","path":"/metadata/annotations","value":{"a":"b"}},{"op":"replace","path":"/status","value":{}}]`)
	if code != 200 || obj["metadata"].(map[string]any)["annotations"].(map[string]any)["a"] != "b" || obj["status"].(map[string]any)["providerID"] == nil {
		t.Fatalf("json patch: %d %v", code, obj)
	}
	if obj["metadata"].(map[string]any)["resourceVersion"] == rv {
		t.Fatalf("a change kept the resourceVersion")
	}
	if code, _ := do(t, ts, "PATCH", nc+"/"+name, "application/json-patch+json",
		`[{"op":"test","path":"/metadata/labels/karpenter.sh~1nodepool","value":"other"}]`); code != 422 {
		t.Fatalf("failed test op: %d, want 422", code)
	}
	// a finalizer holds the delete; removing it completes it
	code, obj = do(t, ts, "DELETE", nc+"/"+name, "application/json", `{}`)
	if code != 202 || obj["metadata"].(map[string]any)["deletionTimestamp"] == nil {
		t.Fatalf("delete with a finalizer: %d %v", code, obj)
	}
	if code, _ := do(t, ts, "PATCH", nc+"/"+name, "application/merge-patch+json", `{"metadata":{"finalizers":["a","b"]}}`); code != 422 {
		t.Fatalf("a finalizer added while deleting: %d, want 422", code)
	}
	if code, _ := do(t, ts, "PATCH", nc+"/"+name, "application/merge-patch+json", `{"metadata":{"finalizers":null}}`); code != 200 {
		t.Fatalf("finalizer removal: %d", code)
	}
	if code, _ := do(t, ts, "GET", nc+"/"+name, "", ""); code != 404 {
		t.Fatalf("after the finalizer went: %d, want 404", code)
	}
}

func TestChurnRateIsExact(t *testing.T) {
	st, cl, _ := newTestServer(t, 5, 100)
	ch := newChurn(st, cl)
	st.mu.Lock()
	rv0 := st.rv
	st.mu.Unlock()
	if !ch.start(400, 500*time.Millisecond) {
		t.Fatal("the churn did not start")
	}
	deadline := time.Now().Add(10 * time.Second)
	for ch.status().Running && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s := ch.status()
	if s.Running || s.Emitted != 200 {
		t.Fatalf("churn: %+v, want 200 events", s)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if got := st.rv - rv0; got != 200 {
		t.Fatalf("%d new resourceVersions for 200 events", got)
	}
	adds := 0
	for _, e := range st.kind(rPods).events {
		if e.typ == "ADDED" {
			adds++
		}
	}
	if adds == 0 || adds == 200 {
		t.Fatalf("%d of 200 events were creations: pods must also move through their stages", adds)
	}
}

func TestBurstPodsHaveDistinctNames(t *testing.T) {
	st, cl, _ := newTestServer(t, 2, 10)
	before := len(st.kind(rPods).objs)
	cl.burst(st, 20000, "1", "2Gi")
	if got := len(st.kind(rPods).objs) - before; got != 20000 {
		t.Fatalf("a burst of 20000 pods left %d new pods in the store", got)
	}
}

// GET /versions is every live object's key and resourceVersion: what the driver compares
// nodewarden's cache with, key by key, after a forced relist.
func TestVersionsAreTheLiveObjects(t *testing.T) {
	st, cl, _ := newTestServer(t, 3, 40)
	ct := &control{s: st, c: cl, ch: newChurn(st, cl), lag: &lagLog{}, rnd: rng}
	cs := httptest.NewServer(ct)
	t.Cleanup(cs.Close)
	st.mu.Lock()
	cl.changePods(st, 5, 2, rng)
	want := map[string]string{}
	for k, o := range st.kind(rPods).objs {
		want[k] = rvString(o.rv)
	}
	nodes := len(st.kind(rNodes).objs)
	st.mu.Unlock()
	resp, err := http.Get(cs.URL + "/versions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got["pods"]) != 37 || len(got["nodes"]) != nodes {
		t.Fatalf("pods %d (want 37), nodes %d (want %d)", len(got["pods"]), len(got["nodes"]), nodes)
	}
	for k, rv := range want {
		if got["pods"][k] != rv {
			t.Fatalf("pod %s: version %q, want %q", k, got["pods"][k], rv)
		}
	}
}

// The observer's pod watch is served like any other but is not the measured one: its
// lines are not in the pod send log and its requests are counted apart.
func TestObserverIsNotMeasured(t *testing.T) {
	st := newStore(1000)
	cl := generate(st, genConfig{nodes: 2, pods: 10, cluster: "sim-cluster", region: "us-west-2", seed: 3})
	srv := &server{st: st, token: "t", observer: "o", bookmark: time.Hour, lag: &lagLog{}}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	st.mu.Lock()
	rv0 := st.rv
	cl.changePods(st, 2, 1, rng)
	st.mu.Unlock()
	get := func(token string) int {
		req, _ := http.NewRequest("GET", ts.URL+fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d&timeoutSeconds=1", rv0), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Count(string(b), "\n")
	}
	if n := get("o"); n != 3 {
		t.Fatalf("observer: %d lines, want 3", n)
	}
	if n, _ := st.podSends.since(0); n != 0 {
		t.Fatalf("the observer's lines were logged: %d", n)
	}
	if n := get("t"); n != 3 {
		t.Fatalf("client: %d lines, want 3", n)
	}
	if n, _ := st.podSends.since(0); n != 3 {
		t.Fatalf("the client's lines: %d logged, want 3", n)
	}
	if st.reqs["observer watch pods 200"] != 1 || st.reqs["watch pods 200"] != 1 {
		t.Fatalf("requests: %v", st.reqs)
	}
}

// A forced 410 ends every open stream of the kind with an ERROR 410 event, even one that
// was caught up and got events committed after the drop: resuming from those would skip
// the relist the driver forces.
func TestExpireEndsOpenStreamsWithGone(t *testing.T) {
	st, cl, ts := newTestServer(t, 3, 30)
	st.mu.Lock()
	rv0 := st.rv
	st.mu.Unlock()
	resp, err := http.Get(ts.URL + fmt.Sprintf("/api/v1/pods?watch=1&resourceVersion=%d&timeoutSeconds=10", rv0))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for i := 0; i < 100; i++ { // the stream is registered and caught up
		st.mu.Lock()
		n := len(st.kind(rPods).watchers)
		st.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st.mu.Lock()
	st.expire(st.kind(rPods))
	cl.changePods(st, 2, 1, rng)
	st.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var last map[string]any
	lines := 0
	for sc.Scan() {
		lines++
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("not JSON: %s", sc.Bytes())
		}
	}
	if last == nil || last["type"] != "ERROR" || last["object"].(map[string]any)["code"].(float64) != 410 {
		t.Fatalf("the stream's last line (%d lines): %v, want an ERROR 410", lines, last)
	}
}
