package httplimit

import (
	"sync"
	"time"
)

// breaker is a circuit breaker around the calls to Turnstile: after
// failures consecutive failures it opens for cooldown, during which calls
// are not made (the limiter answers with its fail mode at once, instead of
// waiting for a timeout per request); then one call is let through
// (half-open): its success closes the breaker, its failure opens it again.
type breaker struct {
	failures int
	cooldown time.Duration
	now      func() time.Time

	mu       sync.Mutex
	fails    int       // consecutive failures
	openTill time.Time // zero: closed
	probing  bool      // a half-open trial call is out
}

// allow tells whether a call may be made now.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.openTill.IsZero() {
		return true
	}
	if b.now().Before(b.openTill) || b.probing {
		return false
	}
	b.probing = true // half-open: this call is the trial
	return true
}

// done records a call's outcome.
func (b *breaker) done(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	if ok {
		b.fails, b.openTill = 0, time.Time{}
		return
	}
	b.fails++
	if b.fails >= b.failures || !b.openTill.IsZero() {
		b.openTill = b.now().Add(b.cooldown)
	}
}

// open tells whether the breaker is open (for Result and metrics).
func (b *breaker) open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.openTill.IsZero()
}
