package server

import (
	"errors"
	"syscall"
	"testing"
)

// fakeFDLimit is an open files limit for fitFDLimit: raising the hard
// limit needs privilege, as on Linux.
type fakeFDLimit struct {
	cur, max   uint64
	privileged bool
	getErr     error
}

func (f *fakeFDLimit) get() (uint64, uint64, error) { return f.cur, f.max, f.getErr }

func (f *fakeFDLimit) set(cur, max uint64) error {
	if cur > max || (max > f.max && !f.privileged) {
		return syscall.EPERM
	}
	f.cur, f.max = cur, max
	return nil
}

func TestFitFDLimit(t *testing.T) {
	cases := []struct {
		name        string
		lim         fakeFDLimit
		clients     int
		wantClients int
		wantCur     uint64
		wantErr     bool
	}{
		{"enough", fakeFDLimit{cur: 20000, max: 20000}, 10000, 10000, 20000, false},
		{"raised to fit", fakeFDLimit{cur: 1024, max: 20000}, 10000, 10000, 10032, false},
		{"raised past hard when privileged", fakeFDLimit{cur: 1024, max: 4096, privileged: true}, 10000, 10000, 10032, false},
		{"raised to hard, lowered", fakeFDLimit{cur: 1024, max: 4096}, 10000, 4064, 4096, true},
		{"at hard, lowered", fakeFDLimit{cur: 200, max: 200}, 10000, 168, 200, true},
		{"too low to start", fakeFDLimit{cur: 32, max: 32}, 10000, 0, 32, true},
		{"unreadable: 1024", fakeFDLimit{cur: 5, max: 5, getErr: errors.New("no")}, 10000, 992, 5, true},
		{"unreadable, few clients", fakeFDLimit{getErr: errors.New("no")}, 100, 100, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := c.lim
			fit := fitFDLimit(&lim, c.clients)
			if fit.clients != c.wantClients || lim.cur != c.wantCur || (fit.err != nil) != c.wantErr {
				t.Fatalf("clients %d, limit %d, err %v; want %d, %d, err %v",
					fit.clients, lim.cur, fit.err, c.wantClients, c.wantCur, c.wantErr)
			}
		})
	}
	if fit := fitFDLimit(nil, 10000); fit.clients != 10000 || fit.err != nil {
		t.Fatalf("no limiter: %+v", fit)
	}
}
