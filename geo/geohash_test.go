package geo

import (
	"strconv"
	"testing"
)

// TestRedisValues: scores, positions and a distance redis-server 7.0.15
// gave for Palermo and Catania (GEOADD, ZSCORE, GEOPOS, GEODIST).
func TestRedisValues(t *testing.T) {
	cases := []struct {
		lon, lat float64
		score    uint64
		pos      [2]string
	}{
		{13.361389, 38.115556, 3479099956230698, [2]string{"13.36138933897018433", "38.11555639549629859"}},
		{15.087269, 37.502669, 3479447370796909, [2]string{}},
	}
	for _, c := range cases {
		score, ok := ScoreOf(c.lon, c.lat)
		if !ok || score != c.score {
			t.Errorf("ScoreOf(%v, %v) = %d, %v; Redis %d", c.lon, c.lat, score, ok, c.score)
		}
		if c.pos[0] == "" {
			continue
		}
		lon, lat := Position(float64(score))
		if got := [2]string{strconv.FormatFloat(lon, 'f', 17, 64), strconv.FormatFloat(lat, 'f', 17, 64)}; got != c.pos {
			t.Errorf("Position(%d) = %v; Redis %v", score, got, c.pos)
		}
	}
	lon1, lat1 := Position(3479099956230698)
	lon2, lat2 := Position(3479447370796909)
	if d := strconv.FormatFloat(Distance(lon1, lat1, lon2, lat2), 'f', 4, 64); d != "166274.1516" {
		t.Errorf("Distance = %s; Redis 166274.1516", d)
	}
	if _, ok := ScoreOf(0, 85.06); ok {
		t.Error("a latitude beyond 85.05112878 was encoded")
	}
	if lon, lat := Position(0); lon > -179.99 || lat > -85.05 {
		t.Errorf("Position(0) = %v, %v; Redis: the south-west corner", lon, lat)
	}
}

// TestNeighboursWrap: a cell's eight neighbours are distinct cells next to
// it, and moving east then west comes back.
func TestNeighboursWrap(t *testing.T) {
	h, _ := Encode(WGS84Long, WGS84Lat, 179.99, 10, 10)
	n := neighbours(h)
	back := n.East
	moveX(&back, -1)
	if back != h {
		t.Fatalf("east then west: %x, want %x", back.Bits, h.Bits)
	}
	seen := map[Hash]bool{h: true}
	for _, c := range []Hash{n.North, n.South, n.East, n.West, n.NorthEast, n.NorthWest, n.SouthEast, n.SouthWest} {
		if seen[c] {
			t.Fatalf("neighbour %x repeated", c.Bits)
		}
		seen[c] = true
	}
}
