//go:build linux

package faulttest

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// apply runs one step of a schedule and describes what it did.
func (c *cluster) apply(st Step, r *rand.Rand) (string, error) {
	size := len(c.nodes)
	switch st.Act {
	case Kill9, Term, Pause:
		i := c.pick(st.Target, r)
		switch st.Act {
		case Kill9:
			c.nodes[i].kill9()
		case Term:
			c.nodes[i].term()
		default:
			c.nodes[i].pause()
		}
		return fmt.Sprintf("%v node %d", st.Act, i), nil
	case Isolate, SplitMin, SplitMaj, CutFrom, CutTo:
		if c.proxy == nil {
			return "", fmt.Errorf("%v needs a cluster", st.Act)
		}
		i := c.pick(st.Target, r)
		c.proxy.SetMode(st.Mode)
		var pairs [][2]int
		switch st.Act {
		case Isolate:
			c.proxy.Isolate(i, size)
		case SplitMin, SplitMaj:
			minority := c.minority(i, st.Act == SplitMin, r)
			c.proxy.Split(minority, complement(minority, size))
			return fmt.Sprintf("%v: split %v | %v (%v)", st.Act, minority, complement(minority, size), st.Mode), nil
		case CutFrom:
			for j := 0; j < size; j++ {
				if j != i {
					pairs = append(pairs, [2]int{i, j})
				}
			}
		case CutTo:
			for j := 0; j < size; j++ {
				if j != i {
					pairs = append(pairs, [2]int{j, i})
				}
			}
		}
		c.proxy.Cut(pairs...)
		return fmt.Sprintf("%v node %d (%v)", st.Act, i, st.Mode), nil
	case Restart:
		return c.restartDead()
	case Resume:
		return c.resumePaused(), nil
	case Heal:
		if c.proxy != nil {
			c.proxy.Heal()
		}
		return "heal", nil
	case HealAll:
		s := c.resumePaused()
		if c.proxy != nil {
			c.proxy.Heal()
		}
		s2, err := c.restartDead()
		return s + "; heal; " + s2, err
	}
	return "", fmt.Errorf("unknown action %d", st.Act)
}

// minority returns a minority of the nodes: with node i in it, or without.
func (c *cluster) minority(i int, with bool, r *rand.Rand) []int {
	size := len(c.nodes)
	m := max(1, (size-1)/2)
	var out []int
	if with {
		out = append(out, i)
	}
	for _, j := range r.Perm(size) {
		if len(out) == m {
			break
		}
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

func complement(set []int, size int) []int {
	in := map[int]bool{}
	for _, i := range set {
		in[i] = true
	}
	var out []int
	for i := 0; i < size; i++ {
		if !in[i] {
			out = append(out, i)
		}
	}
	return out
}

// restartDead starts every node that is down, on its directory, and waits
// until each answers PING.
func (c *cluster) restartDead() (string, error) {
	var started []int
	for i, n := range c.nodes {
		if n.alive() {
			continue
		}
		if err := n.start(); err != nil {
			return "", err
		}
		started = append(started, i)
	}
	for _, i := range started {
		if err := c.nodes[i].waitServing(30 * time.Second); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("restart %v", started), nil
}

func (c *cluster) resumePaused() string {
	var resumed []int
	for i, n := range c.nodes {
		if n.isPaused() {
			n.resume()
			resumed = append(resumed, i)
		}
	}
	return fmt.Sprintf("resume %v", resumed)
}
