package main

import (
	"encoding/json"
	"math/rand"
	"net/http"
	"strconv"
	"time"
)

// The control API (plain HTTP on loopback) the driver steers the stand-in with.
//
//	GET  /state                counts of live objects per resource, the resourceVersion, open watches (the observer's
//	                           not counted), the pod send count,
//	                           podBacklog: pod events committed and not yet read by the cluster-wide pod watch
//	POST /hold {"kind","hold"} make the first page of a kind's LIST wait (for the "before pods" figures) or let it go
//	POST /churn {"rate","seconds"}  start the churn; GET /churn: its progress
//	GET  /pod-sends?from=K     commit times (unix ns) of the lines sent on the pod watch from line K on
//	POST /expire {"kinds":[...],"deletePods":N,"addPods":M}  drop the event windows and end the watches of
//	                           those kinds with an ERROR 410 event (and 410 Gone on a resume), then change pods
//	POST /burst {"pods","cpu","memory"}  the unschedulable burst
//	GET  /lag?from=K           event-to-read lag records of the pod watch (lag.go) from record K on
//	GET  /claims               the NodeClaim creates seen (time, name, nodepool, requests)
//	GET  /requests             requests served, per verb, resource and code ("observer <verb>" for the observer's)
//	GET  /objects?resource=R   the stored objects of a resource (plural or plural.group), a JSON array
//	GET  /versions             every live object's resourceVersion: {resource: {"ns/name" or "name": rv}}
type control struct {
	s   *store
	c   *cluster
	ch  *churn
	lag *lagLog
	rnd *rand.Rand
}

func jsonOK(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func jsonErr(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (ct *control) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := ct.s
	var body map[string]any
	if r.Method == "POST" {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			jsonErr(w, 400, "body: "+err.Error())
			return
		}
	}
	num := func(k string, def float64) float64 {
		if v, ok := body[k].(float64); ok {
			return v
		}
		return def
	}
	str := func(k, def string) string {
		if v, ok := body[k].(string); ok {
			return v
		}
		return def
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /state":
		s.mu.Lock()
		counts, watchers := map[string]int{}, map[string]int{}
		for k, ks := range s.kinds {
			counts[k] = len(ks.objs)
			for wt := range ks.watchers {
				if !wt.observer {
					watchers[k]++
				}
			}
		}
		rv := s.rv
		unflushed := s.kind(rPods).unflushed()
		s.mu.Unlock()
		n, _ := s.podSends.since(1 << 62)
		// podBacklog: pod events committed that nodewarden has not read yet (not flushed to
		// its stream, or flushed and still in the socket)
		jsonOK(w, map[string]any{"rv": rv, "counts": counts, "watchers": watchers, "podSends": n,
			"lagPending": ct.lag.pending.Load(), "podBacklog": unflushed + ct.lag.pending.Load(), "churn": ct.ch.status()})
	case "POST /hold":
		s.mu.Lock()
		ks := s.kinds[str("kind", "pods")]
		if ks == nil {
			s.mu.Unlock()
			jsonErr(w, 400, "unknown kind")
			return
		}
		if hold, _ := body["hold"].(bool); hold {
			if ks.holdList == nil {
				ks.holdList = make(chan struct{})
			}
		} else if ks.holdList != nil {
			close(ks.holdList)
			ks.holdList = nil
		}
		s.mu.Unlock()
		jsonOK(w, map[string]any{"time": time.Now().UnixNano()})
	case "POST /churn":
		if !ct.ch.start(num("rate", 0), time.Duration(num("seconds", 0)*float64(time.Second))) {
			jsonErr(w, 409, "a churn is running, or nothing to churn")
			return
		}
		jsonOK(w, ct.ch.status())
	case "GET /churn":
		jsonOK(w, ct.ch.status())
	case "GET /pod-sends":
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		n, times := s.podSends.since(from)
		jsonOK(w, map[string]any{"total": n, "from": from, "times": times})
	case "POST /expire":
		s.mu.Lock()
		var kinds []string
		if ks, ok := body["kinds"].([]any); ok {
			for _, k := range ks {
				if name, ok := k.(string); ok && s.kinds[name] != nil {
					kinds = append(kinds, name)
					s.expire(s.kinds[name])
				}
			}
		}
		rv := s.rv
		ct.c.changePods(s, int(num("deletePods", 0)), int(num("addPods", 0)), ct.rnd)
		s.mu.Unlock()
		jsonOK(w, map[string]any{"expired": kinds, "rv": rv, "time": time.Now().UnixNano()})
	case "POST /burst":
		n := int(num("pods", 0))
		t0, t1 := ct.c.burst(s, n, str("cpu", "1"), str("memory", "2Gi"))
		jsonOK(w, map[string]any{"pods": n, "start": t0, "committed": t1})
	case "GET /lag":
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		n, recs, nerr, lastErr := ct.lag.since(from)
		jsonOK(w, map[string]any{"total": n, "from": from, "records": recs, "errors": nerr, "lastError": lastErr})
	case "GET /claims":
		jsonOK(w, s.claims.all())
	case "GET /requests":
		s.reqMu.Lock()
		out := map[string]int{}
		for k, v := range s.reqs {
			out[k] = v
		}
		s.reqMu.Unlock()
		jsonOK(w, out)
	case "GET /objects":
		s.mu.Lock()
		ks := s.kinds[r.URL.Query().Get("resource")]
		var objs []*object
		if ks != nil {
			objs = ks.sortedObjs()
		}
		s.mu.Unlock()
		if ks == nil {
			jsonErr(w, 404, "unknown resource")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("["))
		for i, o := range objs {
			if i > 0 {
				_, _ = w.Write([]byte(","))
			}
			_, _ = w.Write(o.data)
		}
		_, _ = w.Write([]byte("]\n"))
	case "GET /versions":
		s.mu.Lock()
		out := map[string]map[string]string{}
		for k, ks := range s.kinds {
			m := make(map[string]string, len(ks.objs))
			for key, o := range ks.objs {
				m[key] = rvString(o.rv)
			}
			out[k] = m
		}
		s.mu.Unlock()
		jsonOK(w, out)
	default:
		jsonErr(w, 404, "no route "+r.Method+" "+r.URL.Path)
	}
}
