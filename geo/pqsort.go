package geo

// PartialSort orders a by cmp so that positions lo to hi (inclusive) hold
// what a full sort would put there, as Redis's pqsort does: Bentley and
// McIlroy's quicksort (median of three, of nine above 40 elements;
// insertion sort below 7; equal keys gathered at both ends, then swapped
// to the middle) that recurses only into partitions overlapping [lo, hi].
// Elements that compare equal end in the same order as with Redis, which
// is why a search with COUNT uses it (the order of ties is the algorithm's).
func PartialSort[T any](a []T, cmp func(x, y T) int, lo, hi int) {
	pqsort(a, 0, len(a), cmp, lo, hi)
}

// pqsort sorts a[base : base+n].
func pqsort[T any](a []T, base, n int, cmp func(x, y T) int, lo, hi int) {
	for {
		if n < 7 {
			for m := base + 1; m < base+n; m++ {
				for l := m; l > base && cmp(a[l-1], a[l]) > 0; l-- {
					a[l], a[l-1] = a[l-1], a[l]
				}
			}
			return
		}
		m := base + n/2
		if n > 7 {
			l, r := base, base+n-1
			if n > 40 {
				d := n / 8
				l = med3(a, l, l+d, l+2*d, cmp)
				m = med3(a, m-d, m, m+d, cmp)
				r = med3(a, r-2*d, r-d, r, cmp)
			}
			m = med3(a, l, m, r, cmp)
		}
		a[base], a[m] = a[m], a[base]
		pa, pb := base+1, base+1
		pc, pd := base+n-1, base+n-1
		for {
			for pb <= pc {
				c := cmp(a[pb], a[base])
				if c > 0 {
					break
				}
				if c == 0 {
					a[pa], a[pb] = a[pb], a[pa]
					pa++
				}
				pb++
			}
			for pb <= pc {
				c := cmp(a[pc], a[base])
				if c < 0 {
					break
				}
				if c == 0 {
					a[pc], a[pd] = a[pd], a[pc]
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			a[pb], a[pc] = a[pc], a[pb]
			pb++
			pc--
		}
		pn := base + n
		r := min(pa-base, pb-pa)
		swapRun(a, base, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		swapRun(a, pb, pn-r, r)
		overlaps := func(from, count int) bool { // [from, from+count) meets [lo, hi]
			return !(lo < from && hi < from || lo >= from+count && hi >= from+count)
		}
		if r = pb - pa; r > 1 && overlaps(base, r) {
			pqsort(a, base, r, cmp, lo, hi)
		}
		r = pd - pc
		if r <= 1 || !overlaps(pn-r, r) {
			return
		}
		base, n = pn-r, r
	}
}

func med3[T any](a []T, i, j, k int, cmp func(x, y T) int) int {
	if cmp(a[i], a[j]) < 0 {
		switch {
		case cmp(a[j], a[k]) < 0:
			return j
		case cmp(a[i], a[k]) < 0:
			return k
		}
		return i
	}
	switch {
	case cmp(a[j], a[k]) > 0:
		return j
	case cmp(a[i], a[k]) < 0:
		return i
	}
	return k
}

// swapRun swaps the n elements from i with the n from j.
func swapRun[T any](a []T, i, j, n int) {
	for k := range n {
		a[i+k], a[j+k] = a[j+k], a[i+k]
	}
}
