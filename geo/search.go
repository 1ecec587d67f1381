package geo

import "math"

// Shape is a search area around a centre: a circle (Radius) or, when
// Box, a rectangle (Width × Height); sizes are in the request's unit and
// Conversion turns them into metres.
type Shape struct {
	Longitude, Latitude float64
	Box                 bool
	Radius              float64
	Width, Height       float64
	Conversion          float64
}

// stepsByRadius is how coarse the cells of a search of rangeMeters around
// latitude may be (geohashEstimateStepsByRadius).
func stepsByRadius(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2 // the range is then inside the cells in most cases
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// boundingBox is the shape's box in degrees: min longitude, min latitude,
// max longitude, max latitude.
func (s *Shape) boundingBox() [4]float64 {
	height, width := s.Conversion*s.Radius, s.Conversion*s.Radius
	if s.Box {
		height, width = s.Conversion*(s.Height/2), s.Conversion*(s.Width/2)
	}
	latDelta := radDeg(height / EarthRadius)
	longDeltaTop := radDeg(width / EarthRadius / Cos(degRad(s.Latitude+latDelta)))
	longDeltaBottom := radDeg(width / EarthRadius / Cos(degRad(s.Latitude-latDelta)))
	var b [4]float64
	if s.Latitude < 0 { // the southern hemisphere: the bottom is widest
		b[0], b[2] = s.Longitude-longDeltaBottom, s.Longitude+longDeltaBottom
	} else {
		b[0], b[2] = s.Longitude-longDeltaTop, s.Longitude+longDeltaTop
	}
	b[1], b[3] = s.Latitude-latDelta, s.Latitude+latDelta
	return b
}

// Cells returns the cells a search of s scans, in Redis's order: the
// centre's, then north, south, east, west, north-east, north-west,
// south-east, south-west (empty ones left out, as are repeats of the cell
// scanned just before).
func (s *Shape) Cells() []Hash {
	bounds := s.boundingBox()
	minLon, minLat, maxLon, maxLat := bounds[0], bounds[1], bounds[2], bounds[3]
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	radius *= s.Conversion
	steps := stepsByRadius(radius, s.Latitude)
	hash, _ := Encode(WGS84Long, WGS84Lat, s.Longitude, s.Latitude, steps)
	n := neighbours(hash)
	area, _ := Decode(WGS84Long, WGS84Lat, hash)
	// A step coarser when the neighbours do not cover the box.
	north, _ := Decode(WGS84Long, WGS84Lat, n.North)
	south, _ := Decode(WGS84Long, WGS84Lat, n.South)
	east, _ := Decode(WGS84Long, WGS84Lat, n.East)
	west, _ := Decode(WGS84Long, WGS84Lat, n.West)
	if steps > 1 && (north.Lat.Max < maxLat || south.Lat.Min > minLat || east.Long.Max < maxLon || west.Long.Min > minLon) {
		steps--
		hash, _ = Encode(WGS84Long, WGS84Lat, s.Longitude, s.Latitude, steps)
		n = neighbours(hash)
		area, _ = Decode(WGS84Long, WGS84Lat, hash)
	}
	// Leave out the neighbours wholly outside the box.
	if steps >= 2 {
		if area.Lat.Min < minLat {
			n.South, n.SouthWest, n.SouthEast = Hash{}, Hash{}, Hash{}
		}
		if area.Lat.Max > maxLat {
			n.North, n.NorthEast, n.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Long.Min < minLon {
			n.West, n.SouthWest, n.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Long.Max > maxLon {
			n.East, n.SouthEast, n.NorthEast = Hash{}, Hash{}, Hash{}
		}
	}
	all := [9]Hash{hash, n.North, n.South, n.East, n.West, n.NorthEast, n.NorthWest, n.SouthEast, n.SouthWest}
	var out []Hash
	last := -1
	for i, h := range all {
		if h.IsZero() {
			continue
		}
		if last > 0 && h == all[last] {
			continue // the same cell as the one before (small areas near the poles)
		}
		out = append(out, h)
		last = i
	}
	return out
}

// ScoreRange is the range of stored scores inside cell h: [Min, Max).
func ScoreRange(h Hash) (lo, hi uint64) {
	lo = Align52(h)
	h.Bits++
	hi = Align52(h)
	return lo, hi
}

// Within reports whether the stored score's position lies in the shape,
// with its distance from the centre in metres.
func (s *Shape) Within(score float64) (longitude, latitude, dist float64, ok bool) {
	longitude, latitude = Position(score)
	dist = Distance(s.Longitude, s.Latitude, longitude, latitude)
	if !s.Box {
		return longitude, latitude, dist, dist <= s.Radius*s.Conversion
	}
	// Redis's rectangle test: the latitude distance, then the longitude
	// distance along the point's parallel; the reported distance is the
	// straight one from the centre.
	if LatDistance(latitude, s.Latitude) > s.Height*s.Conversion/2 {
		return longitude, latitude, dist, false
	}
	if Distance(longitude, latitude, s.Longitude, latitude) > s.Width*s.Conversion/2 {
		return longitude, latitude, dist, false
	}
	return longitude, latitude, dist, true
}
