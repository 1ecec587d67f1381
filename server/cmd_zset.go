package server

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Sorted-set errors, Redis's texts.
const (
	errZAddXXNX     = "ERR XX and NX options at the same time are not compatible"
	errZAddGTLTNX   = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZAddIncrPair = "ERR INCR option supports a single increment-element pair"
	errScoreNaN     = "ERR resulting score is not a number (NaN)"
	errMinMaxFloat  = "ERR min or max is not a float"
	errMinMaxLex    = "ERR min or max not valid string range item"
	errLimitRank    = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errScoresLex    = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	errPositive     = "ERR value is out of range, must be positive"
	errOutOfRange   = "ERR value is out of range"
)

func zsetCommands() []*Command {
	const (
		rwFast = command.Write | command.DenyOOM | command.AddsKeys | command.Fast
		wFast  = command.Write | command.Fast
		roFast = command.Readonly | command.Fast
		ro     = command.Readonly
		w      = command.Write
	)
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "sorted-set"
		return c
	}
	return []*Command{
		one(&Command{Name: "zadd", Docs: "key:key condition=[NX|XX]@3.0.2 comparison=[GT|LT]@6.2.0 [change=CH]@3.0.2 [increment=INCR]@3.0.2 score_member=(score:double member:string)...", Complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.", Arity: -4, Flags: rwFast, Since: "1.2.0",
			Summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", Handler: cmdZAdd}),
		one(&Command{Name: "zincrby", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key increment:integer member:string", Arity: 4, Flags: rwFast, Since: "1.2.0",
			Summary: "Increments the score of a member in a sorted set.", Handler: cmdZIncrBy}),
		one(&Command{Name: "zrem", Docs: "key:key member:string...", Arity: -3, Flags: wFast, Since: "1.2.0",
			Summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", Handler: cmdZRem}),
		one(&Command{Name: "zscore", Docs: "key:key member:string", Arity: 3, Flags: roFast, Since: "1.2.0",
			Summary: "Returns the score of a member in a sorted set.", Handler: cmdZScore}),
		one(&Command{Name: "zmscore", Docs: "key:key member:string...", Arity: -3, Flags: roFast, Since: "6.2.0",
			Summary: "Returns the score of one or more members in a sorted set.", Handler: cmdZMScore}),
		one(&Command{Name: "zcard", Access: []command.KeyAccess{command.KeyAny}, Docs: "key:key", Arity: 2, Flags: roFast, Since: "1.2.0",
			Summary: "Returns the number of members in a sorted set.", Handler: cmdZCard}),
		one(&Command{Name: "zcount", Docs: "key:key min:double max:double", Arity: 4, Flags: roFast, Since: "2.0.0",
			Summary: "Returns the count of members in a sorted set that have scores within a range.", Handler: cmdZCount}),
		one(&Command{Name: "zlexcount", Docs: "key:key min:string max:string", Arity: 4, Flags: roFast, Since: "2.8.9",
			Summary: "Returns the number of members in a sorted set within a lexicographical range.", Handler: cmdZLexCount}),
		one(&Command{Name: "zrank", Docs: "key:key member:string [withscore=WITHSCORE]@7.2.0", Arity: -3, Flags: roFast, Since: "2.0.0",
			Summary: "Returns the index of a member in a sorted set ordered by ascending scores.", Handler: cmdZRank}),
		one(&Command{Name: "zrevrank", Docs: "key:key member:string [withscore=WITHSCORE]@7.2.0", Arity: -3, Flags: roFast, Since: "2.0.0",
			Summary: "Returns the index of a member in a sorted set ordered by descending scores.", Handler: cmdZRank}),
		one(&Command{Name: "zrange", Docs: "key:key start:string stop:string sortby=[BYSCORE|BYLEX]@6.2.0 [rev=REV]@6.2.0 [LIMIT offset:integer count:integer]@6.2.0 [withscores=WITHSCORES]", Arity: -4, Flags: ro, Since: "1.2.0",
			Summary: "Returns members in a sorted set within a range of indexes.", Handler: cmdZRange}),
		one(&Command{Name: "zrevrange", Docs: "key:key start:integer stop:integer [withscores=WITHSCORES]", Arity: -4, Flags: ro, Since: "1.2.0",
			Summary: "Returns members in a sorted set within a range of indexes in reverse order.", Handler: cmdZRange}),
		one(&Command{Name: "zrangebyscore", Docs: "key:key min:double max:double [withscores=WITHSCORES]@2.0.0 [LIMIT offset:integer count:integer]", Arity: -4, Flags: ro, Since: "1.0.5",
			Summary: "Returns members in a sorted set within a range of scores.", Handler: cmdZRange}),
		one(&Command{Name: "zrevrangebyscore", Docs: "key:key max:double min:double [withscores=WITHSCORES] [LIMIT offset:integer count:integer]", Arity: -4, Flags: ro, Since: "2.2.0",
			Summary: "Returns members in a sorted set within a range of scores in reverse order.", Handler: cmdZRange}),
		one(&Command{Name: "zrangebylex", Docs: "key:key min:string max:string [LIMIT offset:integer count:integer]", Arity: -4, Flags: ro, Since: "2.8.9",
			Summary: "Returns members in a sorted set within a lexicographical range.", Handler: cmdZRange}),
		one(&Command{Name: "zrevrangebylex", Docs: "key:key max:string min:string [LIMIT offset:integer count:integer]", Arity: -4, Flags: ro, Since: "2.8.9",
			Summary: "Returns members in a sorted set within a lexicographical range in reverse order.", Handler: cmdZRange}),
		{Name: "zrangestore", Access: []command.KeyAccess{command.KeyWrite, command.KeyRead}, Docs: "dst:key src:key min:string max:string sortby=[BYSCORE|BYLEX] [rev=REV] [LIMIT offset:integer count:integer]", Arity: -5, Flags: command.Write | command.DenyOOM | command.AddsKeys, FirstKey: 1, LastKey: 2, Step: 1,
			Group: "sorted-set", Since: "6.2.0",
			Summary: "Stores a range of members from sorted set in a key.", Handler: cmdZRange},
		one(&Command{Name: "zremrangebyscore", Docs: "key:key min:double max:double", Arity: 4, Flags: w, Since: "1.2.0",
			Summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", Handler: cmdZRemRange}),
		one(&Command{Name: "zremrangebyrank", Docs: "key:key start:integer stop:integer", Arity: 4, Flags: w, Since: "2.0.0",
			Summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", Handler: cmdZRemRange}),
		one(&Command{Name: "zremrangebylex", Docs: "key:key min:string max:string", Arity: 4, Flags: w, Since: "2.8.9",
			Summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", Handler: cmdZRemRange}),
		one(&Command{Name: "zpopmin", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key [count:integer]", Arity: -2, Flags: wFast, Since: "5.0.0",
			Summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Handler: cmdZPop}),
		one(&Command{Name: "zpopmax", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key [count:integer]", Arity: -2, Flags: wFast, Since: "5.0.0",
			Summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Handler: cmdZPop}),
		one(&Command{Name: "zscan", Docs: "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]", Arity: -3, Flags: ro, Since: "2.8.0",
			Summary: "Iterates over members and scores of a sorted set.", Handler: cmdZScan}),
		one(&Command{Name: "zrandmember", Docs: "key:key options=[count:integer [withscores=WITHSCORES]]", Arity: -2, Flags: ro, Since: "6.2.0",
			Summary: "Returns one or more random members from a sorted set.", Handler: cmdZRandMember}),
	}
}

// isRESP3 reports whether the client speaks RESP3.
func isRESP3(x *Ctx) bool { return x.c.proto.Load() == 3 }

// replyScore writes a score as Redis does: a RESP3 double, or a bulk
// string of %.17g ("inf", "-inf") in RESP2.
func replyScore(x *Ctx, f float64) {
	if isRESP3(x) {
		x.w.Double(f)
		return
	}
	var buf [32]byte
	x.w.Bulk(coll.AppendScore(buf[:0], f))
}

// pairsHeader starts a reply of n (member, score) pairs: an array of
// pairs in RESP3, a flat array in RESP2.
func pairsHeader(x *Ctx, n int) {
	if isRESP3(x) {
		x.w.Array(n)
		return
	}
	x.w.Array(2 * n)
}

// replyPair writes one pair of a pairsHeader reply.
func replyPair(x *Ctx, member []byte, score float64) {
	if isRESP3(x) {
		x.w.Array(2)
	}
	x.w.Bulk(member)
	replyScore(x, score)
}

// zaddFlags are ZADD's options.
type zaddFlags struct {
	nx, xx, gt, lt, ch, incr bool
}

// cmdZAdd is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...].
func cmdZAdd(x *Ctx) {
	var f zaddFlags
	i := 2
	for ; i < len(x.args); i++ {
		a := x.args[i]
		switch {
		case isKeyword(a, "nx"):
			f.nx = true
		case isKeyword(a, "xx"):
			f.xx = true
		case isKeyword(a, "gt"):
			f.gt = true
		case isKeyword(a, "lt"):
			f.lt = true
		case isKeyword(a, "ch"):
			f.ch = true
		case isKeyword(a, "incr"):
			f.incr = true
		default:
			goto elements
		}
	}
elements:
	pairs := x.args[i:]
	switch {
	case len(pairs) == 0 || len(pairs)%2 != 0:
		x.w.Error(errSyntax)
		return
	case f.nx && f.xx:
		x.w.Error(errZAddXXNX)
		return
	case f.gt && f.nx || f.lt && f.nx || f.gt && f.lt:
		x.w.Error(errZAddGTLTNX)
		return
	case f.incr && len(pairs) > 2:
		x.w.Error(errZAddIncrPair)
		return
	}
	for j := 0; j < len(pairs); j += 2 {
		if _, ok := coll.ParseScore(pairs[j]); !ok {
			x.w.Error(errNotFloat)
			return
		}
	}
	key := x.args[1]
	z, found, ok := x.readZSet(key)
	if !ok {
		return
	}
	if !f.nx && !f.xx && !f.gt && !f.lt && !f.incr && !f.ch {
		// The common case: every pair is applied as given.
		if n, ok := x.change(key, coll.OpZAdd, pairs); ok {
			x.w.Int(n)
		}
		return
	}
	if !found && f.xx {
		if f.incr {
			x.w.Null()
		} else {
			x.w.Int(0)
		}
		return
	}
	// Decide pair by pair against the set as the earlier pairs leave it.
	var pending map[string]float64
	current := func(m []byte) (float64, bool) {
		if s, ok := pending[string(m)]; ok {
			return s, true
		}
		if z == nil {
			return 0, false
		}
		return z.Score(m)
	}
	var ops [][]byte
	var updated int64
	var result float64
	processed := false
	for j := 0; j < len(pairs); j += 2 {
		score, _ := coll.ParseScore(pairs[j])
		m := pairs[j+1]
		cur, exists := current(m)
		if exists {
			if f.nx {
				continue
			}
			if f.incr {
				score += cur
				if math.IsNaN(score) {
					x.w.Error(errScoreNaN)
					return
				}
			}
			if f.lt && score >= cur || f.gt && score <= cur {
				continue
			}
			processed, result = true, score
			if score == cur {
				continue
			}
			updated++
		} else {
			if f.xx {
				continue
			}
			processed, result = true, score
		}
		s := pairs[j]
		if f.incr {
			s = strconv.AppendFloat(nil, score, 'g', -1, 64)
		}
		if pending == nil {
			pending = make(map[string]float64)
		}
		pending[string(m)] = score
		ops = append(ops, s, m)
	}
	var added int64
	if len(ops) > 0 {
		n, ok := x.change(key, coll.OpZAdd, ops)
		if !ok {
			return
		}
		added = n
	}
	switch {
	case f.incr && processed:
		replyScore(x, result)
	case f.incr:
		x.w.Null()
	case f.ch:
		x.w.Int(added + updated)
	default:
		x.w.Int(added)
	}
}

// cmdZIncrBy is ZINCRBY key increment member.
func cmdZIncrBy(x *Ctx) {
	incr, ok := coll.ParseScore(x.args[2])
	if !ok {
		x.w.Error(errNotFloat)
		return
	}
	key, m := x.args[1], x.args[3]
	z, found, ok := x.readZSet(key)
	if !ok {
		return
	}
	score := incr
	if found {
		if cur, ok := z.Score(m); ok {
			score += cur
			if math.IsNaN(score) {
				x.w.Error(errScoreNaN)
				return
			}
		}
	}
	var buf [32]byte
	if _, ok := x.change(key, coll.OpZAdd, [][]byte{strconv.AppendFloat(buf[:0], score, 'g', -1, 64), m}); ok {
		replyScore(x, score)
	}
}

// cmdZRem is ZREM key member [member ...].
func cmdZRem(x *Ctx) {
	_, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	if n, ok := x.change(x.args[1], coll.OpZRem, x.args[2:]); ok {
		x.w.Int(n)
	}
}

// cmdZScore is ZSCORE key member.
func cmdZScore(x *Ctx) {
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if found {
		if s, ok := z.Score(x.args[2]); ok {
			replyScore(x, s)
			return
		}
	}
	x.w.Null()
}

// cmdZMScore is ZMSCORE key member [member ...].
func cmdZMScore(x *Ctx) {
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	x.w.Array(len(x.args) - 2)
	for _, m := range x.args[2:] {
		if found {
			if s, ok := z.Score(m); ok {
				replyScore(x, s)
				continue
			}
		}
		x.w.Null()
	}
}

// cmdZCard is ZCARD key.
func cmdZCard(x *Ctx) {
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	x.w.Int(int64(z.Len()))
}

// cmdZCount is ZCOUNT key min max.
func cmdZCount(x *Ctx) {
	r, ok := coll.ParseScoreRange(x.args[2], x.args[3])
	if !ok {
		x.w.Error(errMinMaxFloat)
		return
	}
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	lo, hi := z.ScoreRanks(r)
	x.w.Int(int64(hi - lo))
}

// cmdZLexCount is ZLEXCOUNT key min max.
func cmdZLexCount(x *Ctx) {
	r, ok := coll.ParseLexRange(x.args[2], x.args[3])
	if !ok {
		x.w.Error(errMinMaxLex)
		return
	}
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	lo, hi := z.LexRanks(r)
	x.w.Int(int64(hi - lo))
}

// cmdZRank is ZRANK / ZREVRANK key member [WITHSCORE] (WITHSCORE as
// Redis 7.2).
func cmdZRank(x *Ctx) {
	withScore := false
	switch len(x.args) {
	case 3:
	case 4:
		if !isKeyword(x.args[3], "withscore") {
			x.w.Error(errSyntax)
			return
		}
		withScore = true
	default:
		x.w.Error(errSyntax)
		return
	}
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	rank, score := 0, 0.0
	if found {
		rank, score, found = z.Rank(x.args[2], x.cmd.Name == "zrevrank")
	}
	switch {
	case !found && withScore:
		x.w.NullArray()
	case !found:
		x.w.Null()
	case withScore:
		x.w.Array(2)
		x.w.Int(int64(rank))
		replyScore(x, score)
	default:
		x.w.Int(int64(rank))
	}
}

// zrangeSpec is a parsed ZRANGE-family request.
type zrangeSpec struct {
	by            byte // 'r' rank, 's' score, 'l' lex
	rev           bool
	withScores    bool
	offset, limit int64
	start, stop   int64
	score         coll.ScoreRange
	lex           coll.LexRange
}

// cmdZRange serves ZRANGE, ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE,
// ZRANGEBYLEX, ZREVRANGEBYLEX and ZRANGESTORE, as Redis's
// zrangeGenericCommand: options, then the range, then the key.
func cmdZRange(x *Ctx) {
	name := x.cmd.Name
	store := name == "zrangestore"
	base := 1 // position of the source key
	if store {
		base = 2
	}
	sp := zrangeSpec{limit: -1}
	var by byte // 0 until given
	dirSet := false
	switch name {
	case "zrevrange":
		sp.rev, dirSet = true, true
	case "zrangebyscore":
		by, dirSet = 's', true
	case "zrevrangebyscore":
		by, sp.rev, dirSet = 's', true, true
	case "zrangebylex":
		by, dirSet = 'l', true
	case "zrevrangebylex":
		by, sp.rev, dirSet = 'l', true, true
	}
	if name == "zrevrange" {
		by = 'r'
	}
	for j := base + 3; j < len(x.args); j++ {
		a := x.args[j]
		left := len(x.args) - j - 1
		switch {
		case !store && isKeyword(a, "withscores"):
			sp.withScores = true
		case isKeyword(a, "limit") && left >= 2:
			off, ok1 := resp.ParseInt(x.args[j+1])
			lim, ok2 := resp.ParseInt(x.args[j+2])
			if !ok1 || !ok2 {
				x.w.Error(errNotInt)
				return
			}
			sp.offset, sp.limit = off, lim
			j += 2
		case !dirSet && isKeyword(a, "rev"):
			sp.rev, dirSet = true, true
		case by == 0 && isKeyword(a, "bylex"):
			by = 'l'
		case by == 0 && isKeyword(a, "byscore"):
			by = 's'
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	if by == 0 {
		by = 'r'
	}
	sp.by = by
	if sp.limit != -1 && by == 'r' {
		x.w.Error(errLimitRank)
		return
	}
	if sp.withScores && by == 'l' {
		x.w.Error(errScoresLex)
		return
	}
	minArg, maxArg := x.args[base+1], x.args[base+2]
	if sp.rev && by != 'r' {
		minArg, maxArg = maxArg, minArg
	}
	switch by {
	case 'r':
		a, ok1 := resp.ParseInt(minArg)
		b, ok2 := resp.ParseInt(maxArg)
		if !ok1 || !ok2 {
			x.w.Error(errNotInt)
			return
		}
		sp.start, sp.stop = a, b
	case 's':
		r, ok := coll.ParseScoreRange(minArg, maxArg)
		if !ok {
			x.w.Error(errMinMaxFloat)
			return
		}
		sp.score = r
	case 'l':
		r, ok := coll.ParseLexRange(minArg, maxArg)
		if !ok {
			x.w.Error(errMinMaxLex)
			return
		}
		sp.lex = r
	}
	z, found, ok := x.readZSet(x.args[base])
	if !ok {
		return
	}
	start, count := 0, 0
	if found {
		start, count = sp.ranks(z)
	}
	if store {
		zrangeStore(x, z, start, count, sp.rev)
		return
	}
	if sp.withScores {
		pairsHeader(x, count)
	} else {
		x.w.Array(count)
	}
	if count == 0 {
		return
	}
	z.Walk(start, count, sp.rev, func(m []byte, s float64) bool {
		if sp.withScores {
			replyPair(x, m, s)
		} else {
			x.w.Bulk(m)
		}
		return true
	})
}

// ranks returns where the request's members start (a rank counted in the
// request's direction) and how many there are.
func (sp *zrangeSpec) ranks(z *coll.ZSet) (start, count int) {
	n := int64(z.Len())
	if sp.by == 'r' {
		a, b := sp.start, sp.stop
		if a < 0 {
			a += n
		}
		if b < 0 {
			b += n
		}
		a = max(a, 0)
		if a > b || a >= n {
			return 0, 0
		}
		b = min(b, n-1)
		return int(a), int(b - a + 1)
	}
	var lo, hi int
	if sp.by == 's' {
		lo, hi = z.ScoreRanks(sp.score)
	} else {
		lo, hi = z.LexRanks(sp.lex)
	}
	if hi <= lo || sp.offset < 0 || sp.offset >= int64(hi-lo) || sp.limit == 0 {
		return 0, 0
	}
	c := int64(hi-lo) - sp.offset
	if sp.limit > 0 {
		c = min(c, sp.limit)
	}
	if sp.rev {
		return int(n) - hi + int(sp.offset), int(c)
	}
	return lo + int(sp.offset), int(c)
}

// zrangeStore writes count members from start (in the request's
// direction) of z to the destination key as a new sorted set.
func zrangeStore(x *Ctx, z *coll.ZSet, start, count int, rev bool) {
	v := newZSetOf(count, func(add func(member []byte, score float64)) {
		z.Walk(start, count, rev, func(m []byte, s float64) bool {
			add(m, s)
			return true
		})
	})
	x.storeValue(x.args[1], shards.KindZSet, v)
	x.w.Int(int64(v.Len()))
}

// newZSetOf builds a sorted set from the n members and scores fill passes
// to add (copied), as a ZADD of them would, so that it has the encoding
// ZADD gives: Redis's for a stored result (ZRANGESTORE, ZUNIONSTORE...).
// The scores must not be NaN.
func newZSetOf(n int, fill func(add func(member []byte, score float64))) *coll.ZSet {
	return fillZSet(coll.NewZSet(), n, fill)
}

// fillZSet adds the n members fill passes to v (see newZSetOf).
func fillZSet(v *coll.ZSet, n int, fill func(add func(member []byte, score float64))) *coll.ZSet {
	if n == 0 {
		return v
	}
	args := make([][]byte, 0, 2*n)
	fill(func(m []byte, s float64) {
		args = append(args, strconv.AppendFloat(nil, s, 'g', -1, 64), append([]byte(nil), m...))
	})
	if _, _, err := coll.Apply(v, coll.OpZAdd, args); err != nil {
		panic(err) // no NaN: every score is valid
	}
	return v
}

// cmdZRemRange serves ZREMRANGEBYSCORE, ZREMRANGEBYRANK and
// ZREMRANGEBYLEX key min max.
func cmdZRemRange(x *Ctx) {
	key := x.args[1]
	var sr coll.ScoreRange
	var lr coll.LexRange
	var a, b int64
	switch x.cmd.Name {
	case "zremrangebyrank":
		var ok1, ok2 bool
		a, ok1 = resp.ParseInt(x.args[2])
		b, ok2 = resp.ParseInt(x.args[3])
		if !ok1 || !ok2 {
			x.w.Error(errNotInt)
			return
		}
	case "zremrangebyscore":
		r, ok := coll.ParseScoreRange(x.args[2], x.args[3])
		if !ok {
			x.w.Error(errMinMaxFloat)
			return
		}
		sr = r
	default:
		r, ok := coll.ParseLexRange(x.args[2], x.args[3])
		if !ok {
			x.w.Error(errMinMaxLex)
			return
		}
		lr = r
	}
	z, found, ok := x.readZSet(key)
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	var op coll.Op
	args := x.args[2:4]
	switch x.cmd.Name {
	case "zremrangebyrank":
		n := int64(z.Len())
		if a < 0 {
			a += n
		}
		if b < 0 {
			b += n
		}
		a = max(a, 0)
		if a > b || a >= n {
			x.w.Int(0)
			return
		}
		b = min(b, n-1)
		op = coll.OpZRemRangeByRank
		var ba, bb [20]byte
		args = [][]byte{strconv.AppendInt(ba[:0], a, 10), strconv.AppendInt(bb[:0], b, 10)}
	case "zremrangebyscore":
		if lo, hi := z.ScoreRanks(sr); hi <= lo {
			x.w.Int(0)
			return
		}
		op = coll.OpZRemRangeByScore
	default:
		if lo, hi := z.LexRanks(lr); hi <= lo {
			x.w.Int(0)
			return
		}
		op = coll.OpZRemRangeByLex
	}
	if n, ok := x.change(key, op, args); ok {
		x.w.Int(n)
	}
}

// cmdZPop serves ZPOPMIN and ZPOPMAX key [count].
func cmdZPop(x *Ctx) {
	if len(x.args) > 3 {
		x.w.Error(errSyntax)
		return
	}
	count, single := int64(1), len(x.args) == 2
	if !single {
		n, ok := resp.ParseInt(x.args[2])
		if !ok || n < 0 {
			x.w.Error(errPositive)
			return
		}
		count = n
	}
	key := x.args[1]
	z, found, ok := x.readZSet(key)
	if !ok {
		return
	}
	if !found || count == 0 {
		x.w.Array(0)
		return
	}
	n := int(min(count, int64(z.Len())))
	if single {
		x.w.Array(2)
	} else {
		pairsHeader(x, n)
	}
	popZSet(x, key, z, x.cmd.Name == "zpopmax", n, func(m []byte, s float64) {
		if single {
			x.w.Bulk(m)
			replyScore(x, s)
		} else {
			replyPair(x, m, s)
		}
	})
}

// popZSet removes the n (at most z.Len()) lowest-scoring members of the
// sorted set z at key, or the highest when fromMax, calling each for every
// one, in that order, first.
func popZSet(x *Ctx, key []byte, z *coll.ZSet, fromMax bool, n int, each func(m []byte, s float64)) {
	z.Walk(0, n, fromMax, func(m []byte, s float64) bool {
		each(m, s)
		return true
	})
	a, b := 0, n-1
	if fromMax {
		a, b = z.Len()-n, z.Len()-1
	}
	var ba, bb [20]byte
	x.change(key, coll.OpZRemRangeByRank, x.opArgs(x.opBytes(strconv.AppendInt(ba[:0], int64(a), 10)), x.opBytes(strconv.AppendInt(bb[:0], int64(b), 10))))
}

// cmdZScan is ZSCAN key cursor [MATCH pattern] [COUNT count]. Every
// member is returned in one step (cursor 0), as Redis does for a
// listpack; scores in Redis's text form.
func cmdZScan(x *Ctx) {
	if _, ok := parseScanCursor(x.args[2]); !ok {
		x.w.Error(errInvalidCursor)
		return
	}
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if !found {
		replyEmptyScan(x)
		return
	}
	pat, _, ok := scanOptions(x) // COUNT is a hint: every member goes in one reply
	if !ok {
		return
	}
	n := z.Len()
	if pat != nil {
		n = 0
		z.Each(func(m []byte, _ float64) bool {
			if globMatch(pat, m, false) {
				n++
			}
			return true
		})
	}
	x.w.Array(2)
	x.w.BulkString("0")
	x.w.Array(2 * n)
	var buf [32]byte
	z.Each(func(m []byte, s float64) bool {
		if pat == nil || globMatch(pat, m, false) {
			x.w.Bulk(m)
			x.w.Bulk(coll.AppendScoreString(buf[:0], s))
		}
		return true
	})
}

// cmdZRandMember is ZRANDMEMBER key [count [WITHSCORES]].
func cmdZRandMember(x *Ctx) {
	if len(x.args) == 2 {
		z, found, ok := x.readZSet(x.args[1])
		switch {
		case !ok:
		case !found:
			x.w.Null()
		default:
			z.Walk(rand.IntN(z.Len()), 1, false, func(m []byte, _ float64) bool {
				x.w.Bulk(m)
				return false
			})
		}
		return
	}
	count, ok := resp.ParseInt(x.args[2])
	if !ok {
		x.w.Error(errNotInt)
		return
	}
	if count == math.MinInt64 {
		x.w.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	if len(x.args) > 4 || len(x.args) == 4 && !isKeyword(x.args[3], "withscores") {
		x.w.Error(errSyntax)
		return
	}
	withScores := len(x.args) == 4
	if withScores && (count < -math.MaxInt64/2 || count > math.MaxInt64/2) {
		x.w.Error(errOutOfRange)
		return
	}
	z, found, ok := x.readZSet(x.args[1])
	if !ok {
		return
	}
	if !found || count == 0 {
		x.w.Array(0)
		return
	}
	reply := func(m []byte, s float64) {
		if withScores {
			replyPair(x, m, s)
		} else {
			x.w.Bulk(m)
		}
	}
	header := func(k int) {
		if withScores {
			pairsHeader(x, k)
		} else {
			x.w.Array(k)
		}
	}
	n := z.Len()
	if count < 0 { // repeats allowed
		k := int(-count)
		header(k)
		for ; k > 0; k-- {
			z.Walk(rand.IntN(n), 1, false, func(m []byte, s float64) bool {
				reply(m, s)
				return false
			})
		}
		return
	}
	if count >= int64(n) { // the whole set, highest first as Redis
		header(n)
		z.Walk(0, n, true, func(m []byte, s float64) bool {
			reply(m, s)
			return true
		})
		return
	}
	// Distinct ranks: a partial shuffle of 0..n-1.
	k := int(count)
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = i
	}
	for i := 0; i < k; i++ {
		j := i + rand.IntN(n-i)
		ranks[i], ranks[j] = ranks[j], ranks[i]
	}
	header(k)
	for _, r := range ranks[:k] {
		z.Walk(r, 1, false, func(m []byte, s float64) bool {
			reply(m, s)
			return false
		})
	}
}
