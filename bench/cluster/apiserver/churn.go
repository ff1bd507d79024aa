package main

import (
	"math/rand"
	"sync"
	"time"
)

// The churn: pods of the generated Deployments created, bound to a node, Running, marked
// for deletion and deleted, one watch event per step, at a fixed rate of events per
// second. A pod waits between steps (scheduling 50 ms, start 150 ms, a 2 s life, 300 ms of
// graceful termination); each tick spends its quota of events on the oldest due steps
// first (the last stages first) and on new pods when nothing is due, so the rate is
// exact and the number of live churn pods settles.

var stepDelay = [...]time.Duration{stNew: 50 * time.Millisecond, stBound: 150 * time.Millisecond,
	stRunning: 2 * time.Second, stTerminating: 300 * time.Millisecond}

type churnPod struct {
	p   *podState
	due time.Time
}

type churn struct {
	s  *store
	c  *cluster
	mu sync.Mutex
	// stage queues: pods waiting for their next step, each in due order
	queues  [stTerminating + 1][]churnPod
	running bool
	rate    float64
	started time.Time
	ended   time.Time
	emitted int
	total   int
	rnd     *rand.Rand
	nextW   int
}

func newChurn(s *store, c *cluster) *churn {
	return &churn{s: s, c: c, rnd: rand.New(rand.NewSource(c.cfg.seed + 7))}
}

type churnStatus struct {
	Running bool    `json:"running"`
	Rate    float64 `json:"rate"`
	Started int64   `json:"started"`
	Ended   int64   `json:"ended"`
	Emitted int     `json:"emitted"`
	Total   int     `json:"total"`
	Live    int     `json:"live"`
}

func (ch *churn) status() churnStatus {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	live := 0
	for _, q := range ch.queues {
		live += len(q)
	}
	st := churnStatus{Running: ch.running, Rate: ch.rate, Emitted: ch.emitted, Total: ch.total, Live: live}
	if !ch.started.IsZero() {
		st.Started = ch.started.UnixNano()
	}
	if !ch.ended.IsZero() {
		st.Ended = ch.ended.UnixNano()
	}
	return st
}

// start runs the churn at rate events/s for d (in the background). false if one runs.
func (ch *churn) start(rate float64, d time.Duration) bool {
	ch.mu.Lock()
	if ch.running || rate <= 0 || len(ch.c.workloads) == 0 || len(ch.c.nodes) == 0 {
		ch.mu.Unlock()
		return false
	}
	ch.running, ch.rate, ch.started, ch.ended, ch.emitted = true, rate, time.Now(), time.Time{}, 0
	ch.mu.Unlock()
	go ch.run(rate, d)
	return true
}

func (ch *churn) run(rate float64, d time.Duration) {
	const tick = 5 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	end := start.Add(d)
	done := 0
	for now := range t.C {
		if !now.Before(end) {
			now = end
		}
		want := int(rate * now.Sub(start).Seconds())
		if want > done {
			ch.step(want-done, now)
			done = want
		}
		if !now.Before(end) {
			break
		}
	}
	ch.mu.Lock()
	ch.running, ch.ended = false, time.Now()
	ch.mu.Unlock()
}

// step emits n events. All of them are committed under one hold of the store's lock.
func (ch *churn) step(n int, now time.Time) {
	s := ch.s
	ch.mu.Lock()
	defer ch.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.kind(rPods)
	for i := 0; i < n; i++ {
		stage := -1
		for st := stTerminating; st >= stNew; st-- {
			if q := ch.queues[st]; len(q) > 0 && !q[0].due.After(now) {
				stage = st
				break
			}
		}
		if stage < 0 { // nothing due: a new pod
			w := ch.c.workloads[ch.nextW%len(ch.c.workloads)]
			ch.nextW++
			p := w.newPod(s, now)
			p.node = ch.c.nodes[ch.rnd.Intn(len(ch.c.nodes))]
			p.stage = stNew
			s.commit(ks, "ADDED", p.object(s))
			ch.queues[stNew] = append(ch.queues[stNew], churnPod{p, now.Add(stepDelay[stNew])})
		} else {
			cp := ch.queues[stage][0]
			ch.queues[stage] = ch.queues[stage][1:]
			p := cp.p
			if cur := ks.objs[objKey(p.w.ns, p.name)]; cur == nil || cur.uid != p.uid || !cur.gen {
				// gone, or taken over by a write from a client: the churn lets it be
				i--
				continue
			}
			switch stage {
			case stNew:
				p.stage = stBound
			case stBound:
				p.stage, p.started = stRunning, now
				p.podIP = ch.c.podIP(p.node)
				p.cids = [2]string{hexID(64), hexID(64)}
			case stRunning:
				p.stage, p.deleted = stTerminating, now
			case stTerminating:
				o := p.object(s)
				s.commit(ks, "DELETED", o)
				ch.emitted++
				ch.total++
				continue
			}
			s.commit(ks, "MODIFIED", p.object(s))
			ch.queues[p.stage] = append(ch.queues[p.stage], churnPod{p, now.Add(stepDelay[p.stage])})
		}
		ch.emitted++
		ch.total++
	}
}

// ---- the burst and the forced relist -------------------------------------------------------

// burst creates n pending pods the scheduler found no node for (PodScheduled=False,
// reason Unschedulable), all in one commit: one Deployment of batch workers, spread over
// zones (ScheduleAnyway). They select the "burst" NodePool's label, so only new
// NodeClaims can hold them.
func (c *cluster) burst(s *store, n int, cpu, mem string) (int64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t0 := time.Now()
	w := newWorkload("Batch", "ml-batch", "burst-inference-"+randSuffix(4), n, cpu, mem)
	w.unschedulable = true
	ks := s.kind(rPods)
	for i := 0; i < n; i++ {
		p := w.newPod(s, t0)
		p.stage = stUnschedulable
		s.commit(ks, "ADDED", p.object(s))
	}
	return t0.UnixNano(), time.Now().UnixNano()
}

// changePods deletes del generated pods and adds add new running ones. Caller holds s.mu.
func (c *cluster) changePods(s *store, del, add int, rnd *rand.Rand) {
	ks := s.kind(rPods)
	objs := ks.sortedObjs()
	deleted := 0
	for tries := 0; deleted < del && tries < 20*del+100 && len(objs) > 0; tries++ {
		o := objs[rnd.Intn(len(objs))]
		if !o.gen || o.deleting || ks.objs[o.key] != o {
			continue
		}
		m, err := decodeObj(o.data)
		if err != nil {
			continue
		}
		rv := s.nextRV()
		mobj(m, "metadata")["resourceVersion"] = rvString(rv)
		d, _ := fromMap(m, rv)
		s.commit(ks, "DELETED", d)
		deleted++
	}
	for i := 0; i < add && len(c.workloads) > 0 && len(c.nodes) > 0; i++ {
		w := c.workloads[rnd.Intn(len(c.workloads))]
		p := w.newPod(s, time.Now())
		p.node = c.nodes[rnd.Intn(len(c.nodes))]
		p.stage, p.started = stRunning, time.Now()
		p.podIP = c.podIP(p.node)
		p.cids = [2]string{hexID(64), hexID(64)}
		s.commit(ks, "ADDED", p.object(s))
	}
}
