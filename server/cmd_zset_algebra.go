package server

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD: sorted-set
// algebra over sorted sets and sets (a set's members score 1), as Redis
// 7.0 computes it, so that replies, stored values and their encodings are
// Redis's:
//
//   - checks in Redis's order: numkeys, then the keys' types (WRONGTYPE
//     before any bad option), then the options;
//   - union and intersection visit the inputs from the smallest to the
//     largest and aggregate in that order, so that a SUM of floats rounds
//     as Redis's; inputs of one size keep their order (a stable sort: the
//     Redis 7.0 build the compat script runs against keeps it too);
//   - a weighted score that is NaN (inf times 0) counts as 0, and so does
//     a SUM of inf and -inf;
//   - a stored result is built like a ZADD of its members, so it is a
//     listpack exactly when Redis converts it to one (at most 128 members
//     of at most 64 bytes); an empty result deletes the destination.
func zsetAlgebraCommands() []*Command {
	const store = command.Write | command.DenyOOM | command.AddsKeys
	storeAccess := []command.KeyAccess{command.KeyWrite, command.KeyRead}
	return []*Command{
		{Name: "zunionstore", Access: storeAccess, Docs: "destination:key numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)]", Arity: -4, Flags: store, Group: "sorted-set", Since: "2.0.0", Locks: zstoreLocks,
			Summary: "Stores the union of sorted sets (and sets) in a key.", Handler: cmdZAlgebra},
		{Name: "zinterstore", Access: storeAccess, Docs: "destination:key numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)]", Arity: -4, Flags: store, Group: "sorted-set", Since: "2.0.0", Locks: zstoreLocks,
			Summary: "Stores the intersection of sorted sets (and sets) in a key.", Handler: cmdZAlgebra},
		{Name: "zdiffstore", Access: storeAccess, Docs: "destination:key numkeys:integer key:key...", Arity: -4, Flags: store, Group: "sorted-set", Since: "6.2.0", Locks: zstoreLocks,
			Summary: "Stores the members of the first sorted set that no other input holds in a key.", Handler: cmdZAlgebra},
		{Name: "zunion", Docs: "numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)] [withscores=WITHSCORES]", Arity: -3, Flags: command.Readonly, Group: "sorted-set", Since: "6.2.0", Locks: numKeysLocks(1),
			Summary: "Returns the union of sorted sets (and sets).", Handler: cmdZAlgebra},
		{Name: "zinter", Docs: "numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE aggregate=(SUM|MIN|MAX)] [withscores=WITHSCORES]", Arity: -3, Flags: command.Readonly, Group: "sorted-set", Since: "6.2.0", Locks: numKeysLocks(1),
			Summary: "Returns the intersection of sorted sets (and sets).", Handler: cmdZAlgebra},
		{Name: "zdiff", Docs: "numkeys:integer key:key... [withscores=WITHSCORES]", Arity: -3, Flags: command.Readonly, Group: "sorted-set", Since: "6.2.0", Locks: numKeysLocks(1),
			Summary: "Returns the members of the first sorted set that no other input holds.", Handler: cmdZAlgebra},
		{Name: "zintercard", Docs: "numkeys:integer key:key... [LIMIT limit:integer]", Arity: -3, Flags: command.Readonly, Group: "sorted-set", Since: "7.0.0", Locks: numKeysLocks(1),
			Summary: "Returns the number of members in the intersection of sorted sets (and sets).", Handler: cmdZAlgebra},
	}
}

// zstoreLocks names a STORE form's keys: the destination and the inputs
// (numkeys at 2, read as numKeysLocks does), none when numkeys is invalid
// (the command fails before using any), as Redis's COMMAND GETKEYS does.
func zstoreLocks(args [][]byte, db, _ int, add func(int, []byte)) {
	n := numKeysArg(args[2])
	if n < 1 || n > int64(len(args)-3) {
		return
	}
	// Redis names the keys by its key specs, destination first, when
	// numkeys is a strict integer; otherwise by its older key callback,
	// which reads numkeys with atoi and names the destination last.
	_, strict := resp.ParseInt(args[2])
	if strict {
		add(db, args[1])
	}
	for _, k := range args[3 : 3+n] {
		add(db, k)
	}
	if !strict {
		add(db, args[1])
	}
}

// Operations and aggregates.
const (
	zUnion = iota
	zInter
	zDiff
)

const (
	aggSum = iota
	aggMin
	aggMax
)

// zsrc is one input: a sorted set, a set, or nothing (a missing key).
type zsrc struct {
	z      *coll.ZSet
	s      *coll.Set
	weight float64
}

func (s *zsrc) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.s != nil:
		return s.s.Len()
	}
	return 0
}

// same reports whether s and o read one value (a key given twice).
func (s *zsrc) same(o *zsrc) bool {
	return (s.z != nil && s.z == o.z) || (s.s != nil && s.s == o.s)
}

// each calls fn for every member and score (a set's: 1) until it returns
// false; the member is valid only during the call.
func (s *zsrc) each(fn func(m []byte, score float64) bool) {
	switch {
	case s.z != nil:
		s.z.Each(fn)
	case s.s != nil:
		s.s.Each(func(m []byte) bool { return fn(m, 1) })
	}
}

// find returns member m's score.
func (s *zsrc) find(m []byte) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(m)
	case s.s != nil:
		return 1, s.s.IsMember(m)
	}
	return 0, false
}

// aggregate folds v into *t as Redis's zunionInterAggregate.
func aggregate(t *float64, v float64, agg int) {
	switch agg {
	case aggSum:
		*t += v
		if math.IsNaN(*t) {
			*t = 0
		}
	case aggMin:
		if v < *t {
			*t = v
		}
	case aggMax:
		if v > *t {
			*t = v
		}
	}
}

// zmember is one member of a result.
type zmember struct {
	m     string
	score float64
}

// cmdZAlgebra serves ZUNION, ZINTER, ZDIFF, ZUNIONSTORE, ZINTERSTORE,
// ZDIFFSTORE and ZINTERCARD.
func cmdZAlgebra(x *Ctx) {
	name := x.cmd.Name
	op := zUnion
	switch name {
	case "zinter", "zinterstore", "zintercard":
		op = zInter
	case "zdiff", "zdiffstore":
		op = zDiff
	}
	var dst []byte
	at := 1 // numkeys
	if name == "zunionstore" || name == "zinterstore" || name == "zdiffstore" {
		dst, at = x.args[1], 2
	}
	cardOnly := name == "zintercard"
	n, ok := resp.ParseInt(x.args[at])
	switch {
	case !ok:
		x.w.Error(errNotInt)
		return
	case n < 1:
		x.w.Error("ERR at least 1 input key is needed for '" + name + "' command")
		return
	case n > int64(len(x.args)-at-1):
		x.w.Error(errSyntax)
		return
	}
	src := make([]zsrc, n)
	for i, k := range x.args[at+1 : at+1+int(n)] {
		src[i].weight = 1
		e, found := x.get(k)
		switch {
		case !found:
		case e.Kind == shards.KindZSet:
			src[i].z = e.Obj.(*coll.ZSet)
		case e.Kind == shards.KindSet:
			src[i].s = e.Obj.(*coll.Set)
		default:
			x.w.Error(errWrongType)
			return
		}
	}
	agg, withScores, limit := aggSum, false, int64(0)
	for j := at + 1 + int(n); j < len(x.args); {
		a, left := x.args[j], len(x.args)-j
		switch {
		case op != zDiff && !cardOnly && left >= len(src)+1 && isKeyword(a, "weights"):
			j++
			for i := range src {
				w, ok := coll.ParseScore(x.args[j])
				if !ok {
					x.w.Error("ERR weight value is not a float")
					return
				}
				src[i].weight = w
				j++
			}
		case op != zDiff && !cardOnly && left >= 2 && isKeyword(a, "aggregate"):
			switch v := x.args[j+1]; {
			case isKeyword(v, "sum"):
				agg = aggSum
			case isKeyword(v, "min"):
				agg = aggMin
			case isKeyword(v, "max"):
				agg = aggMax
			default:
				x.w.Error(errSyntax)
				return
			}
			j += 2
		case dst == nil && !cardOnly && isKeyword(a, "withscores"):
			withScores = true
			j++
		case cardOnly && left >= 2 && isKeyword(a, "limit"):
			l, ok := resp.ParseInt(x.args[j+1])
			if !ok || l < 0 {
				x.w.Error("ERR LIMIT can't be negative")
				return
			}
			limit = l
			j += 2
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	if op != zDiff {
		slices.SortStableFunc(src, func(a, b zsrc) int { return cmp.Compare(a.len(), b.len()) })
	}
	if cardOnly {
		x.w.Int(zInterCard(src, limit))
		return
	}
	var out []zmember
	switch op {
	case zUnion:
		out = zUnionOf(src, agg)
	case zInter:
		out = zInterOf(src, agg)
	default:
		out = zDiffOf(src)
	}
	slices.SortFunc(out, func(a, b zmember) int { // a sorted set's order
		return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.m, b.m))
	})
	if dst != nil {
		// Redis builds the result as a skiplist and packs it if it fits:
		// a negative zero keeps its sign only in a result too big to pack.
		maxLen := 0
		for _, e := range out {
			maxLen = max(maxLen, len(e.m))
		}
		v := fillZSet(coll.NewZSetFor(len(out), maxLen), len(out), func(add func([]byte, float64)) {
			for _, e := range out {
				add([]byte(e.m), e.score) // never NaN (weighted, aggregate)
			}
		})
		x.storeValue(dst, shards.KindZSet, v)
		x.w.Int(int64(v.Len()))
		return
	}
	if withScores {
		pairsHeader(x, len(out))
		for _, e := range out {
			replyPair(x, []byte(e.m), e.score)
		}
		return
	}
	x.w.Array(len(out))
	for _, e := range out {
		x.w.BulkString(e.m)
	}
}

// weighted is a member's score times its input's weight, 0 when that is
// NaN (inf times 0).
func weighted(w, score float64) float64 {
	s := w * score
	if math.IsNaN(s) {
		return 0
	}
	return s
}

// zUnionOf aggregates every input's members, visiting the inputs in order.
func zUnionOf(src []zsrc, agg int) []zmember {
	at := map[string]int{}
	var out []zmember
	for i := range src {
		src[i].each(func(m []byte, score float64) bool {
			s := weighted(src[i].weight, score)
			if k, ok := at[string(m)]; ok {
				aggregate(&out[k].score, s, agg)
				return true
			}
			at[string(m)] = len(out)
			out = append(out, zmember{m: string(m), score: s})
			return true
		})
	}
	return out
}

// zInterOf keeps the members of the first (smallest) input that every
// other input holds, aggregating in the inputs' order.
func zInterOf(src []zsrc, agg int) []zmember {
	var out []zmember
	zInterEach(src, agg, func(m []byte, score float64) bool {
		out = append(out, zmember{m: string(m), score: score})
		return true
	})
	return out
}

// zInterEach calls fn with each member of the intersection and its
// aggregated score until fn returns false.
func zInterEach(src []zsrc, agg int, fn func(m []byte, score float64) bool) {
	if src[0].len() == 0 {
		return
	}
	src[0].each(func(m []byte, score0 float64) bool {
		score := weighted(src[0].weight, score0)
		for j := 1; j < len(src); j++ {
			v, ok := score0, true
			if !src[j].same(&src[0]) {
				v, ok = src[j].find(m)
			}
			if !ok {
				return true
			}
			aggregate(&score, v*src[j].weight, agg)
		}
		return fn(m, score)
	})
}

// zInterCard counts the intersection, stopping at limit (0: none).
func zInterCard(src []zsrc, limit int64) int64 {
	var card int64
	zInterEach(src, aggSum, func([]byte, float64) bool {
		card++
		return limit == 0 || card < limit
	})
	return card
}

// zDiffOf keeps the members of the first input that no other holds, with
// the first input's scores.
func zDiffOf(src []zsrc) []zmember {
	var out []zmember
	for j := 1; j < len(src); j++ {
		if src[j].same(&src[0]) {
			return nil
		}
	}
	src[0].each(func(m []byte, score float64) bool {
		for j := 1; j < len(src); j++ {
			if _, ok := src[j].find(m); ok {
				return true
			}
		}
		out = append(out, zmember{m: string(m), score: score})
		return true
	})
	return out
}
