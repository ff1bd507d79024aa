package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// object is one stored object. It is immutable once stored: a write makes a new one, so
// a list snapshot or a queued watch event can keep a pointer without a copy.
type object struct {
	key       string // "ns/name" or "name"
	ns, name  string
	uid       string
	rv        uint64
	data      []byte // the object's JSON, resourceVersion included (what LIST and WATCH send)
	labels    map[string]string
	nodeName  string // pods: spec.nodeName
	phase     string // pods: status.phase
	deleting  bool   // metadata.deletionTimestamp set
	nfinalize int    // len(metadata.finalizers)
	gen       bool   // made by the generator or the churn (a pod's churn state may still move it)
}

// event is one watch event of a kind, in resourceVersion order.
type event struct {
	typ     string // ADDED, MODIFIED, DELETED
	o       *object
	created int64 // unix ns at commit: the start of the event-to-cache lag
}

// listSnap is the list of a kind at one resourceVersion, kept for its continue tokens.
type listSnap struct {
	rv   uint64
	objs []*object
	used time.Time
}

// kindStore holds the objects and the event window of one resource.
type kindStore struct {
	res      *resource
	objs     map[string]*object
	sorted   []*object // objs by key; nil when it must be rebuilt
	events   []event   // the retained window
	base     int64     // absolute index of events[0]
	oldestRV uint64    // a watch may resume from any rv >= oldestRV; older is 410 Gone
	notify   chan struct{}
	watchers map[*watcher]bool
	snaps    map[uint64]*listSnap
	holdList chan struct{} // non-nil: a LIST waits until it is closed (the driver's "before pods" figure)
}

// watcher is one open watch stream; kill ends it (a forced 410 closes every stream of a kind).
// flushed is the absolute index of the kind's next event the stream has not flushed yet.
type watcher struct {
	kill     chan struct{}
	flushed  atomic.Int64
	allNS    bool
	observer bool // the observer token's (server.observer): not counted in /state
}

// store is the whole cluster: one lock, one resourceVersion counter as etcd has.
type store struct {
	mu       sync.Mutex
	rv       uint64
	kinds    map[string]*kindStore
	window   int // events kept per kind
	uidSeq   uint64
	clock    func() time.Time
	podSends podSendLog
	claims   claimLog
	// requests per "verb resource" for the report
	reqMu sync.Mutex
	reqs  map[string]int
}

func newStore(window int) *store {
	s := &store{kinds: map[string]*kindStore{}, window: window, clock: time.Now, reqs: map[string]int{}}
	for _, r := range resources {
		s.kinds[r.key()] = &kindStore{res: r, objs: map[string]*object{}, notify: make(chan struct{}),
			watchers: map[*watcher]bool{}, snaps: map[uint64]*listSnap{}}
	}
	return s
}

func (s *store) kind(r *resource) *kindStore { return s.kinds[r.key()] }

// unflushed is how many committed events of the kind the slowest cluster-wide watch
// stream has not flushed yet. Caller holds s.mu.
func (ks *kindStore) unflushed() int64 {
	end := ks.base + int64(len(ks.events))
	var most int64
	for w := range ks.watchers {
		if d := end - w.flushed.Load(); w.allNS && d > most {
			most = d
		}
	}
	return most
}

func objKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func (s *store) nextRV() uint64 { s.rv++; return s.rv }

func (s *store) newUID() string {
	s.uidSeq++
	n := s.uidSeq
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(n*2654435761), uint16(n>>7), n&0xfff, (n>>12)&0xfff, n*11400714819323198485>>16)
}

// commit stores o (or removes it for DELETED) and appends the event. Caller holds s.mu.
func (s *store) commit(ks *kindStore, typ string, o *object) {
	if typ == "DELETED" {
		delete(ks.objs, o.key)
	} else {
		ks.objs[o.key] = o
	}
	ks.sorted = nil
	ks.events = append(ks.events, event{typ: typ, o: o, created: s.clock().UnixNano()})
	if len(ks.events) > 2*s.window {
		drop := len(ks.events) - s.window
		ks.oldestRV = ks.events[drop-1].o.rv
		ks.events = append([]event(nil), ks.events[drop:]...)
		ks.base += int64(drop)
	}
	close(ks.notify)
	ks.notify = make(chan struct{})
}

// sortedObjs returns the kind's objects by key. Caller holds s.mu.
func (ks *kindStore) sortedObjs() []*object {
	if ks.sorted == nil {
		out := make([]*object, 0, len(ks.objs))
		for _, o := range ks.objs {
			out = append(out, o)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
		ks.sorted = out
	}
	return ks.sorted
}

// expire drops the kind's event window and its list snapshots and ends its watch streams
// with an ERROR 410 event (even a stream that was caught up, which may already have sent
// events committed after the drop): every client must relist, and one resuming from any
// resourceVersion it had before gets 410 Gone too. Caller holds s.mu.
func (s *store) expire(ks *kindStore) {
	ks.oldestRV = s.nextRV()
	ks.base += int64(len(ks.events))
	ks.events = nil
	ks.snaps = map[uint64]*listSnap{}
	for w := range ks.watchers {
		close(w.kill)
		delete(ks.watchers, w)
	}
	close(ks.notify)
	ks.notify = make(chan struct{})
}

// ---- decoding and encoding generic objects ----------------------------------------

func decodeObj(data []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

func mobj(m map[string]any, k string) map[string]any {
	v, _ := m[k].(map[string]any)
	return v
}

func mstr(m map[string]any, k string) string {
	v, _ := m[k].(string)
	return v
}

// fromMap encodes m as a stored object (m's metadata.resourceVersion must be set).
func fromMap(m map[string]any, rv uint64) (*object, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	md := mobj(m, "metadata")
	o := &object{ns: mstr(md, "namespace"), name: mstr(md, "name"), uid: mstr(md, "uid"), rv: rv, data: data}
	o.key = objKey(o.ns, o.name)
	if ls := mobj(md, "labels"); ls != nil {
		o.labels = map[string]string{}
		for k, v := range ls {
			if s, ok := v.(string); ok {
				o.labels[k] = s
			}
		}
	}
	if ts, ok := md["deletionTimestamp"]; ok && ts != nil {
		o.deleting = true
	}
	if f, ok := md["finalizers"].([]any); ok {
		o.nfinalize = len(f)
	}
	o.nodeName = mstr(mobj(m, "spec"), "nodeName")
	o.phase = mstr(mobj(m, "status"), "phase")
	return o, nil
}

func rvString(rv uint64) string { return strconv.FormatUint(rv, 10) }

// ---- the pod watch's send log: the driver's event-to-cache lag ----------------------

// podSendLog records, for every line written to a cluster-wide pod watch stream (events,
// bookmarks, errors: all that nodewarden counts in nodewarden_kube_watch_events_total),
// when the event behind it was committed. Line k of the log is the k-th line sent.
type podSendLog struct {
	mu    sync.Mutex
	times []int64
}

func (l *podSendLog) add(ts []int64) {
	l.mu.Lock()
	l.times = append(l.times, ts...)
	l.mu.Unlock()
}

func (l *podSendLog) since(from int) (int, []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < 0 {
		from = 0
	}
	if from > len(l.times) {
		from = len(l.times)
	}
	return len(l.times), append([]int64{}, l.times[from:]...)
}

// ---- NodeClaim creates: the burst's answer -----------------------------------------

type claimPost struct {
	Time     int64             `json:"time"`
	Name     string            `json:"name"`
	Pool     string            `json:"nodepool"`
	Requests map[string]string `json:"requests"`
}

type claimLog struct {
	mu    sync.Mutex
	posts []claimPost
}

func (l *claimLog) add(p claimPost) {
	l.mu.Lock()
	l.posts = append(l.posts, p)
	l.mu.Unlock()
}

func (l *claimLog) all() []claimPost {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]claimPost{}, l.posts...)
}

func (s *store) countRequest(verb string, r *resource, sub string, code int) {
	k := verb + " " + r.plural
	if sub != "" {
		k += "/" + sub
	}
	k += " " + strconv.Itoa(code)
	s.reqMu.Lock()
	s.reqs[k]++
	s.reqMu.Unlock()
}
