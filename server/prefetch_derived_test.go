package server

import (
	"slices"
	"strings"
	"testing"
)

// TestPrefetchDerivedHashes pipelines RL.CHECKs among other requests and
// checks, request by request, what prefetchAhead keeps for each RL.CHECK
// parsed ahead: its stage, and the hashes of exactly the keys it derives
// (kept from its slot stage to its record stage, in the slot of the
// lookahead that holds it), so that the records warmed are its own keys'.
func TestPrefetchDerivedHashes(t *testing.T) {
	s, c := newPathClient(t)
	pipeline := [][]string{
		{"RL.CHECK", "ip", "a", "user", "b"},
		{"RL.CHECK", "ip", "c"},
		{"RL.LIMIT", "k", "GCRA", "1", "1s"},
		{"RL.CHECK", "COST", "2", "user", "d", "tenant", "e", "ip", "f"},
		{"PING"},
		{"RL.CHECK", "tenant", "g"},
		{"RL.CHECK", "ip", "h", "user", "h"},
		{"GET", "x"},
	}
	var req strings.Builder
	for _, p := range pipeline {
		req.WriteString(encodeCommand(p...))
	}
	buf, err := c.rd.Space()
	if err != nil {
		t.Fatal(err)
	}
	c.rd.Advance(copy(buf, req.String()))
	db := s.dbs[c.db]
	wantHashes := func(args []string) []uint64 {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		_, keys := rlCheckKeys(bs, nil, nil)
		var hs []uint64
		for _, k := range keys {
			hs = append(hs, db.Hash(k))
		}
		return hs
	}
	for i := range pipeline {
		c.prefetchAhead()
		n := c.rd.Lookahead(3)
		for j := 0; j < n; j++ {
			p := pipeline[i+j]
			stage := c.rd.AheadStage(j)
			if p[0] != "RL.CHECK" {
				if stage == stageDerived || stage == stageDerivedSlot {
					t.Fatalf("request %d (%q), %d ahead: stage %d", i+j, p, j, stage)
				}
				continue
			}
			want := map[int]uint8{0: stageDerived, 1: stageDerived, 2: stageDerivedSlot}[j]
			if stage != want {
				t.Fatalf("request %d (%q), %d ahead: stage %d, want %d", i+j, p, j, stage, want)
			}
			if got := c.ahead.hashes[c.rd.AheadSlot(j)]; !slices.Equal(got, wantHashes(p)) {
				t.Fatalf("request %d (%q), %d ahead: hashes %x, want %x", i+j, p, j, got, wantHashes(p))
			}
		}
		args, ok, err := c.rd.Next(false)
		if !ok || err != nil || string(args[0]) != pipeline[i][0] {
			t.Fatalf("request %d: %q %v %v", i, args, ok, err)
		}
	}
}
