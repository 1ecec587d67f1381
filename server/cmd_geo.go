package server

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/geo"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Geospatial commands on sorted sets whose scores are 52-bit geohashes
// (package geo), as Redis 7.0's geo.c: GEOADD is ZADD with computed scores,
// searches scan the centre's cell and its neighbours in Redis's order,
// filter by exact distance and sort (ASC, DESC, or ASC when COUNT is
// given) with the algorithms Redis's build uses, so that even equal
// distances come out in Redis's order. Distances use correctly rounded
// sin, cos and asin, as the C library computes them.
func geoCommands() []*Command {
	const (
		ro = command.Readonly
		rw = command.Write | command.DenyOOM
	)
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "geo"
		return c
	}
	store := func(c *Command) *Command { // GEORADIUS[BYMEMBER]: STORE names a second key
		c.Group, c.Locks = "geo", geoRadiusLocks
		return c
	}
	return []*Command{
		one(&Command{Name: "geoadd", Docs: "key:key condition=[NX|XX]@6.2.0 [CH]@6.2.0 data=(longitude:double latitude:double member:string)...", Arity: -5, Flags: rw | command.AddsKeys, Since: "3.2.0",
			Summary: "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", Handler: cmdGeoAdd}),
		one(&Command{Name: "geodist", Docs: "key:key member1:string member2:string [unit=(M|KM|FT|MI)]", Arity: -4, Flags: ro, Since: "3.2.0",
			Summary: "Returns the distance between two members of a geospatial index.", Handler: cmdGeoDist}),
		one(&Command{Name: "geohash", Docs: "key:key [member:string...]", Arity: -2, Flags: ro, Since: "3.2.0",
			Summary: "Returns members from a geospatial index as geohash strings.", Handler: cmdGeoHash}),
		one(&Command{Name: "geopos", Docs: "key:key [member:string...]", Arity: -2, Flags: ro, Since: "3.2.0",
			Summary: "Returns the longitude and latitude of members from a geospatial index.", Handler: cmdGeoPos}),
		store(&Command{Name: "georadius", Access: []command.KeyAccess{command.KeyRead, command.KeyWrite}, Docs: "key:key longitude:double latitude:double radius:double unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY]@6.2.0)] [order=(ASC|DESC)] [STORE key:key] [STOREDIST key:key]", Arity: -6, Flags: rw | command.AddsKeys, Since: "3.2.0",
			Summary: "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", Handler: func(x *Ctx) { geoSearch(x, 1, geoFromCoords) }}),
		store(&Command{Name: "georadiusbymember", Access: []command.KeyAccess{command.KeyRead, command.KeyWrite}, Docs: "key:key member:string radius:double unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY]@6.2.0)] [order=(ASC|DESC)] [STORE key:key] [STOREDIST key:key]", Arity: -5, Flags: rw | command.AddsKeys, Since: "3.2.0",
			Summary: "Queries a geospatial index for members within a distance from a member, optionally stores the result.", Handler: func(x *Ctx) { geoSearch(x, 1, geoFromMember) }}),
		one(&Command{Name: "georadius_ro", Docs: "key:key longitude:double latitude:double radius:double unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY]@6.2.0)] [order=(ASC|DESC)]", Arity: -6, Flags: ro, Since: "3.2.10",
			Summary: "Returns members from a geospatial index that are within a distance from a coordinate.", Handler: func(x *Ctx) { geoSearch(x, 1, geoFromCoords|geoNoStore) }}),
		one(&Command{Name: "georadiusbymember_ro", Docs: "key:key member:string radius:double unit=(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count-block=(COUNT count:integer [ANY]@6.2.0)] [order=(ASC|DESC)]", Arity: -5, Flags: ro, Since: "3.2.10",
			Summary: "Returns members from a geospatial index that are within a distance from a member.", Handler: func(x *Ctx) { geoSearch(x, 1, geoFromMember|geoNoStore) }}),
		one(&Command{Name: "geosearch", Docs: "key:key from=(FROMMEMBER member:string|FROMLONLAT longitude:double latitude:double) by=(circle=(BYRADIUS radius:double unit=(M|KM|FT|MI))|box=(BYBOX width:double height:double unit=(M|KM|FT|MI))) [order=(ASC|DESC)] [count-block=(COUNT count:integer [ANY])] [WITHCOORD] [WITHDIST] [WITHHASH]", Arity: -7, Flags: ro, Since: "6.2.0",
			Summary: "Queries a geospatial index for members inside an area of a box or a circle.", Handler: func(x *Ctx) { geoSearch(x, 1, geoSearchCmd) }}),
		{Name: "geosearchstore", Access: []command.KeyAccess{command.KeyWrite, command.KeyRead}, Docs: "destination:key source:key from=(FROMMEMBER member:string|FROMLONLAT longitude:double latitude:double) by=(circle=(BYRADIUS radius:double unit=(M|KM|FT|MI))|box=(BYBOX width:double height:double unit=(M|KM|FT|MI))) [order=(ASC|DESC)] [count-block=(COUNT count:integer [ANY])] [STOREDIST]", Arity: -8, Flags: rw | command.AddsKeys, Since: "6.2.0",
			FirstKey: 1, LastKey: 2, Step: 1, Group: "geo",
			Summary: "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", Handler: func(x *Ctx) { geoSearch(x, 2, geoSearchCmd|geoSearchStore) }},
	}
}

// geoRadiusLocks names GEORADIUS's key and the key of its STORE or
// STOREDIST option (the last one given, as the command reads them).
func geoRadiusLocks(args [][]byte, db, _ int, add func(int, []byte)) {
	add(db, args[1])
	for i := 2; i+1 < len(args); i++ {
		if isKeyword(args[i], "store") || isKeyword(args[i], "storedist") {
			add(db, args[i+1])
			i++
		}
	}
}

const (
	errGeoUnit      = "ERR unsupported unit provided. please use M, KM, FT, MI"
	errGeoMember    = "ERR could not decode requested zset member"
	errGeoCountZero = "ERR COUNT must be > 0"
)

// geoLonLat reads a longitude and a latitude as Redis does (strtod, then
// WGS84's limits); it replies the error and returns false.
func geoLonLat(x *Ctx, lon, lat []byte) (float64, float64, bool) {
	xy := [2]float64{}
	for i, b := range [2][]byte{lon, lat} {
		f, ok := coll.ParseScore(b)
		if !ok {
			x.w.Error(errNotFloat)
			return 0, 0, false
		}
		xy[i] = f
	}
	if xy[0] < geo.LongMin || xy[0] > geo.LongMax || xy[1] < geo.LatMin || xy[1] > geo.LatMax {
		x.w.Error("ERR invalid longitude,latitude pair " + cFloat(xy[0]) + "," + cFloat(xy[1]))
		return 0, 0, false
	}
	return xy[0], xy[1], true
}

// cFloat is C's "%f".
func cFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// geoUnit is a unit's size in metres, or -1 after replying the error.
func geoUnit(x *Ctx, u []byte) float64 {
	switch {
	case isKeyword(u, "m"):
		return 1
	case isKeyword(u, "km"):
		return 1000
	case isKeyword(u, "ft"):
		return 0.3048
	case isKeyword(u, "mi"):
		return 1609.34
	}
	x.w.Error(errGeoUnit)
	return -1
}

// geoPositive reads a radius, width or height: errMsg when it is no
// number, Redis's negative error when below 0.
func geoPositive(x *Ctx, b []byte, errMsg, negMsg string) (float64, bool) {
	f, ok := coll.ParseScore(b)
	if !ok {
		x.w.Error(errMsg)
		return 0, false
	}
	if f < 0 {
		x.w.Error(negMsg)
		return 0, false
	}
	return f, true
}

// geoDistance formats a distance (never negative) as Redis's
// fixedpoint_d2string with four decimals: rounded to the nearest (even)
// ten-thousandth.
func geoDistance(d float64) []byte {
	v := int64(math.RoundToEven(d * 10000))
	return fmt.Appendf(nil, "%d.%04d", v/10000, v%10000)
}

// geoHuman writes a coordinate as Redis's addReplyHumanLongDouble does.
func geoHuman(x *Ctx, f float64) {
	x.w.DoubleText(humanDecimal(strconv.AppendFloat(nil, f, 'f', 17, 64)))
}

// cmdGeoAdd is GEOADD key [NX|XX] [CH] longitude latitude member [...]:
// ZADD with each position's 52-bit hash as the score.
func cmdGeoAdd(x *Ctx) {
	args := x.args
	i := 2
	nx, xx := false, false
opts:
	for ; i < len(args); i++ {
		switch {
		case isKeyword(args[i], "nx"):
			nx = true
		case isKeyword(args[i], "xx"):
			xx = true
		case isKeyword(args[i], "ch"):
		default:
			break opts
		}
	}
	if (len(args)-i)%3 != 0 || nx && xx {
		x.w.Error(errSyntax)
		return
	}
	zargs := make([][]byte, 0, i+2*(len(args)-i)/3)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:i]...)
	for j := i; j < len(args); j += 3 {
		lon, lat, ok := geoLonLat(x, args[j], args[j+1])
		if !ok {
			return
		}
		score, _ := geo.ScoreOf(lon, lat)
		zargs = append(zargs, strconv.AppendUint(nil, score, 10), args[j+2])
	}
	x.args = zargs
	cmdZAdd(x)
	x.args = args
}

// geoScore is a member's score, if the key and member exist.
func geoScore(z *coll.ZSet, member []byte) (float64, bool) {
	if z == nil {
		return 0, false
	}
	return z.Score(member)
}

// geoMembers answers GEOPOS and GEOHASH key [member ...]: one reply per
// member, at its position (each), or missing for a member not there.
func geoMembers(x *Ctx, missing func(), each func(lon, lat float64)) {
	z, _, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	x.w.Array(len(x.args) - 2)
	for _, m := range x.args[2:] {
		if score, found := geoScore(z, m); found {
			each(geo.Position(score))
		} else {
			missing()
		}
	}
}

// cmdGeoPos is GEOPOS key [member ...].
func cmdGeoPos(x *Ctx) {
	geoMembers(x, x.w.NullArray, func(lon, lat float64) {
		x.w.Array(2)
		geoHuman(x, lon)
		geoHuman(x, lat)
	})
}

// cmdGeoHash is GEOHASH key [member ...]: each position re-encoded on
// ±90° of latitude, as the standard 11-character geohash.
func cmdGeoHash(x *Ctx) {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	geoMembers(x, x.w.Null, func(lon, lat float64) {
		h, _ := geo.Encode(geo.Range{Min: -180, Max: 180}, geo.Range{Min: -90, Max: 90}, lon, lat, 26)
		var buf [11]byte
		for i := range 10 {
			buf[i] = alphabet[(h.Bits>>(52-uint(i+1)*5))&0x1f]
		}
		buf[10] = alphabet[0]
		x.w.Bulk(buf[:])
	})
}

// cmdGeoDist is GEODIST key member1 member2 [M|KM|FT|MI].
func cmdGeoDist(x *Ctx) {
	args := x.args
	toMeter := 1.0
	switch {
	case len(args) == 5:
		if toMeter = geoUnit(x, args[4]); toMeter < 0 {
			return
		}
	case len(args) > 5:
		x.w.Error(errSyntax)
		return
	}
	z, found, ok := x.readZSet(args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Null()
		return
	}
	s1, ok1 := z.Score(args[2])
	s2, ok2 := z.Score(args[3])
	if !ok1 || !ok2 {
		x.w.Null()
		return
	}
	lon1, lat1 := geo.Position(s1)
	lon2, lat2 := geo.Position(s2)
	x.w.Bulk(geoDistance(geo.Distance(lon1, lat1, lon2, lat2) / toMeter))
}

// Search variants (Redis's georadiusGeneric flags).
const (
	geoFromCoords  = 1 << iota // GEORADIUS: around a longitude and latitude
	geoFromMember              // GEORADIUSBYMEMBER: around a member
	geoNoStore                 // the _RO forms: no STORE
	geoSearchCmd               // GEOSEARCH's arguments
	geoSearchStore             // GEOSEARCHSTORE: STOREDIST only
)

// geoPoint is one result of a search.
type geoPoint struct {
	member              []byte
	longitude, latitude float64
	dist, score         float64
}

// geoSearch is Redis's georadiusGeneric: src is the position of the
// searched key.
func geoSearch(x *Ctx, src int, flags int) {
	args := x.args
	z, zfound, ok := x.readZSet(args[src])
	if !ok {
		return
	}
	var shape geo.Shape
	var storeKey []byte
	storeDist := false
	base := 0
	switch {
	case flags&geoFromCoords != 0:
		base = 6
		if shape.Longitude, shape.Latitude, ok = geoLonLat(x, args[2], args[3]); !ok {
			return
		}
		if !geoRadius(x, args[4:6], &shape) {
			return
		}
	case flags&geoFromMember != 0 && !zfound:
		base = 5
	case flags&geoFromMember != 0:
		base = 5
		lon, lat, ok := geoMember(z, args[2])
		if !ok {
			x.w.Error(errGeoMember)
			return
		}
		shape.Longitude, shape.Latitude = lon, lat
		if !geoRadius(x, args[3:5], &shape) {
			return
		}
	default: // GEOSEARCH, GEOSEARCHSTORE
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			storeKey = args[1]
		}
	}
	withDist, withHash, withCoords := false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	sortDir := 0 // 0 none, 1 ascending, -1 descending
	anyMatch := false
	count := int64(0)
	search, storing := flags&geoSearchCmd != 0, flags&geoNoStore == 0 && flags&geoSearchCmd == 0
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		a, left := rest[i], len(rest)-i-1
		switch {
		case isKeyword(a, "withdist"):
			withDist = true
		case isKeyword(a, "withhash"):
			withHash = true
		case isKeyword(a, "withcoord"):
			withCoords = true
		case isKeyword(a, "any"):
			anyMatch = true
		case isKeyword(a, "asc"):
			sortDir = 1
		case isKeyword(a, "desc"):
			sortDir = -1
		case isKeyword(a, "count") && left >= 1:
			n, ok := resp.ParseInt(rest[i+1])
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if n <= 0 {
				x.w.Error(errGeoCountZero)
				return
			}
			count = n
			i++
		case (isKeyword(a, "store") || isKeyword(a, "storedist")) && left >= 1 && storing:
			storeKey, storeDist = rest[i+1], isKeyword(a, "storedist")
			i++
		case isKeyword(a, "storedist") && flags&geoSearchStore != 0:
			storeDist = true
		case isKeyword(a, "frommember") && left >= 1 && search && !fromLoc:
			fromMember = true
			i++
			if !zfound {
				continue
			}
			lon, lat, ok := geoMember(z, rest[i])
			if !ok {
				x.w.Error(errGeoMember)
				return
			}
			shape.Longitude, shape.Latitude = lon, lat
		case isKeyword(a, "fromlonlat") && left >= 2 && search && !fromMember:
			if shape.Longitude, shape.Latitude, ok = geoLonLat(x, rest[i+1], rest[i+2]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case isKeyword(a, "byradius") && left >= 2 && search && !byBox:
			if !geoRadius(x, rest[i+1:i+3], &shape) {
				return
			}
			byRadius = true
			i += 2
		case isKeyword(a, "bybox") && left >= 3 && search && !byRadius:
			w, ok := geoPositive(x, rest[i+1], "ERR need numeric width", "ERR height or width cannot be negative")
			if !ok {
				return
			}
			h, ok := geoPositive(x, rest[i+2], "ERR need numeric height", "ERR height or width cannot be negative")
			if !ok {
				return
			}
			conv := geoUnit(x, rest[i+3])
			if conv < 0 {
				return
			}
			shape.Box, shape.Width, shape.Height, shape.Conversion = true, w, h, conv
			byBox = true
			i += 3
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	switch {
	case storeKey != nil && (withDist || withHash || withCoords):
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		x.w.Error("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return
	case search && !(fromMember || fromLoc):
		x.w.Error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return
	case search && !(byRadius || byBox):
		x.w.Error("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return
	case anyMatch && count == 0:
		x.w.Error("ERR the ANY argument requires COUNT argument")
		return
	}
	if !zfound {
		if storeKey != nil {
			x.del(storeKey)
			x.w.Int(0)
		} else {
			x.w.Array(0)
		}
		return
	}
	if count != 0 && sortDir == 0 && !anyMatch {
		sortDir = 1
	}
	limit := int64(0)
	if anyMatch {
		limit = count
	}
	points := geoCollect(z, &shape, limit)
	if len(points) == 0 && storeKey == nil {
		x.w.Array(0)
		return
	}
	if sortDir != 0 {
		byDist := func(a, b geoPoint) int {
			c := 0
			switch {
			case a.dist > b.dist:
				c = 1
			case a.dist < b.dist:
				c = -1
			}
			return c * sortDir
		}
		// As Redis: all of them with the C library's qsort (a stable merge
		// sort in glibc), the first COUNT with its own partial quicksort,
		// which orders ties its own way.
		if count != 0 && int64(len(points)) > count {
			geo.PartialSort(points, byDist, 0, int(count)-1)
		} else {
			slices.SortStableFunc(points, byDist)
		}
	}
	if count != 0 && int64(len(points)) > count {
		points = points[:count]
	}
	for i := range points {
		points[i].dist /= shape.Conversion
	}
	if storeKey != nil {
		v := newZSetOf(len(points), func(add func([]byte, float64)) {
			for _, p := range points {
				if storeDist {
					add(p.member, p.dist)
				} else {
					add(p.member, p.score)
				}
			}
		})
		x.storeValue(storeKey, shards.KindZSet, v)
		x.w.Int(int64(len(points)))
		return
	}
	extra := 0
	for _, on := range []bool{withDist, withCoords, withHash} {
		if on {
			extra++
		}
	}
	x.w.Array(len(points))
	for _, p := range points {
		if extra > 0 {
			x.w.Array(extra + 1)
		}
		x.w.Bulk(p.member)
		if withDist {
			x.w.Bulk(geoDistance(p.dist))
		}
		if withHash {
			x.w.Int(geo.CInt64(p.score))
		}
		if withCoords {
			x.w.Array(2)
			geoHuman(x, p.longitude)
			geoHuman(x, p.latitude)
		}
	}
}

// geoRadius reads "radius unit" into shape (a circle).
func geoRadius(x *Ctx, a [][]byte, shape *geo.Shape) bool {
	r, ok := geoPositive(x, a[0], "ERR need numeric radius", "ERR radius cannot be negative")
	if !ok {
		return false
	}
	conv := geoUnit(x, a[1])
	if conv < 0 {
		return false
	}
	shape.Box, shape.Radius, shape.Conversion = false, r, conv
	return true
}

// geoMember is a member's position.
func geoMember(z *coll.ZSet, member []byte) (lon, lat float64, ok bool) {
	score, ok := z.Score(member)
	if ok {
		lon, lat = geo.Position(score)
	}
	return lon, lat, ok
}

// geoCollect scans the search's cells in order, each by score, keeping
// the points inside the shape; with limit (ANY), it stops once it has as
// many.
func geoCollect(z *coll.ZSet, shape *geo.Shape, limit int64) []geoPoint {
	var points []geoPoint
	for _, cell := range shape.Cells() {
		if limit > 0 && int64(len(points)) >= limit {
			break
		}
		lo, hi := geo.ScoreRange(cell)
		r := coll.ScoreRange{Min: float64(lo), Max: float64(hi), MaxEx: true}
		from, to := z.ScoreRanks(r) // [from, to)
		if from >= to {
			continue
		}
		z.Walk(from, to-from, false, func(member []byte, score float64) bool {
			if lon, lat, dist, ok := shape.Within(score); ok {
				points = append(points, geoPoint{member: bytes.Clone(member), longitude: lon, latitude: lat, dist: dist, score: score})
			}
			return limit == 0 || int64(len(points)) < limit
		})
	}
	return points
}
