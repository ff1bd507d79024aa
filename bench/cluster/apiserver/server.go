package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// server is the Kubernetes REST surface over the store.
type server struct {
	st    *store
	lag   *lagLog
	token string
	// observer is a second token: its requests are served alike, but its cluster-wide pod
	// watch is not the one measured (no lines in the pod send log, no lag records, not in
	// the backlog, not among /state's watchers). The driver's second nodewarden, a
	// kube-dump whose cache it compares key by key, uses it.
	observer string
	reqlog   *log.Logger // nil: no request log
	bookmark time.Duration
}

type apiError struct {
	code    int
	reason  string
	message string
}

func (e *apiError) Error() string { return e.message }

func errf(code int, reason, format string, a ...any) *apiError {
	return &apiError{code, reason, fmt.Sprintf(format, a...)}
}

func statusJSON(code int, reason, message string) []byte {
	b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code})
	return b
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func writeErr(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.code, statusJSON(e.code, e.reason, e.message))
}

func (srv *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	code := srv.serve(w, r)
	if srv.reqlog != nil {
		srv.reqlog.Printf("%s %s %d %.1fms %s", r.Method, r.URL.RequestURI(), code,
			float64(time.Since(t0).Microseconds())/1000, r.Proto)
	}
}

func (srv *server) serve(w http.ResponseWriter, r *http.Request) int {
	auth := r.Header.Get("Authorization")
	if srv.token != "" && auth != "Bearer "+srv.token && (srv.observer == "" || auth != "Bearer "+srv.observer) {
		e := errf(401, "Unauthorized", "Unauthorized")
		writeErr(w, e)
		return e.code
	}
	p := r.URL.Path
	switch {
	case p == "/version":
		writeJSON(w, 200, []byte(`{"major":"1","minor":"35","gitVersion":"v1.35.4","gitCommit":"bench","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.26","compiler":"gc","platform":"linux/amd64"}`))
		return 200
	case p == "/healthz" || p == "/readyz" || p == "/livez":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok"))
		return 200
	case p == "/api":
		writeJSON(w, 200, []byte(`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]}`))
		return 200
	case p == "/api/v1":
		writeJSON(w, 200, resourceList("v1"))
		return 200
	case p == "/apis":
		writeJSON(w, 200, groupList())
		return 200
	}
	if parts := strings.Split(strings.Trim(p, "/"), "/"); parts[0] == "apis" && len(parts) <= 3 && len(parts) >= 2 {
		if len(parts) == 3 {
			if byGV[parts[1]+"/"+parts[2]] != nil {
				writeJSON(w, 200, resourceList(parts[1]+"/"+parts[2]))
				return 200
			}
		} else if byGV[parts[1]+"/v1"] != nil {
			writeJSON(w, 200, group(parts[1]))
			return 200
		}
	}
	rp, ok := parsePath(p)
	if !ok {
		e := errf(404, "NotFound", "the server could not find the requested resource")
		writeErr(w, e)
		return e.code
	}
	q := r.URL.Query()
	verb := ""
	var code int
	switch r.Method {
	case "GET":
		switch {
		case rp.name != "" && q.Get("watch") != "1" && q.Get("watch") != "true":
			verb = "get"
			code = srv.get(w, rp)
		case q.Get("watch") == "1" || q.Get("watch") == "true":
			verb = "watch"
			code = srv.watch(w, r, rp, q)
		default:
			verb = "list"
			code = srv.list(w, r, rp, q)
		}
	case "POST":
		verb = "create"
		code = srv.write(w, r, rp, "create")
	case "PUT":
		verb = "update"
		code = srv.write(w, r, rp, "update")
	case "PATCH":
		verb = "patch"
		code = srv.write(w, r, rp, "patch")
	case "DELETE":
		verb = "delete"
		code = srv.write(w, r, rp, "delete")
	default:
		e := errf(405, "MethodNotAllowed", "method %s not allowed", r.Method)
		writeErr(w, e)
		return e.code
	}
	if srv.observer != "" && r.Header.Get("Authorization") == "Bearer "+srv.observer {
		verb = "observer " + verb // /requests keeps the measured client's counts apart
	}
	srv.st.countRequest(verb, rp.res, rp.sub, code)
	return code
}

// ---- discovery ------------------------------------------------------------------------

func resourceList(gv string) []byte {
	var rs []map[string]any
	for _, r := range resourcesOf(gv) {
		rs = append(rs, map[string]any{"name": r.plural, "singularName": strings.ToLower(r.kind),
			"namespaced": r.namespaced, "kind": r.kind, "verbs": r.verbs})
		if r.status {
			rs = append(rs, map[string]any{"name": r.plural + "/status", "singularName": "",
				"namespaced": r.namespaced, "kind": r.kind, "verbs": []string{"get", "patch", "update"}})
		}
		if r.plural == "pods" && r.group == "" {
			rs = append(rs, map[string]any{"name": "pods/eviction", "singularName": "", "namespaced": true,
				"group": "policy", "version": "v1", "kind": "Eviction", "verbs": []string{"create"}},
				map[string]any{"name": "pods/binding", "singularName": "", "namespaced": true,
					"kind": "Binding", "verbs": []string{"create"}})
		}
	}
	b, _ := json.Marshal(map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs})
	return b
}

func groupJSON(g string) map[string]any {
	gv := map[string]any{"groupVersion": g + "/v1", "version": "v1"}
	return map[string]any{"name": g, "versions": []any{gv}, "preferredVersion": gv}
}

func group(g string) []byte {
	m := groupJSON(g)
	m["kind"], m["apiVersion"] = "APIGroup", "v1"
	b, _ := json.Marshal(m)
	return b
}

func groupList() []byte {
	var gs []any
	for _, g := range groups() {
		gs = append(gs, groupJSON(g))
	}
	b, _ := json.Marshal(map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
	return b
}

// ---- selectors ------------------------------------------------------------------------

type selector struct {
	labels []labelReq
	fields map[string]string // field -> value ("!" prefix: not equal)
}

type labelReq struct {
	key, op string // op: "=", "!=", "exists", "!exists", "in", "notin"
	values  []string
}

func parseSelectors(q url.Values) (*selector, *apiError) {
	ls, fs := q.Get("labelSelector"), q.Get("fieldSelector")
	if ls == "" && fs == "" {
		return nil, nil
	}
	sel := &selector{fields: map[string]string{}}
	for _, part := range splitSelector(ls) {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.Contains(part, " in (") || strings.Contains(part, " notin ("):
			op := "in"
			i := strings.Index(part, " in (")
			if j := strings.Index(part, " notin ("); j >= 0 {
				op, i = "notin", j
			}
			vals := part[strings.Index(part, "(")+1 : strings.LastIndex(part, ")")]
			var vs []string
			for _, v := range strings.Split(vals, ",") {
				vs = append(vs, strings.TrimSpace(v))
			}
			sel.labels = append(sel.labels, labelReq{strings.TrimSpace(part[:i]), op, vs})
		case strings.Contains(part, "!="):
			kv := strings.SplitN(part, "!=", 2)
			sel.labels = append(sel.labels, labelReq{kv[0], "!=", []string{kv[1]}})
		case strings.Contains(part, "=="):
			kv := strings.SplitN(part, "==", 2)
			sel.labels = append(sel.labels, labelReq{kv[0], "=", []string{kv[1]}})
		case strings.Contains(part, "="):
			kv := strings.SplitN(part, "=", 2)
			sel.labels = append(sel.labels, labelReq{kv[0], "=", []string{kv[1]}})
		case strings.HasPrefix(part, "!"):
			sel.labels = append(sel.labels, labelReq{part[1:], "!exists", nil})
		default:
			sel.labels = append(sel.labels, labelReq{part, "exists", nil})
		}
	}
	for _, part := range strings.Split(fs, ",") {
		if part == "" {
			continue
		}
		neg := strings.Contains(part, "!=")
		kv := strings.SplitN(strings.Replace(strings.Replace(part, "!=", "=", 1), "==", "=", 1), "=", 2)
		if len(kv) != 2 {
			return nil, errf(400, "BadRequest", "invalid field selector %q", part)
		}
		switch kv[0] {
		case "metadata.name", "metadata.namespace", "spec.nodeName", "status.phase":
		default:
			return nil, errf(400, "BadRequest", "field label not supported: %s", kv[0])
		}
		if neg {
			kv[1] = "!" + kv[1]
		}
		sel.fields[kv[0]] = kv[1]
	}
	return sel, nil
}

// splitSelector splits on commas outside parentheses.
func splitSelector(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func (sel *selector) match(o *object) bool {
	if sel == nil {
		return true
	}
	for _, r := range sel.labels {
		v, has := o.labels[r.key]
		switch r.op {
		case "=":
			if !has || v != r.values[0] {
				return false
			}
		case "!=":
			if has && v == r.values[0] {
				return false
			}
		case "exists":
			if !has {
				return false
			}
		case "!exists":
			if has {
				return false
			}
		case "in", "notin":
			in := false
			for _, x := range r.values {
				in = in || (has && v == x)
			}
			if in != (r.op == "in") {
				return false
			}
		}
	}
	for f, want := range sel.fields {
		var got string
		switch f {
		case "metadata.name":
			got = o.name
		case "metadata.namespace":
			got = o.ns
		case "spec.nodeName":
			got = o.nodeName
		case "status.phase":
			got = o.phase
		}
		if strings.HasPrefix(want, "!") {
			if got == want[1:] {
				return false
			}
		} else if got != want {
			return false
		}
	}
	return true
}

// ---- GET, LIST --------------------------------------------------------------------------

func (srv *server) get(w http.ResponseWriter, rp reqPath) int {
	st := srv.st
	st.mu.Lock()
	o := st.kind(rp.res).objs[objKey(rp.namespace, rp.name)]
	st.mu.Unlock()
	if o == nil {
		e := errf(404, "NotFound", "%s %q not found", rp.res.key(), rp.name)
		writeErr(w, e)
		return e.code
	}
	writeJSON(w, 200, o.data)
	return 200
}

type continueToken struct {
	RV    uint64 `json:"rv"`
	Start string `json:"start"`
}

func (srv *server) list(w http.ResponseWriter, r *http.Request, rp reqPath, q url.Values) int {
	st := srv.st
	ks := st.kind(rp.res)
	sel, e := parseSelectors(q)
	if e != nil {
		writeErr(w, e)
		return e.code
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	var objs []*object
	var rv uint64
	start := ""
	if c := q.Get("continue"); c != "" {
		var tok continueToken
		raw, err := base64.RawURLEncoding.DecodeString(c)
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil {
			e := errf(400, "BadRequest", "invalid continue token")
			writeErr(w, e)
			return e.code
		}
		st.mu.Lock()
		snap := ks.snaps[tok.RV]
		if snap != nil {
			snap.used = time.Now()
			objs, rv = snap.objs, snap.rv
		}
		st.mu.Unlock()
		if snap == nil {
			e := errf(410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
			writeErr(w, e)
			return e.code
		}
		start = tok.Start
	} else {
		st.mu.Lock()
		hold := ks.holdList
		st.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-time.After(25 * time.Second):
			case <-r.Context().Done():
				return 499
			}
		}
		st.mu.Lock()
		objs, rv = ks.sortedObjs(), st.rv
		if limit > 0 && len(objs) > limit {
			now := time.Now()
			for k, s := range ks.snaps { // tokens live 3 minutes after their last use
				if now.Sub(s.used) > 3*time.Minute {
					delete(ks.snaps, k)
				}
			}
			ks.snaps[rv] = &listSnap{rv: rv, objs: objs, used: now}
		}
		st.mu.Unlock()
	}
	i := 0
	if start != "" {
		i = sort.Search(len(objs), func(k int) bool { return objs[k].key > start })
	}
	var page []*object
	cont := ""
	for ; i < len(objs); i++ {
		o := objs[i]
		if rp.namespace != "" && o.ns != rp.namespace || !sel.match(o) {
			continue
		}
		if limit > 0 && len(page) == limit {
			tok, _ := json.Marshal(continueToken{RV: rv, Start: page[len(page)-1].key})
			cont = base64.RawURLEncoding.EncodeToString(tok)
			break
		}
		page = append(page, o)
	}
	meta := `{"resourceVersion":"` + rvString(rv) + `"`
	if cont != "" {
		meta += `,"continue":"` + cont + `","remainingItemCount":` + strconv.Itoa(len(objs)-i)
	}
	head := []byte(`{"kind":"` + rp.res.kind + `List","apiVersion":"` + rp.res.apiVersion() + `","metadata":` + meta + `},"items":[`)
	n := len(head) + 2
	for k, o := range page {
		n += len(o.data)
		if k > 0 {
			n++
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(200)
	_, _ = w.Write(head)
	for k, o := range page {
		if k > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(o.data)
	}
	_, _ = w.Write([]byte("]}"))
	return 200
}

// ---- WATCH -------------------------------------------------------------------------------

var (
	evPrefix = map[string][]byte{
		"ADDED":    []byte(`{"type":"ADDED","object":`),
		"MODIFIED": []byte(`{"type":"MODIFIED","object":`),
		"DELETED":  []byte(`{"type":"DELETED","object":`),
	}
	evSuffix = []byte("}\n")
)

func goneEvent(msg string) []byte {
	return []byte(`{"type":"ERROR","object":` + string(statusJSON(410, "Expired", msg)) + "}\n")
}

func (srv *server) watch(w http.ResponseWriter, r *http.Request, rp reqPath, q url.Values) int {
	st := srv.st
	ks := st.kind(rp.res)
	sel, e := parseSelectors(q)
	if e != nil {
		writeErr(w, e)
		return e.code
	}
	if rp.name != "" { // ?watch=1 on one object: a field selector on its name
		if sel == nil {
			sel = &selector{fields: map[string]string{}}
		}
		sel.fields["metadata.name"] = rp.name
	}
	timeout := 30 * time.Minute
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	// the pod stream of a cluster-wide watcher: its lines go to the lag log
	observer := srv.observer != "" && r.Header.Get("Authorization") == "Bearer "+srv.observer
	logSends := rp.res.plural == "pods" && rp.res.group == "" && rp.namespace == "" && !observer
	rvs := q.Get("resourceVersion")

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	rc := http.NewResponseController(w)

	st.mu.Lock()
	var initial []*object
	var cursor int64
	if rvs == "" || rvs == "0" {
		initial = ks.sortedObjs()
		cursor = ks.base + int64(len(ks.events))
	} else {
		want, err := strconv.ParseUint(rvs, 10, 64)
		if err != nil {
			st.mu.Unlock()
			e := errf(400, "BadRequest", "invalid resourceVersion %q", rvs)
			writeErr(w, e)
			return e.code
		}
		if want < ks.oldestRV {
			oldest := ks.oldestRV
			st.mu.Unlock()
			w.WriteHeader(200)
			line := goneEvent(fmt.Sprintf("too old resource version: %d (%d)", want, oldest))
			_, _ = w.Write(line)
			if logSends {
				st.podSends.add([]int64{time.Now().UnixNano()})
			}
			return 200
		}
		idx := sort.Search(len(ks.events), func(i int) bool { return ks.events[i].o.rv > want })
		cursor = ks.base + int64(idx)
	}
	wt := &watcher{kill: make(chan struct{}), allNS: rp.namespace == "" && sel == nil && !observer, observer: observer}
	wt.flushed.Store(cursor)
	ks.watchers[wt] = true
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		delete(ks.watchers, wt)
		st.mu.Unlock()
	}()

	var lag *lagStream
	var cc *countingConn
	if logSends && srv.lag != nil {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if t, ok := c.(*tls.Conn); ok {
			c = t.NetConn()
		}
		if cc, _ = c.(*countingConn); cc != nil {
			if lag = newLagStream(srv.lag, cc); lag != nil {
				defer lag.close()
			}
		}
	}
	w.WriteHeader(200)
	_ = rc.Flush()
	var sends, created []int64
	now := time.Now().UnixNano()
	for _, o := range initial {
		if rp.namespace != "" && o.ns != rp.namespace || !sel.match(o) {
			continue
		}
		_, _ = w.Write(evPrefix["ADDED"])
		_, _ = w.Write(o.data)
		_, _ = w.Write(evSuffix)
		if logSends {
			sends = append(sends, now)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var tick <-chan time.Time
	if bookmarks && srv.bookmark > 0 {
		t := time.NewTicker(srv.bookmark)
		defer t.Stop()
		tick = t.C
	}
	for {
		st.mu.Lock()
		killed := false
		select {
		case <-wt.kill:
			killed = true
		default:
		}
		// the window moved past this stream (it fell too far behind), or was dropped
		// (a forced 410: the stream ends with the ERROR even when it was caught up, so
		// that a client that read events committed since cannot resume past the drop)
		if killed || cursor < ks.base {
			oldest := ks.oldestRV
			st.mu.Unlock()
			why := "the stream fell behind the event window"
			if killed {
				why = "the event window was dropped"
			}
			_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, _ = w.Write(goneEvent(fmt.Sprintf("too old resource version: %s (%d)", why, oldest)))
			if logSends {
				st.podSends.add(append(sends, time.Now().UnixNano()))
			}
			return 200
		}
		evs := ks.events[cursor-ks.base:]
		notify := ks.notify
		st.mu.Unlock()
		if len(evs) > 0 || len(sends) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(60 * time.Second))
			for _, ev := range evs {
				o := ev.o
				if rp.namespace != "" && o.ns != rp.namespace || !sel.match(o) {
					continue
				}
				_, _ = w.Write(evPrefix[ev.typ])
				_, _ = w.Write(o.data)
				if _, err := w.Write(evSuffix); err != nil {
					return 200
				}
				if logSends {
					sends = append(sends, ev.created)
					created = append(created, ev.created)
				}
			}
			cursor += int64(len(evs))
			if err := rc.Flush(); err != nil {
				return 200
			}
			wt.flushed.Store(cursor)
			if logSends && len(sends) > 0 {
				st.podSends.add(sends)
			}
			if lag != nil && len(created) > 0 {
				lag.add(created, cc.written.Load())
			}
			sends, created = sends[:0], created[:0]
			continue
		}
		select {
		case <-notify:
		case <-wt.kill:
			continue // the ERROR, at the top
		case <-deadline.C:
			return 200
		case <-r.Context().Done():
			return 200
		case <-tick:
			st.mu.Lock()
			caughtUp := cursor == ks.base+int64(len(ks.events))
			rv := st.rv
			st.mu.Unlock()
			select {
			case <-wt.kill:
				caughtUp = false // no bookmark past a drop: the ERROR comes first
			default:
			}
			if !caughtUp {
				continue
			}
			line := `{"type":"BOOKMARK","object":{"kind":"` + rp.res.kind + `","apiVersion":"` + rp.res.apiVersion() +
				`","metadata":{"resourceVersion":"` + rvString(rv) + `","creationTimestamp":null}}}` + "\n"
			_ = rc.SetWriteDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.WriteString(w, line); err != nil {
				return 200
			}
			if err := rc.Flush(); err != nil {
				return 200
			}
			if logSends {
				st.podSends.add([]int64{time.Now().UnixNano()})
			}
		}
	}
}

// ---- writes -----------------------------------------------------------------------------

func (srv *server) write(w http.ResponseWriter, r *http.Request, rp reqPath, op string) int {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		e := errf(400, "BadRequest", "reading the body: %v", err)
		writeErr(w, e)
		return e.code
	}
	code, out, e := srv.st.apply(rp, op, r.Header.Get("Content-Type"), body, r.URL.Query())
	if e != nil {
		writeErr(w, e)
		return e.code
	}
	writeJSON(w, code, out)
	return code
}

func now3339() string { return time.Now().UTC().Format(time.RFC3339) }

// apply does one write. It returns the HTTP code and the body to answer.
func (st *store) apply(rp reqPath, op, ctype string, body []byte, q url.Values) (int, []byte, *apiError) {
	res := rp.res
	switch {
	case op == "create" && rp.sub == "" && rp.name == "":
		return st.create(rp, body)
	case op == "create" && res.plural == "pods" && rp.sub == "eviction":
		return st.evict(rp)
	case op == "create" && res.plural == "pods" && rp.sub == "binding":
		return st.bind(rp, body)
	case op == "delete" && rp.name != "" && rp.sub == "":
		return st.remove(rp, body)
	case (op == "update" || op == "patch") && rp.name != "" && (rp.sub == "" || rp.sub == "status" && res.status):
		return st.modify(rp, op, ctype, body)
	}
	return 0, nil, errf(405, "MethodNotAllowed", "%s is not supported on %s", op, res.plural+"/"+rp.sub)
}

func (st *store) create(rp reqPath, body []byte) (int, []byte, *apiError) {
	m, err := decodeObj(body)
	if err != nil {
		return 0, nil, errf(400, "BadRequest", "decoding the body: %v", err)
	}
	res := rp.res
	if k := mstr(m, "kind"); k != "" && k != res.kind {
		return 0, nil, errf(400, "BadRequest", "the body's kind %q is not %q", k, res.kind)
	}
	m["kind"], m["apiVersion"] = res.kind, res.apiVersion()
	md := mobj(m, "metadata")
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	ns := rp.namespace
	if res.namespaced {
		if bns := mstr(md, "namespace"); bns != "" && ns != "" && bns != ns {
			return 0, nil, errf(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
		} else if ns == "" {
			ns = bns
		}
		if ns == "" {
			return 0, nil, errf(400, "BadRequest", "namespace is required")
		}
		md["namespace"] = ns
	} else {
		delete(md, "namespace")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.kind(res)
	name := mstr(md, "name")
	if name == "" {
		gn := mstr(md, "generateName")
		if gn == "" {
			return 0, nil, errf(422, "Invalid", "metadata.name: Required value: name or generateName is required")
		}
		for {
			name = gn + randSuffix(5)
			if ks.objs[objKey(ns, name)] == nil {
				break
			}
		}
		md["name"] = name
	}
	if ks.objs[objKey(ns, name)] != nil {
		return 0, nil, &apiError{409, "AlreadyExists", fmt.Sprintf("%s %q already exists", res.key(), name)}
	}
	if strings.HasPrefix(res.group, "karpenter.") {
		delete(m, "status") // a custom resource's status is written through /status
	}
	rv := st.nextRV()
	md["uid"] = st.newUID()
	md["resourceVersion"] = rvString(rv)
	md["creationTimestamp"] = now3339()
	if _, ok := m["spec"]; ok {
		md["generation"] = 1
	}
	delete(md, "deletionTimestamp")
	o, err := fromMap(m, rv)
	if err != nil {
		return 0, nil, errf(500, "InternalError", "%v", err)
	}
	st.commit(ks, "ADDED", o)
	if res.plural == "nodeclaims" {
		p := claimPost{Time: time.Now().UnixNano(), Name: name, Requests: map[string]string{}}
		if ls := mobj(md, "labels"); ls != nil {
			p.Pool = mstr(ls, "karpenter.sh/nodepool")
		}
		for k, v := range mobj(mobj(mobj(m, "spec"), "resources"), "requests") {
			p.Requests[k] = fmt.Sprint(v)
		}
		st.claims.add(p)
	}
	return 201, o.data, nil
}

// modify is PUT and PATCH, on an object or its status.
func (st *store) modify(rp reqPath, op, ctype string, body []byte) (int, []byte, *apiError) {
	var patchDoc any
	var ops []map[string]any
	var put map[string]any
	var err error
	switch {
	case op == "update":
		put, err = decodeObj(body)
	case strings.HasPrefix(ctype, "application/json-patch+json"):
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		err = d.Decode(&ops)
	case strings.HasPrefix(ctype, "application/merge-patch+json"), strings.HasPrefix(ctype, "application/strategic-merge-patch+json"):
		// a strategic merge patch is taken as a merge patch: nodewarden sends none
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		err = d.Decode(&patchDoc)
	default:
		return 0, nil, errf(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json")
	}
	if err != nil {
		return 0, nil, errf(400, "BadRequest", "decoding the body: %v", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.kind(rp.res)
	old := ks.objs[objKey(rp.namespace, rp.name)]
	if old == nil {
		return 0, nil, errf(404, "NotFound", "%s %q not found", rp.res.key(), rp.name)
	}
	cur, err := decodeObj(old.data)
	if err != nil {
		return 0, nil, errf(500, "InternalError", "%v", err)
	}
	var next map[string]any
	switch {
	case put != nil:
		if rv := mstr(mobj(put, "metadata"), "resourceVersion"); rv != "" && rv != rvString(old.rv) {
			return 0, nil, errf(409, "Conflict", "Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", rp.res.key(), rp.name)
		}
		next = put
	case ops != nil:
		v, err := jsonPatch(deepCopy(cur), ops)
		if err != nil {
			return 0, nil, errf(422, "Invalid", "the server rejected our request due to an error in our request: %v", err)
		}
		next, _ = v.(map[string]any)
	default:
		next, _ = mergePatch(deepCopy(cur), patchDoc).(map[string]any)
	}
	if next == nil {
		return 0, nil, errf(422, "Invalid", "the patched object is not an object")
	}
	if rv := mstr(mobj(next, "metadata"), "resourceVersion"); op == "patch" && rv != "" && rv != rvString(old.rv) {
		return 0, nil, errf(409, "Conflict", "Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", rp.res.key(), rp.name)
	}
	// what a write may change: the status subresource only the status, the object all but it
	if rp.res.status {
		if rp.sub == "status" {
			st := next["status"]
			next = deepCopy(cur).(map[string]any)
			if st == nil {
				delete(next, "status")
			} else {
				next["status"] = st
			}
		} else if s, ok := cur["status"]; ok {
			next["status"] = s
		} else {
			delete(next, "status")
		}
	}
	next["kind"], next["apiVersion"] = rp.res.kind, rp.res.apiVersion()
	md := mobj(next, "metadata")
	if md == nil {
		md = map[string]any{}
		next["metadata"] = md
	}
	omd := mobj(cur, "metadata")
	for _, k := range []string{"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
		if v, ok := omd[k]; ok {
			md[k] = v
		} else {
			delete(md, k)
		}
	}
	if _, ok := omd["deletionTimestamp"]; ok { // no finalizer may be added to an object being deleted
		if nf, _ := md["finalizers"].([]any); len(nf) > old.nfinalize {
			return 0, nil, errf(422, "Invalid", "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted")
		}
	}
	if jsonEqual(next, cur) { // nothing changed: no new version, no event
		return 200, old.data, nil
	}
	if !reflect.DeepEqual(normalize(next["spec"]), normalize(cur["spec"])) {
		if g, ok := omd["generation"].(json.Number); ok {
			n, _ := g.Int64()
			md["generation"] = n + 1
		}
	}
	rv := st.nextRV()
	md["resourceVersion"] = rvString(rv)
	o, err := fromMap(next, rv)
	if err != nil {
		return 0, nil, errf(500, "InternalError", "%v", err)
	}
	if o.deleting && o.nfinalize == 0 {
		st.commit(ks, "DELETED", o)
	} else {
		st.commit(ks, "MODIFIED", o)
	}
	return 200, o.data, nil
}

type deleteOptions struct {
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
	Preconditions      *struct {
		UID             *string `json:"uid"`
		ResourceVersion *string `json:"resourceVersion"`
	} `json:"preconditions"`
}

func (st *store) remove(rp reqPath, body []byte) (int, []byte, *apiError) {
	var opts deleteOptions
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return 0, nil, errf(400, "BadRequest", "decoding the delete options: %v", err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.kind(rp.res)
	old := ks.objs[objKey(rp.namespace, rp.name)]
	if old == nil {
		return 0, nil, errf(404, "NotFound", "%s %q not found", rp.res.key(), rp.name)
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != old.uid {
			return 0, nil, errf(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, old.uid)
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != rvString(old.rv) {
			return 0, nil, errf(409, "Conflict", "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *p.ResourceVersion, rvString(old.rv))
		}
	}
	grace := int64(0)
	if rp.res.plural == "pods" && rp.res.group == "" && old.nodeName != "" {
		grace = 30
		if opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
	}
	return st.deleteLocked(ks, old, grace)
}

// deleteLocked deletes o: at once, or marked with a deletionTimestamp while finalizers or a
// pod's grace period hold it (a bound pod goes one second later: there is no kubelet).
func (st *store) deleteLocked(ks *kindStore, old *object, grace int64) (int, []byte, *apiError) {
	if old.nfinalize == 0 && grace == 0 {
		m, _ := decodeObj(old.data)
		rv := st.nextRV()
		mobj(m, "metadata")["resourceVersion"] = rvString(rv)
		o, _ := fromMap(m, rv)
		st.commit(ks, "DELETED", o)
		return 200, o.data, nil
	}
	if old.deleting {
		return 202, old.data, nil
	}
	m, _ := decodeObj(old.data)
	md := mobj(m, "metadata")
	md["deletionTimestamp"] = now3339()
	md["deletionGracePeriodSeconds"] = grace
	rv := st.nextRV()
	md["resourceVersion"] = rvString(rv)
	o, _ := fromMap(m, rv)
	st.commit(ks, "MODIFIED", o)
	if old.nfinalize == 0 {
		key := o.key
		time.AfterFunc(time.Second, func() {
			st.mu.Lock()
			defer st.mu.Unlock()
			if cur := ks.objs[key]; cur != nil && cur.uid == o.uid && cur.deleting && cur.nfinalize == 0 {
				m, _ := decodeObj(cur.data)
				rv := st.nextRV()
				mobj(m, "metadata")["resourceVersion"] = rvString(rv)
				d, _ := fromMap(m, rv)
				st.commit(ks, "DELETED", d)
			}
		})
	}
	return 202, o.data, nil
}

func successStatus() []byte {
	return []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}`)
}

func (st *store) evict(rp reqPath) (int, []byte, *apiError) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.kind(rp.res)
	old := ks.objs[objKey(rp.namespace, rp.name)]
	if old == nil {
		return 0, nil, errf(404, "NotFound", "pods %q not found", rp.name)
	}
	grace := int64(0)
	if old.nodeName != "" {
		grace = 30
	}
	if _, _, e := st.deleteLocked(ks, old, grace); e != nil {
		return 0, nil, e
	}
	return 201, successStatus(), nil
}

func (st *store) bind(rp reqPath, body []byte) (int, []byte, *apiError) {
	var b struct {
		Target struct {
			Name string `json:"name"`
		} `json:"target"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Target.Name == "" {
		return 0, nil, errf(400, "BadRequest", "a Binding needs target.name")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.kind(rp.res)
	old := ks.objs[objKey(rp.namespace, rp.name)]
	if old == nil {
		return 0, nil, errf(404, "NotFound", "pods %q not found", rp.name)
	}
	if old.nodeName != "" {
		return 0, nil, errf(409, "Conflict", "pod %s is already assigned to node %q", rp.name, old.nodeName)
	}
	m, _ := decodeObj(old.data)
	mobj(m, "spec")["nodeName"] = b.Target.Name
	status := mobj(m, "status")
	if status == nil {
		status = map[string]any{}
		m["status"] = status
	}
	status["conditions"] = []any{map[string]any{"type": "PodScheduled", "status": "True", "lastTransitionTime": now3339(), "lastProbeTime": nil}}
	rv := st.nextRV()
	mobj(m, "metadata")["resourceVersion"] = rvString(rv)
	o, _ := fromMap(m, rv)
	st.commit(ks, "MODIFIED", o)
	return 201, successStatus(), nil
}
