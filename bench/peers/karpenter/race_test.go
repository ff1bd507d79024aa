//go:build test_performance

// The Karpenter side of bench/peers/karpenter: Karpenter's own scheduler
// (sigs.k8s.io/karpenter pkg/controllers/provisioning/scheduling) timed on the
// inputs nodewarden's scheduler is given too. Test tooling only; nothing here ships.
//
// bench/peers/karpenter/build compiles this file in a temporary copy of the module
// beside Karpenter's own scheduling_benchmark_test.go, taken unchanged from the Go
// module cache at KARPENTER_CORE_VERSION (tests/k8s/versions): its pod generators
// (makeDiversePods, makePreferencePods, the package-level generator r seeded with 42),
// its setupScheduler (the 400 fake instance types of fake.InstanceTypes, one NodePool
// with limits, NewTopology, NewScheduler) are called from here. The binary is a
// command, not a test run (TestMain dispatches before any test flag is parsed):
//
//	karpenter-race bench diverse|preference|preference-ignore N CASE.json
//	    regenerate the benchmark's pods exactly as BenchmarkSchedulingN (diverse) or
//	    BenchmarkRespectPreferences / BenchmarkIgnorePreferences (preference, N 4000)
//	    make them in a fresh process (r seeded with 42 first), write them with the
//	    fake instance types and the NodePool to CASE.json (the case format below),
//	    then time Karpenter's Solve on them; print one result line.
//	karpenter-race solve CASE.json
//	    read a case (bench/peers/karpenter/run writes the scale-out shapes over the
//	    real catalog this way), build Karpenter's objects from it and time Solve.
//
// The case format (nodewarden's reader: bench/peers/karpenter/nwrace.c):
//
//	{"name": ..., "ignorePreferences": bool, "nodePools": [NodePool...],
//	 "instanceTypes": [{"name", "labels": {k: v}, "capacity": {res: qty},
//	                    "allocatable": {res: qty},
//	                    "offerings": [{"zone", "capacityType", "price", "available"}]}],
//	 "pods": [Pod...]}
//
// A result line: {"side": "karpenter", "pods", "scheduled", "unschedulable", "nodes",
// "pricePerHour", "solveSeconds" (mean over "solves"), "podsPerSec", "peakRssMiB" (VmHWM),
// "types": {instance type: nodes}}. A NodeClaim's price is the cheapest available
// offering among its instance type options that its requirements allow (what a launch
// of it pays: Karpenter launches the cheapest of its options).
package scheduling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	karpreqs "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/test"
)

// The package variables the benchmark file assigns; Karpenter declares them in its
// suite_test.go, which is not copied (it starts the Ginkgo suite's environment).
var (
	ctx           context.Context
	cloudProvider *fake.CloudProvider
	cluster       *state.Cluster
)

// Solves are repeated (each on a fresh scheduler, untimed setup) until they add up to
// at least minSolveSeconds, at most maxSolves times; the mean is reported.
const (
	minSolveSeconds = 1.0
	maxSolves       = 50
)

type offeringJSON struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

type itypeJSON struct {
	Name        string              `json:"name"`
	Labels      map[string]string   `json:"labels"`
	Capacity    corev1.ResourceList `json:"capacity"`
	Allocatable corev1.ResourceList `json:"allocatable"`
	Offerings   []offeringJSON      `json:"offerings"`
}

type caseJSON struct {
	Name              string         `json:"name"`
	IgnorePreferences bool           `json:"ignorePreferences"`
	NodePools         []*v1.NodePool `json:"nodePools"`
	InstanceTypes     []itypeJSON    `json:"instanceTypes"`
	Pods              []*corev1.Pod  `json:"pods"`
}

type resultJSON struct {
	Side          string         `json:"side"`
	Pods          int            `json:"pods"`
	Scheduled     int            `json:"scheduled"`
	Unschedulable int            `json:"unschedulable"`
	Nodes         int            `json:"nodes"`
	PricePerHour  float64        `json:"pricePerHour"`
	SolveSeconds  float64        `json:"solveSeconds"`
	Solves        int            `json:"solves"`
	PodsPerSec    float64        `json:"podsPerSec"`
	PeakRssMiB    float64        `json:"peakRssMiB"`
	Types         map[string]int `json:"types"`
}

func TestMain(m *testing.M) {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) == 4 && args[0] == "bench":
		err = cmdBench(args[1], args[2], args[3])
	case len(args) == 2 && args[0] == "solve":
		err = cmdSolve(args[1])
	default:
		err = fmt.Errorf("usage: %s bench diverse|preference|preference-ignore N CASE.json | solve CASE.json", os.Args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "karpenter-race:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func newContext() context.Context {
	// as the benchmark's benchmarkScheduler sets it
	return options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())
}

// cmdBench: the benchmark's own pods, types, NodePool and setupScheduler.
func cmdBench(kind, count, out string) error {
	n, err := strconv.Atoi(count)
	if err != nil || n <= 0 {
		return fmt.Errorf("N: want a positive integer, got %q", count)
	}
	ctx = newContext()
	var pods []*corev1.Pod
	var opts []scheduling.Options
	r.Seed(42) // the generator as a fresh process starts it (the benchmark's seed)
	switch kind {
	case "diverse":
		pods = makeDiversePods(n)
	case "preference":
		pods = makePreferencePods(n)
	case "preference-ignore":
		pods = makePreferencePods(n)
		opts = append(opts, scheduling.IgnorePreferences)
	default:
		return fmt.Errorf("kind: want diverse, preference or preference-ignore, got %q", kind)
	}
	c := caseJSON{
		Name:              fmt.Sprintf("%s-%d", kind, n),
		IgnorePreferences: kind == "preference-ignore",
		// The NodePool setupScheduler builds (it draws a name of its own), less its memory
		// limit: 10000000Gi, set there so as never to bind, is more than nodewarden's
		// quantities hold (int64 milli-units, 8Pi at most); its CPU limit stays, as
		// unbinding (20,000 of the benchmark's pods ask for at most 30,000 CPUs).
		NodePools: []*v1.NodePool{test.NodePool(v1.NodePool{Spec: v1.NodePoolSpec{Limits: v1.Limits{
			corev1.ResourceCPU: resource.MustParse("10000000"),
		}}})},
		InstanceTypes: typesJSON(fake.InstanceTypes(400)),
		Pods:          pods,
	}
	if err := writeJSON(out, &c); err != nil {
		return err
	}
	opts = append(opts, scheduling.NumConcurrentReconciles(5)) // as benchmarkScheduler
	return race(pods, func() (*scheduling.Scheduler, error) { return setupScheduler(ctx, pods, opts...) })
}

// cmdSolve: Karpenter's objects built from a case file, then the same setup as the
// benchmark's setupScheduler with them.
func cmdSolve(path string) error {
	ctx = newContext()
	var c caseJSON
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(c.NodePools) == 0 {
		return fmt.Errorf("%s: nodePools: want at least one", path)
	}
	its, err := typesFromJSON(c.InstanceTypes)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var opts []scheduling.Options
	if c.IgnorePreferences {
		opts = append(opts, scheduling.IgnorePreferences)
	}
	opts = append(opts, scheduling.NumConcurrentReconciles(5))
	for _, np := range c.NodePools {
		np.StatusConditions().SetTrue(v1.ConditionTypeValidationSucceeded)
		np.StatusConditions().SetTrue(v1.ConditionTypeNodeClassReady)
	}
	return race(c.Pods, func() (*scheduling.Scheduler, error) { return setupWith(c.NodePools, its, c.Pods, opts...) })
}

// setupWith is the benchmark's setupScheduler with the NodePools and instance types given.
func setupWith(pools []*v1.NodePool, its []*cloudprovider.InstanceType, pods []*corev1.Pod,
	opts ...scheduling.Options) (*scheduling.Scheduler, error) {
	cloudProvider = fake.NewCloudProvider()
	cloudProvider.InstanceTypes = its
	byPool := map[string][]*cloudprovider.InstanceType{}
	for _, np := range pools {
		byPool[np.Name] = its
	}
	client := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster = state.NewCluster(clk, client, cloudProvider)
	topology, err := scheduling.NewTopology(ctx, client, cluster, nil, pools, byPool, pods, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating topology, %w", err)
	}
	return scheduling.NewScheduler(ctx, client, pools, cluster, nil, topology, byPool, nil,
		events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil, opts...), nil
}

// race times Solve on fresh copies of the pods (Solve may relax a pod's preferences in
// place), each on a scheduler set up anew outside the timed part, and prints the result
// of the first.
func race(pods []*corev1.Pod, setup func() (*scheduling.Scheduler, error)) error {
	var first *scheduling.Results
	total := 0.0
	solves := 0
	for solves < maxSolves && (solves == 0 || total < minSolveSeconds) {
		copies := make([]*corev1.Pod, len(pods))
		for i, p := range pods {
			copies[i] = p.DeepCopy()
		}
		s, err := setup()
		if err != nil {
			return err
		}
		runtime.GC()
		start := time.Now()
		res, err := s.Solve(ctx, copies)
		total += time.Since(start).Seconds()
		if err != nil {
			return fmt.Errorf("solve: %w", err)
		}
		if first == nil {
			first = &res
		}
		solves++
	}
	out := resultJSON{Side: "karpenter", Pods: len(pods), Unschedulable: len(first.PodErrors),
		Nodes: len(first.NewNodeClaims), Solves: solves, SolveSeconds: total / float64(solves),
		Types: map[string]int{}}
	for _, nc := range first.NewNodeClaims {
		out.Scheduled += len(nc.Pods)
		price, name := claimPrice(nc)
		out.PricePerHour += price
		out.Types[name]++
	}
	for _, en := range first.ExistingNodes {
		out.Scheduled += len(en.Pods)
	}
	if out.SolveSeconds > 0 {
		out.PodsPerSec = float64(len(pods)) / out.SolveSeconds
	}
	out.PeakRssMiB = peakRssMiB()
	b, err := json.Marshal(&out)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// claimPrice: the cheapest available offering of the claim's instance type options that
// its requirements allow, and that type's name.
func claimPrice(nc *scheduling.NodeClaim) (float64, string) {
	best, name := math.Inf(1), ""
	for _, it := range nc.InstanceTypeOptions {
		for _, o := range it.Offerings.Available().Compatible(nc.Requirements) {
			if o.Price < best {
				best, name = o.Price, it.Name
			}
		}
	}
	if name == "" {
		return 0, "(no offering)"
	}
	return best, name
}

// typesJSON writes Karpenter's instance types in the case format: the single-valued
// In requirements as labels (the zone, capacity type and instance type come from the
// offerings and the name), capacity, Allocatable() (capacity less the overhead) and
// every offering with its price.
func typesJSON(its []*cloudprovider.InstanceType) []itypeJSON {
	var out []itypeJSON
	for _, it := range its {
		t := itypeJSON{Name: it.Name, Labels: map[string]string{}, Capacity: it.Capacity,
			Allocatable: it.Allocatable()}
		for _, key := range it.Requirements.Keys().UnsortedList() {
			req := it.Requirements.Get(key)
			if key == corev1.LabelTopologyZone || key == v1.CapacityTypeLabelKey ||
				key == corev1.LabelInstanceTypeStable || req.Operator() != corev1.NodeSelectorOpIn || req.Len() != 1 {
				continue
			}
			t.Labels[key] = req.Any()
		}
		for _, o := range it.Offerings {
			t.Offerings = append(t.Offerings, offeringJSON{
				Zone:         o.Requirements.Get(corev1.LabelTopologyZone).Any(),
				CapacityType: o.Requirements.Get(v1.CapacityTypeLabelKey).Any(),
				Price:        o.Price,
				Available:    o.Available,
			})
		}
		out = append(out, t)
	}
	return out
}

// typesFromJSON builds Karpenter instance types from the case format: requirements from
// the labels, the name, and the zones and capacity types of the available offerings (as
// a cloud provider's types carry them); the overhead is capacity less allocatable.
func typesFromJSON(in []itypeJSON) ([]*cloudprovider.InstanceType, error) {
	var out []*cloudprovider.InstanceType
	for i, t := range in {
		if t.Name == "" || len(t.Offerings) == 0 || t.Capacity == nil || t.Allocatable == nil {
			return nil, fmt.Errorf("instanceTypes[%d]: want name, capacity, allocatable and offerings", i)
		}
		reqs := karpreqs.NewRequirements(karpreqs.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, t.Name))
		keys := make([]string, 0, len(t.Labels))
		for k := range t.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			reqs.Add(karpreqs.NewRequirement(k, corev1.NodeSelectorOpIn, t.Labels[k]))
		}
		var zones, cts []string
		var offers cloudprovider.Offerings
		for _, o := range t.Offerings {
			offers = append(offers, &cloudprovider.Offering{
				Requirements: karpreqs.NewLabelRequirements(map[string]string{
					v1.CapacityTypeLabelKey: o.CapacityType, corev1.LabelTopologyZone: o.Zone}),
				Price:     o.Price,
				Available: o.Available,
			})
			if o.Available {
				zones = append(zones, o.Zone)
				cts = append(cts, o.CapacityType)
			}
		}
		reqs.Add(karpreqs.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
		reqs.Add(karpreqs.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, cts...))
		reserved := corev1.ResourceList{}
		for name, c := range t.Capacity {
			a, ok := t.Allocatable[name]
			if !ok {
				return nil, fmt.Errorf("instanceTypes[%d].allocatable: no %s", i, name)
			}
			d := c.DeepCopy()
			d.Sub(a)
			reserved[name] = d
		}
		out = append(out, &cloudprovider.InstanceType{Name: t.Name, Requirements: reqs, Offerings: offers,
			Capacity: t.Capacity, Overhead: &cloudprovider.InstanceTypeOverhead{KubeReserved: reserved}})
	}
	return out, nil
}

// peakRssMiB: this process's VmHWM (getrusage's maxrss also counts the parent's, up to
// the exec, when that was larger).
func peakRssMiB() float64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		var kb float64
		if n, _ := fmt.Sscanf(l, "VmHWM: %f kB", &kb); n == 1 {
			return kb / 1024
		}
	}
	return 0
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
