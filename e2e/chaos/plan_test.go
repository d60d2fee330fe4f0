//go:build e2e

package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"
)

// size is how much one run does. full is the size (make chaos); small runs in
// make test with a fixed seed.
type size struct {
	Name                  string
	DCs, Rollouts         int
	Window                time.Duration // rollouts and faults are spread over it
	LeaderKills           int
	NodeStops, NodesLost  int
	APIServerRestarts     int
	EtcdRestarts          int
	NodeStopFor, Settle   time.Duration
	RolloutTimeoutSeconds int64
	ControlPlaneDowntime  time.Duration
	MemoryTolerance       float64
}

var (
	fullSize = size{Name: "full", DCs: 20, Rollouts: 100, Window: 10 * time.Minute, LeaderKills: 50,
		NodeStops: 3, NodesLost: 1, APIServerRestarts: 2, EtcdRestarts: 1, NodeStopFor: 20 * time.Second,
		Settle: 6 * time.Minute, RolloutTimeoutSeconds: 180, ControlPlaneDowntime: 2 * time.Second, MemoryTolerance: 0.2}
	smallSize = size{Name: "small", DCs: 6, Rollouts: 18, Window: 90 * time.Second, LeaderKills: 6,
		NodeStops: 1, NodesLost: 0, APIServerRestarts: 1, EtcdRestarts: 1, NodeStopFor: 20 * time.Second,
		Settle: 5 * time.Minute, RolloutTimeoutSeconds: 180, ControlPlaneDowntime: 2 * time.Second, MemoryTolerance: 0.2}
)

// smallSeed is the small run's fixed seed, so that make test is repeatable.
const smallSeed = 20261127

// chosenSize reads STAGEHAND_CHAOS (full or small, default small) and STAGEHAND_SEED (a
// seed to replay; default: the small run's fixed seed, or the clock for full).
func chosenSize() (size, uint64, error) {
	sz := smallSize
	switch v := os.Getenv("STAGEHAND_CHAOS"); v {
	case "", "small":
	case "full":
		sz = fullSize
	default:
		return sz, 0, fmt.Errorf("STAGEHAND_CHAOS=%q: want full or small", v)
	}
	seed := uint64(smallSeed)
	if sz.Name == "full" {
		seed = uint64(time.Now().UnixNano())
	}
	if v := os.Getenv("STAGEHAND_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return sz, 0, fmt.Errorf("STAGEHAND_SEED=%q: %w", v, err)
		}
		seed = s
	}
	return sz, seed, nil
}

// faultKind names one kind of injected fault.
type faultKind string

const (
	leaderKill       faultKind = "leader SIGKILL"
	nodeStop         faultKind = "node agent stopped (20 s)"
	nodeLost         faultKind = "node lost and deleted"
	apiserverRestart faultKind = "kube-apiserver restart"
	etcdRestart      faultKind = "etcd restart"
)

// fault is one planned fault: what, and when after the start of the run. Pick chooses
// the target among the candidates when it runs (a node, for the node faults).
type fault struct {
	Kind faultKind
	At   time.Duration
	Pick uint64
}

// schedule is every fault of a run and every rollout's time, all drawn from the seed: a
// replay with the same seed and size plans the same run (the cluster's own timing still
// differs).
type schedule struct {
	Faults   []fault
	Rollouts []time.Duration
}

func plan(sz size, seed uint64) schedule {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	at := func(from, to float64) time.Duration {
		return time.Duration((from + rng.Float64()*(to-from)) * float64(sz.Window))
	}
	var s schedule
	add := func(kind faultKind, n int, from, to float64) {
		for range n {
			s.Faults = append(s.Faults, fault{Kind: kind, At: at(from, to), Pick: rng.Uint64()})
		}
	}
	add(leaderKill, sz.LeaderKills, 0, 1)
	add(nodeStop, sz.NodeStops, 0, 0.8)
	add(nodeLost, sz.NodesLost, 0.3, 0.7) // while rollouts still run, never in the first minutes
	add(apiserverRestart, sz.APIServerRestarts, 0.1, 0.9)
	add(etcdRestart, sz.EtcdRestarts, 0.1, 0.9)
	slices.SortFunc(s.Faults, func(a, b fault) int { return int(a.At - b.At) })
	for range sz.Rollouts {
		s.Rollouts = append(s.Rollouts, at(0, 0.9))
	}
	slices.Sort(s.Rollouts)
	return s
}
