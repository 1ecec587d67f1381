package faulttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Action is one thing a schedule does to the nodes.
type Action int

const (
	Kill9    Action = iota // SIGKILL the target; it stays down until Restart
	Term                   // SIGTERM the target (graceful stop); down until Restart
	Pause                  // SIGSTOP the target until Resume
	Isolate                // cut the target from every other node, both ways
	SplitMin               // split off a minority that holds the target
	SplitMaj               // split off a minority without the target (it keeps the majority)
	CutFrom                // the target's connections to the others are cut, not theirs to it
	CutTo                  // the others' connections to the target are cut, not its own
	Restart                // start every node that is down, on its directory
	Resume                 // SIGCONT every paused node
	Heal                   // remove every cut
	HealAll                // Resume, Restart and Heal
)

var actionNames = [...]string{"kill9", "term", "pause", "isolate", "split-minority", "split-majority",
	"cut-from", "cut-to", "restart", "resume", "heal", "heal-all"}

func (a Action) String() string { return actionNames[a] }

// Target says which node an action hits, resolved when it runs.
type Target int

const (
	Leader   Target = iota // the node that is leader now (the only node of a single-node run)
	Follower               // a running node that is not the leader
)

func (t Target) String() string { return [...]string{"leader", "follower"}[t] }

// Step is one action, then a wait before the next.
type Step struct {
	Act    Action
	Target Target
	Mode   CutMode // for the partition actions
	Wait   time.Duration
}

func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Act.String())
	if s.Act < Restart {
		fmt.Fprintf(&b, "(%s", s.Target)
		if s.Act >= Isolate {
			fmt.Fprintf(&b, ",%s", s.Mode)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %v", s.Wait)
	return b.String()
}

// Schedule is a reproducible sequence of steps: the same seed and index
// give the same steps. It always ends with HealAll.
type Schedule struct {
	Seed  uint64
	Index int
	Steps []Step
}

func (s Schedule) String() string {
	parts := make([]string, len(s.Steps))
	for i, st := range s.Steps {
		parts[i] = st.String()
	}
	return fmt.Sprintf("#%d (seed %d): %s", s.Index, s.Seed, strings.Join(parts, "; "))
}

// Duration is the sum of the schedule's waits.
func (s Schedule) Duration() time.Duration {
	var d time.Duration
	for _, st := range s.Steps {
		d += st.Wait
	}
	return d
}

// Faults lists the fault actions a run of n nodes can take: a single node
// can only be killed, stopped and paused; partitions need peers.
func Faults(nodes int) []Action {
	if nodes == 1 {
		return []Action{Kill9, Pause, Term}
	}
	return []Action{Kill9, Pause, Isolate, SplitMin, SplitMaj, Kill9, CutFrom, CutTo, Term, Pause}
}

// Generate returns schedule index of the run with this seed on n nodes.
// The first fault of schedule i is Faults(n)[i % len], so consecutive
// schedules cover every kind; one or two random faults follow, and each
// fault is sometimes undone before the next. Waits are scaled by scale
// (1: a schedule lasts about 2-4 s).
func Generate(seed uint64, index, nodes int, scale float64) Schedule {
	r := rand.New(rand.NewPCG(seed, uint64(index)))
	faults := Faults(nodes)
	wait := func(lo, hi int) time.Duration {
		ms := lo + r.IntN(hi-lo+1)
		return time.Duration(float64(ms)*scale) * time.Millisecond
	}
	s := Schedule{Seed: seed, Index: index}
	n := 1 + r.IntN(3)
	for i := 0; i < n; i++ {
		act := faults[r.IntN(len(faults))]
		if i == 0 {
			act = faults[index%len(faults)]
		}
		st := Step{Act: act, Target: Leader, Mode: CutMode(r.IntN(2)), Wait: wait(300, 1200)}
		if nodes > 1 && (act == Kill9 || act == Pause || act == Term) && r.IntN(3) == 0 {
			st.Target = Follower
		}
		s.Steps = append(s.Steps, st)
		if r.IntN(2) == 0 { // undo it before the next fault
			s.Steps = append(s.Steps, Step{Act: undo(act), Wait: wait(200, 700)})
		}
	}
	s.Steps = append(s.Steps, Step{Act: HealAll, Wait: wait(300, 600)})
	return s
}

// undo is the action that ends fault a.
func undo(a Action) Action {
	switch a {
	case Kill9, Term:
		return Restart
	case Pause:
		return Resume
	}
	return Heal
}
