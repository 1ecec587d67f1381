package server

import (
	"strconv"
	"sync"
	"testing"
)

// TestScriptEffectsKeepTheirKeys: the effects of a script name keys in the
// script engine's argument arena, which the next script reuses; they reach
// the log after the script returns (end), so the script lock is held until
// then. Two connections run scripts on keys of different shards at once,
// and after a restart every key holds what its own script wrote.
func TestScriptEffectsKeepTheirKeys(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	addr := r.srv.Addr().String()
	const perConn = 200
	var wg sync.WaitGroup
	for w := range 2 {
		rc := dialRaw(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perConn {
				key := "w" + strconv.Itoa(w) + ":" + strconv.Itoa(i)
				// The key is built inside the script: only the arena holds it.
				got := rc.do("EVAL", "return redis.call('set', ARGV[1] .. ':' .. ARGV[2], ARGV[2])", "0", "w"+strconv.Itoa(w), strconv.Itoa(i))
				if got != "+OK\r\n" {
					t.Errorf("%s: %q", key, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	r.restart()
	for w := range 2 {
		for i := range perConn {
			key := "w" + strconv.Itoa(w) + ":" + strconv.Itoa(i)
			v := strconv.Itoa(i)
			r.expect("$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "GET", key)
		}
	}
	r.expect(":"+strconv.Itoa(2*perConn)+"\r\n", "DBSIZE")
}
