// Package httplimit lets a Go service ask Turnstile before serving a
// request: a plain Allow(ctx, key) API and net/http middleware that
// answers 429 Too Many Requests the way the seed lessons describe (§7):
// Retry-After from the server's real figure (with optional jitter, so that
// clients told to wait do not all come back at once), the IETF
// RateLimit-Policy and RateLimit headers on every response, and a short
// problem+json body.
//
// It calls RL.LIMIT (one rule given in code) or RL.CHECK (named rules
// kept on the server), through go-redis. When Turnstile cannot be reached
// (a call fails or exceeds Timeout), the rule's fail mode decides: open
// lets the request through, closed refuses it with 503. A circuit breaker
// stops calling a server that keeps failing, for a cool-down, so that an
// outage costs each request nothing rather than a timeout.
//
// A Limiter is safe for concurrent use.
package httplimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rule says what to limit. Either give Algorithm, Limit and Period (the
// Limiter calls RL.LIMIT), or Policies, the ids of rules kept on the
// server (RL.CHECK checks them all at once with the same key value).
type Rule struct {
	Name      string        // the policy's name in the RateLimit headers (default "default")
	Algorithm string        // GCRA, FIXED, SLIDING or LOG
	Limit     int64         // requests per Period
	Period    time.Duration // whole milliseconds
	Burst     int64         // GCRA's bucket size (0: Limit)
	Policies  []string      // named rules for RL.CHECK instead of the above
	// FailClosed refuses requests (503) while Turnstile cannot be
	// reached; the default lets them through (fail open), for ordinary
	// APIs; use closed for OTP, payments and logins (seed §6).
	FailClosed bool
}

// Options tune a Limiter; the zero value of each field picks the default.
type Options struct {
	Prefix   string        // key prefix for RL.LIMIT (default "rl:")
	Timeout  time.Duration // per call to Turnstile (default 50 ms)
	Jitter   time.Duration // up to this much is added to Retry-After (default 0)
	Failures int           // consecutive failures that open the breaker (default 5)
	Cooldown time.Duration // how long the breaker stays open (default 1 s)
}

// Limiter checks requests against Turnstile.
type Limiter struct {
	rdb  redis.UniversalClient
	rule Rule
	opt  Options
	br   *breaker
}

// New returns a Limiter for rule on the given go-redis client.
func New(rdb redis.UniversalClient, rule Rule, opt Options) (*Limiter, error) {
	if rule.Name == "" {
		rule.Name = "default"
	}
	if len(rule.Policies) == 0 {
		if rule.Limit < 1 || rule.Period < time.Millisecond || rule.Period%time.Millisecond != 0 {
			return nil, errors.New("httplimit: a rule needs Limit >= 1 and Period in whole milliseconds, or Policies")
		}
		if rule.Algorithm == "" {
			rule.Algorithm = "GCRA"
		}
	}
	if opt.Prefix == "" {
		opt.Prefix = "rl:"
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 50 * time.Millisecond
	}
	if opt.Failures <= 0 {
		opt.Failures = 5
	}
	if opt.Cooldown <= 0 {
		opt.Cooldown = time.Second
	}
	return &Limiter{rdb: rdb, rule: rule, opt: opt, br: &breaker{failures: opt.Failures, cooldown: opt.Cooldown, now: time.Now}}, nil
}

// Result is one decision.
type Result struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter time.Duration // when denied: how long until a retry can succeed (-1: never)
	ResetAfter time.Duration // until the limit is fully available again
	Denier     string        // RL.CHECK: the named rule that denied
	// Unavailable is set when Turnstile could not be asked (error,
	// timeout or open breaker): Allowed then follows the fail mode.
	Unavailable bool
	Err         error
}

// Allow asks whether one request for key may proceed.
func (l *Limiter) Allow(ctx context.Context, key string) Result { return l.AllowN(ctx, key, 1) }

// AllowN asks whether a request costing n may proceed.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) Result {
	if !l.br.allow() {
		return l.unavailable(errors.New("httplimit: circuit breaker open"))
	}
	ctx, cancel := context.WithTimeout(ctx, l.opt.Timeout)
	defer cancel()
	var res Result
	var err error
	if len(l.rule.Policies) > 0 {
		res, err = l.check(ctx, key, n)
	} else {
		res, err = l.limit(ctx, key, n)
	}
	l.br.done(err == nil)
	if err != nil {
		return l.unavailable(err)
	}
	return res
}

func (l *Limiter) unavailable(err error) Result {
	return Result{Allowed: !l.rule.FailClosed, Limit: l.rule.Limit, RetryAfter: l.opt.Cooldown, Unavailable: true, Err: err}
}

func (l *Limiter) limit(ctx context.Context, key string, n int64) (Result, error) {
	args := []any{"RL.LIMIT", l.opt.Prefix + key, l.rule.Algorithm, l.rule.Limit, strconv.FormatInt(l.rule.Period.Milliseconds(), 10) + "ms", "COST", n}
	if l.rule.Burst > 0 {
		args = append(args, "BURST", l.rule.Burst)
	}
	v, err := l.rdb.Do(ctx, args...).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("httplimit: RL.LIMIT: %w", err)
	}
	if len(v) != 5 {
		return Result{}, fmt.Errorf("httplimit: RL.LIMIT replied %d fields", len(v))
	}
	return fromFields(v[0], v[1], v[2], v[3], v[4]), nil
}

func fromFields(allowed, limit, remaining, retryMs, resetMs int64) Result {
	retry := time.Duration(-1)
	if retryMs >= 0 {
		retry = time.Duration(retryMs) * time.Millisecond
	}
	return Result{Allowed: allowed == 1, Limit: limit, Remaining: remaining, RetryAfter: retry,
		ResetAfter: time.Duration(resetMs) * time.Millisecond}
}

func (l *Limiter) check(ctx context.Context, key string, n int64) (Result, error) {
	args := []any{"RL.CHECK", "COST", n}
	for _, p := range l.rule.Policies {
		args = append(args, p, key)
	}
	v, err := l.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return Result{}, fmt.Errorf("httplimit: RL.CHECK: %w", err)
	}
	if len(v) != 4 {
		return Result{}, fmt.Errorf("httplimit: RL.CHECK replied %d fields", len(v))
	}
	rules, _ := v[3].([]any)
	// The figures of the tightest rule: the denier, or the one with the
	// fewest remaining.
	denier, _ := v[1].(string)
	var best []any
	for _, r := range rules {
		f, _ := r.([]any)
		if len(f) != 7 {
			return Result{}, errors.New("httplimit: RL.CHECK: malformed rule figures")
		}
		if id, _ := f[0].(string); denier != "" && id == denier {
			best = f
			break
		}
		if best == nil || f[3].(int64) < best[3].(int64) {
			best = f
		}
	}
	if best == nil {
		return Result{}, errors.New("httplimit: RL.CHECK: no rule figures")
	}
	allowed, _ := v[0].(int64)
	res := fromFields(allowed, best[2].(int64), best[3].(int64), best[4].(int64), best[5].(int64))
	if allowed == 1 {
		res.RetryAfter = -1
	} else if retry, _ := v[2].(int64); retry >= 0 {
		res.RetryAfter = time.Duration(retry) * time.Millisecond
	}
	res.Denier = denier
	return res, nil
}

// ceilSeconds rounds d up to whole seconds, at least 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Headers sets the IETF RateLimit-Policy and RateLimit fields for res, and
// on a denial Retry-After (whole seconds, rounded up, plus jitter).
func (l *Limiter) Headers(h http.Header, res Result) {
	name := l.rule.Name
	if res.Denier != "" {
		name = res.Denier
	}
	if !res.Unavailable {
		if len(l.rule.Policies) == 0 {
			h.Set("RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d", name, l.rule.Limit, ceilSeconds(l.rule.Period)))
		}
		h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%d", name, res.Remaining, ceilSeconds(res.ResetAfter)))
	}
	if !res.Allowed && res.RetryAfter >= 0 {
		wait := res.RetryAfter
		if l.opt.Jitter > 0 {
			wait += time.Duration(rand.Int64N(int64(l.opt.Jitter)))
		}
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(wait), 10))
	}
}

// Middleware limits next by the key keyOf derives from each request (a
// user id, an API key, the client address: seed §2). Denied requests get
// 429 (503 when Turnstile is unavailable and the rule fails closed).
func (l *Limiter) Middleware(keyOf func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res := l.Allow(r.Context(), keyOf(r))
			l.Headers(w.Header(), res)
			if res.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Cache-Control", "no-store")
			status, detail := http.StatusTooManyRequests, "Too many requests."
			if res.Unavailable {
				status, detail = http.StatusServiceUnavailable, "The rate limiter is unavailable."
			} else if res.RetryAfter >= 0 {
				detail = fmt.Sprintf("Limit is %d. Try again in about %d seconds.", res.Limit, ceilSeconds(res.RetryAfter))
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"detail":%q}`+"\n", http.StatusText(status), status, detail)
		})
	}
}
