// Package geo is Redis's geospatial index arithmetic: the 52-bit
// interleaved geohash a member's sorted-set score holds, its decoding to
// the cell's centre, the nine cells a search looks in, and the distance
// (haversine on Redis's earth radius). Every step follows Redis 7.0's
// geohash.c and geohash_helper.c operation for operation, so that scores,
// coordinates and search results are Redis's; products are rounded
// before they are added (no fused multiply-add, as in C).
package geo

import "math"

// The WGS84 ranges Redis indexes (latitudes beyond ±85.05112878 are
// refused: Web Mercator's limit).
const (
	LatMin  = -85.05112878
	LatMax  = 85.05112878
	LongMin = -180.0
	LongMax = 180.0
	// StepMax is the precision of stored scores: 26 bits per axis.
	StepMax = 26
	// EarthRadius is Redis's radius in metres.
	EarthRadius  = 6372797.560856
	mercatorMax  = 20037726.37
	degToRadCons = math.Pi / 180.0
)

// Hash is a geohash of step bits per axis, interleaved: longitude bits at
// the odd positions, latitude bits at the even ones.
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports the empty hash (a neighbour a search skips).
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Range is an interval of one axis.
type Range struct{ Min, Max float64 }

// Area is a hash with the cell it covers.
type Area struct {
	Hash      Hash
	Long, Lat Range
}

// WGS84 are the ranges of stored scores; GEOHASH encodes on ±90 instead.
var (
	WGS84Long = Range{LongMin, LongMax}
	WGS84Lat  = Range{LatMin, LatMax}
)

func interleave(xlo, ylo uint32) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF}
	s := [...]uint{1, 2, 4, 8, 16}
	x, y := uint64(xlo), uint64(ylo)
	for i := 4; i >= 0; i-- {
		x = (x | x<<s[i]) & b[i]
		y = (y | y<<s[i]) & b[i]
	}
	return x | y<<1
}

func deinterleave(v uint64) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF}
	s := [...]uint{0, 1, 2, 4, 8, 16}
	x, y := v, v>>1
	for i := range 6 {
		x = (x | x>>s[i]) & b[i]
		y = (y | y>>s[i]) & b[i]
	}
	return x | y<<32
}

// Encode hashes (longitude, latitude) in the ranges at step bits per axis;
// ok is false outside WGS84's limits or the ranges.
func Encode(long, lat Range, longitude, latitude float64, step uint8) (Hash, bool) {
	if step > 32 || step == 0 || lat.Min == 0 && lat.Max == 0 || long.Min == 0 && long.Max == 0 {
		return Hash{}, false
	}
	if longitude > LongMax || longitude < LongMin || latitude > LatMax || latitude < LatMin {
		return Hash{}, false
	}
	if latitude < lat.Min || latitude > lat.Max || longitude < long.Min || longitude > long.Max {
		return Hash{Step: step}, false
	}
	latOff := (latitude - lat.Min) / (lat.Max - lat.Min)
	longOff := (longitude - long.Min) / (long.Max - long.Min)
	latOff *= float64(uint64(1) << step)
	longOff *= float64(uint64(1) << step)
	return Hash{Bits: interleave(uint32(latOff), uint32(longOff)), Step: step}, true
}

// Decode returns the cell of h in the ranges; ok is false for the empty
// hash.
func Decode(long, lat Range, h Hash) (Area, bool) {
	if h.IsZero() || lat.Min == 0 && lat.Max == 0 || long.Min == 0 && long.Max == 0 {
		return Area{}, false
	}
	sep := deinterleave(h.Bits)
	latScale, longScale := lat.Max-lat.Min, long.Max-long.Min
	ilat, ilong := uint32(sep), uint32(sep>>32)
	div := float64(uint64(1) << h.Step)
	a := Area{Hash: h}
	a.Lat.Min = lat.Min + float64(float64(ilat)*1.0/div*latScale)
	a.Lat.Max = lat.Min + float64((float64(ilat)+1)*1.0/div*latScale)
	a.Long.Min = long.Min + float64(float64(ilong)*1.0/div*longScale)
	a.Long.Max = long.Min + float64((float64(ilong)+1)*1.0/div*longScale)
	return a, true
}

// Centre is the middle of the cell, clamped to WGS84's limits.
func (a Area) Centre() (longitude, latitude float64) {
	longitude = min(max((a.Long.Min+a.Long.Max)/2, LongMin), LongMax)
	latitude = min(max((a.Lat.Min+a.Lat.Max)/2, LatMin), LatMax)
	return longitude, latitude
}

// ScoreOf is the sorted-set score GEOADD stores for a position (the
// 52-bit hash); ok is false outside WGS84's limits.
func ScoreOf(longitude, latitude float64) (uint64, bool) {
	h, ok := Encode(WGS84Long, WGS84Lat, longitude, latitude, StepMax)
	if !ok {
		return 0, false
	}
	return Align52(h), true
}

// Align52 shifts h to the 52-bit scale of stored scores.
func Align52(h Hash) uint64 { return h.Bits << (52 - uint(h.Step)*2) }

// Position decodes a stored score to the centre of its cell. Any score
// decodes (converted as C converts it: 0 is the south-west corner), as in
// Redis, where decoding at step 26 never fails.
func Position(score float64) (longitude, latitude float64) {
	a, _ := Decode(WGS84Long, WGS84Lat, Hash{Bits: CUint64(score), Step: StepMax})
	return a.Centre()
}

// CInt64 converts f to an integer as C's (long long) cast does on
// x86-64 (cvttsd2si): truncated, and the most negative integer when f is
// out of range or NaN. Go leaves such conversions to the implementation.
func CInt64(f float64) int64 {
	if f != f || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// CUint64 converts f as C's (uint64_t) cast does on x86-64: below 2^63
// through CInt64 (so -1 gives all ones), above it by subtracting 2^63
// first (so 2^64, 1e300 and +inf give 0). Scores outside [0, 2^52) decode
// to what Redis decodes them to.
func CUint64(f float64) uint64 {
	if f != f || f < 1<<63 {
		return uint64(CInt64(f))
	}
	return uint64(CInt64(f-(1<<63))) ^ 1<<63
}

// Interleaved bit masks: longitude bits at the odd positions, latitude
// bits at the even ones.
const (
	longBits = 0xaaaaaaaaaaaaaaaa
	latBits  = 0x5555555555555555
)

// move steps h one cell along an axis (its bits in axis: longBits east
// for d > 0, west for d < 0; latBits north or south), wrapping around.
func move(h *Hash, d int, axis uint64) {
	if d == 0 {
		return
	}
	shift := 64 - uint(h.Step)*2
	v, other := h.Bits&axis, h.Bits&^axis
	zz := ^axis >> shift // the other axis's bits, filling the gaps of a carry
	if d > 0 {
		v = v + (zz + 1)
	} else {
		v = v | zz
		v = v - (zz + 1)
	}
	v &= axis >> shift
	h.Bits = v | other
}

func moveX(h *Hash, d int) { move(h, d, longBits) }
func moveY(h *Hash, d int) { move(h, d, latBits) }

// Neighbours are the eight cells around one.
type Neighbours struct {
	North, South, East, West, NorthEast, NorthWest, SouthEast, SouthWest Hash
}

func neighbours(h Hash) Neighbours {
	n := Neighbours{h, h, h, h, h, h, h, h}
	moveX(&n.East, 1)
	moveX(&n.West, -1)
	moveY(&n.South, -1)
	moveY(&n.North, 1)
	moveX(&n.NorthWest, -1)
	moveY(&n.NorthWest, 1)
	moveX(&n.NorthEast, 1)
	moveY(&n.NorthEast, 1)
	moveX(&n.SouthEast, 1)
	moveY(&n.SouthEast, -1)
	moveX(&n.SouthWest, -1)
	moveY(&n.SouthWest, -1)
	return n
}

func degRad(ang float64) float64 { return ang * degToRadCons }
func radDeg(ang float64) float64 { return ang / degToRadCons }

// LatDistance is the distance in metres between two latitudes.
func LatDistance(lat1, lat2 float64) float64 {
	return EarthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine distance in metres between two positions.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return LatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := Sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(Cos(lat1r)*Cos(lat2r))*v)*v)
	return 2.0 * EarthRadius * Asin(math.Sqrt(a))
}
