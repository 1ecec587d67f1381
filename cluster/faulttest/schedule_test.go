package faulttest

import (
	"reflect"
	"testing"
	"time"
)

func TestGenerateIsReproducibleAndCoversEveryFault(t *testing.T) {
	for _, nodes := range []int{1, 3, 5} {
		seen := map[Action]bool{}
		differs := false
		for i := 0; i < 20; i++ {
			s := Generate(42, i, nodes, 1)
			if again := Generate(42, i, nodes, 1); !reflect.DeepEqual(s, again) {
				t.Fatalf("seed 42 #%d gave %v then %v", i, s, again)
			}
			if !reflect.DeepEqual(s.Steps, Generate(43, i, nodes, 1).Steps) {
				differs = true
			}
			if last := s.Steps[len(s.Steps)-1]; last.Act != HealAll {
				t.Fatalf("%v does not end with heal-all", s)
			}
			if d := s.Duration(); d < 500*time.Millisecond || d > 6*time.Second {
				t.Fatalf("%v lasts %v", s, d)
			}
			for _, st := range s.Steps {
				seen[st.Act] = true
				if nodes == 1 && (st.Target != Leader || st.Act >= Isolate && st.Act <= CutTo) {
					t.Fatalf("single-node schedule %v has a step that needs peers", s)
				}
			}
		}
		for _, f := range Faults(nodes) {
			if !seen[f] {
				t.Errorf("%d nodes: 20 schedules never %v", nodes, f)
			}
		}
		if !differs {
			t.Errorf("%d nodes: seeds 42 and 43 give the same schedules", nodes)
		}
	}
}
