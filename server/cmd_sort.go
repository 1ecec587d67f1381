package server

import (
	"bytes"
	"math"
	"slices"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/geo"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern
// ...]] [ASC|DESC] [ALPHA] [STORE destination], and SORT_RO (no STORE), as
// Redis 7.0's sort.c:
//
//   - the elements of a list, set or sorted set (a missing key is an empty
//     list) are sorted as numbers (C's strtod over the whole value; ties by
//     the elements' bytes) or, with ALPHA, as strings;
//   - BY pattern sorts by the value of the key the pattern names for each
//     element ("*" replaced by the element; "key->field" reads a hash
//     field; a missing key or field sorts as 0, or first with ALPHA); a
//     pattern without "*" (BY nosort) does not sort: a list or sorted set
//     keeps its order (LIMIT and DESC applied to it), a set is sorted ALPHA
//     when the result is stored or the caller is a script;
//   - GET pattern replies the named values instead of the elements ("#":
//     the element; a missing value is nil, "" when stored);
//   - LIMIT with BY sorts partially (Redis's pqsort, geo.PartialSort), so
//     that equal sort keys come out in Redis's order; a full sort is stable,
//     as glibc's qsort (a merge sort) is;
//   - STORE writes the result as a list (deleting the destination when
//     empty) and replies its length.
//
// BY and GET patterns with "*" read keys the arguments do not name: such a
// call locks every shard (the row's AllShards); a user without access to
// every key may not use them, as in Redis.
func sortCommands() []*Command {
	return []*Command{
		{Name: "sort", Docs: "key:key [BY pattern:pattern] [LIMIT offset:integer count:integer] [GET pattern:pattern...] [order=(ASC|DESC)] [sorting=ALPHA] [STORE destination:key]",
			// Redis's key specs: the key, the keys the patterns read, the
			// destination; a call's named keys are the key and the
			// destination (sortLocks), so AccessOf says so.
			Access: []command.KeyAccess{command.KeyRead, command.KeyRead, command.KeyWrite}, AccessOf: sortAccess,
			Arity: -2, Flags: command.Write | command.DenyOOM | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0",
			Cats: command.CatSet | command.CatSortedSet | command.CatList | command.CatDangerous, NotCats: command.CatKeyspace,
			Locks: sortLocks, AllShards: sortReadsPatterns,
			Summary: "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", Handler: cmdSort},
		{Name: "sort_ro", Docs: "key:key [BY pattern:pattern] [LIMIT offset:integer count:integer] [GET pattern:pattern...] [order=(ASC|DESC)] [sorting=ALPHA]",
			Access: []command.KeyAccess{command.KeyRead}, Arity: -2, Flags: command.Readonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "7.0.0",
			Cats: command.CatSet | command.CatSortedSet | command.CatList | command.CatDangerous, NotCats: command.CatKeyspace,
			AllShards: sortReadsPatterns,
			Summary:   "Returns the sorted elements of a list, a set, or a sorted set.", Handler: cmdSort},
	}
}

// sortLocks names SORT's keys as Redis's sortGetKeys does: the key, and
// the destination of the last STORE (LIMIT's two arguments and GET's and
// BY's one are skipped).
func sortLocks(args [][]byte, db, _ int, add func(int, []byte)) {
	add(db, args[1])
	var store []byte
	for i := 2; i < len(args); i++ {
		switch {
		case isKeyword(args[i], "limit"):
			i += 2
		case isKeyword(args[i], "get"), isKeyword(args[i], "by"):
			i++
		case isKeyword(args[i], "store") && i+1 < len(args):
			store = args[i+1]
		}
	}
	if store != nil {
		add(db, store)
	}
}

// sortAccess is what a SORT call does with its i-th named key: reads the
// key, writes the destination.
func sortAccess(_ [][]byte, i int) command.KeyAccess {
	if i == 0 {
		return command.KeyRead
	}
	return command.KeyWrite
}

// sortReadsPatterns reports whether a BY or GET pattern of the call names
// other keys (holds a "*" and is not "#").
func sortReadsPatterns(args [][]byte) bool {
	for i := 2; i+1 < len(args); i++ {
		if (isKeyword(args[i], "by") || isKeyword(args[i], "get")) && bytes.IndexByte(args[i+1], '*') >= 0 {
			return true
		}
	}
	return false
}

// sortItem is one element and its sort key.
type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte // ALPHA with BY: the value sorted by (nil: none)
	found bool   // BY found a value
}

func cmdSort(x *Ctx) {
	a := x.args
	readonly := x.cmd.Name == "sort_ro"
	var desc, alpha, dontSort bool
	start, count := int64(0), int64(-1)
	var by, store []byte
	var gets [][]byte
	for j := 2; j < len(a); j++ {
		left := len(a) - j - 1
		switch o := a[j]; {
		case isKeyword(o, "asc"):
			desc = false
		case isKeyword(o, "desc"):
			desc = true
		case isKeyword(o, "alpha"):
			alpha = true
		case isKeyword(o, "limit") && left >= 2:
			s, ok1 := resp.ParseInt(a[j+1])
			c, ok2 := resp.ParseInt(a[j+2])
			if !ok1 || !ok2 {
				x.w.Error(errNotInt)
				return
			}
			start, count = s, c
			j += 2
		case !readonly && isKeyword(o, "store") && left >= 1:
			store = a[j+1]
			j++
		case isKeyword(o, "by") && left >= 1:
			by = a[j+1]
			if bytes.IndexByte(by, '*') < 0 {
				dontSort = true
			} else if !x.c.userOrDefault().get().allKeys {
				x.w.Error("ERR BY option of SORT denied due to insufficient ACL permissions.")
				return
			}
			j++
		case isKeyword(o, "get") && left >= 1:
			if !x.c.userOrDefault().get().allKeys {
				x.w.Error("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return
			}
			gets = append(gets, a[j+1])
			j++
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	e, found := x.get(a[1])
	if found && e.Kind != shards.KindList && e.Kind != shards.KindSet && e.Kind != shards.KindZSet {
		x.w.Error(errWrongType)
		return
	}
	if dontSort && found && e.Kind == shards.KindSet && (store != nil || x.c == x.s.scripts.host.fake) {
		dontSort, alpha, by = false, true, nil
	}
	// The elements, in the value's order.
	var items []sortItem
	if found {
		switch v := e.Obj.(type) {
		case *coll.List:
			v.Each(0, false, func(_ int, el []byte) bool {
				items = append(items, sortItem{elem: slices.Clone(el)})
				return true
			})
		case *coll.Set:
			v.Each(func(m []byte) bool {
				items = append(items, sortItem{elem: slices.Clone(m)})
				return true
			})
		case *coll.ZSet:
			v.Each(func(m []byte, _ float64) bool {
				items = append(items, sortItem{elem: slices.Clone(m)})
				return true
			})
		}
	}
	// The range, as Redis computes it.
	n := int64(len(items))
	lo := min(max(start, 0), n)
	count = min(max(count, -1), n)
	hi := n - 1
	if count >= 0 {
		hi = lo + count - 1
	}
	if lo >= n {
		lo, hi = n-1, n-2
	}
	hi = min(hi, n-1)
	if dontSort {
		if found && e.Kind != shards.KindSet && desc {
			slices.Reverse(items)
		}
	} else if ok := sortItems(x, items, by, alpha, desc, store != nil, lo, hi); !ok {
		x.w.Error("ERR One or more scores can't be converted into double")
		return
	}
	var out []sortItem
	if hi >= lo {
		out = items[lo : hi+1]
	}
	outLen := len(out)
	if len(gets) > 0 {
		outLen *= len(gets)
	}
	if store == nil {
		x.w.Array(outLen)
		for _, it := range out {
			if len(gets) == 0 {
				x.w.Bulk(it.elem)
			}
			for _, g := range gets {
				if v, ok := sortLookup(x, g, it.elem); ok {
					x.w.Bulk(v)
				} else {
					x.w.Null()
				}
			}
		}
		return
	}
	var elems [][]byte
	for _, it := range out {
		if len(gets) == 0 {
			elems = append(elems, it.elem)
		}
		for _, g := range gets {
			v, _ := sortLookup(x, g, it.elem)
			elems = append(elems, slices.Clone(v))
		}
	}
	l := coll.NewList()
	if len(elems) > 0 {
		if _, _, err := coll.Apply(l, coll.OpRPush, elems); err != nil {
			panic(err) // RPUSH of any elements cannot fail
		}
	}
	x.storeValue(store, shards.KindList, l)
	x.w.Int(int64(outLen))
}

// sortItems sorts items in place by their sort keys; only positions lo to
// hi need be right when sorting BY a pattern with a LIMIT. ok is false
// when a numeric sort key is not a number.
func sortItems(x *Ctx, items []sortItem, by []byte, alpha, desc, store bool, lo, hi int64) (ok bool) {
	ok = true
	for i := range items {
		it := &items[i]
		val, found := it.elem, true
		if by != nil {
			val, found = sortLookup(x, by, it.elem)
		}
		it.found = found
		if !found {
			continue
		}
		if alpha {
			if by != nil {
				it.cmp = val
			}
			continue
		}
		f, good := sortScore(val)
		if !good {
			ok = false
		}
		it.score = f
	}
	if !ok {
		return false
	}
	cmp := func(p, q sortItem) int {
		var c int
		switch {
		case !alpha:
			switch {
			case p.score > q.score:
				c = 1
			case p.score < q.score:
				c = -1
			default:
				c = bytes.Compare(p.elem, q.elem)
			}
		case by != nil:
			switch {
			case !p.found || !q.found:
				c = boolInt(p.found) - boolInt(q.found)
			default:
				c = sortCollate(p.cmp, q.cmp, store)
			}
		default:
			c = sortCollate(p.elem, q.elem, store)
		}
		if desc {
			return -c
		}
		return c
	}
	if by != nil && (lo != 0 || hi != int64(len(items))-1) && len(items) > 0 {
		geo.PartialSort(items, cmp, int(max(lo, 0)), int(max(hi, lo)))
	} else {
		slices.SortStableFunc(items, cmp)
	}
	return true
}

// sortCollate compares as Redis's ALPHA sort: the bytes when the result is
// stored, else strcoll in the C locale (the strings up to a NUL byte).
func sortCollate(a, b []byte, store bool) int {
	if !store {
		a, b = cstr(a), cstr(b)
	}
	return bytes.Compare(a, b)
}

// sortScore reads a numeric sort key as SORT does: C's strtod over the
// value (up to a NUL byte), leading spaces allowed, an empty value 0; not
// a number when anything is left over, when strtod reports ERANGE (an
// overflow, or a result below the smallest normal double) or for NaN.
func sortScore(b []byte) (float64, bool) {
	b = cstr(b)
	if len(b) == 0 {
		return 0, true
	}
	t := bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(t) == 0 {
		return 0, false
	}
	f, ok := coll.ParseScore(t) // refuses an overflow; "inf" is not one
	if !ok {
		return 0, false
	}
	if f != 0 && math.Abs(f) < 0x1p-1022 {
		return 0, false // glibc's strtod: ERANGE for a subnormal result
	}
	return f, true
}

// sortLookup reads the value pattern names for elem, as Redis's
// lookupKeyByPattern: "#" is elem itself; a pattern without "*" names
// nothing; "*" is replaced by elem in the key (the first "*"), and a
// "->field" after it reads that hash field. Only a string (or, with a
// field, a hash) is found.
func sortLookup(x *Ctx, pattern, elem []byte) ([]byte, bool) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return elem, true
	}
	p := bytes.IndexByte(pattern, '*')
	if p < 0 {
		return nil, false
	}
	keyEnd, field := len(pattern), []byte(nil)
	if f := bytes.Index(pattern[p+1:], []byte("->")); f >= 0 && p+1+f+2 < len(pattern) {
		keyEnd, field = p+1+f, pattern[p+1+f+2:]
	}
	key := make([]byte, 0, keyEnd+len(elem))
	key = append(key, pattern[:p]...)
	key = append(key, elem...)
	key = append(key, pattern[p+1:keyEnd]...)
	e, found := x.get(key)
	switch {
	case !found:
		return nil, false
	case field != nil:
		h, ok := e.Obj.(*coll.Hash)
		if !ok {
			return nil, false
		}
		return h.Get(field)
	case e.IsString():
		return e.AppendString(nil), true
	}
	return nil, false
}
