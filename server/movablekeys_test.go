package server

import (
	"slices"
	"strings"
	"testing"
)

// redisMovableKeys are the commands redis-server 7.0.15 flags movablekeys
// in COMMAND INFO (keys found in the arguments, not at fixed positions).
var redisMovableKeys = strings.Fields(`blmpop bzmpop eval eval_ro evalsha evalsha_ro fcall fcall_ro
	georadius georadiusbymember lmpop migrate sintercard sort sort_ro xread xreadgroup zdiff
	zdiffstore zinter zintercard zinterstore zmpop zunion zunionstore`)

// TestMovableKeysFlag: every command both servers have carries movablekeys
// (last, as Redis lists it) exactly where Redis's does.
func TestMovableKeysFlag(t *testing.T) {
	s, _, _ := newTestServer(t)
	shared := 0
	for _, c := range s.table.All() {
		name := c.FullName()
		flags := c.FlagNames()
		has := slices.Contains(flags, "movablekeys")
		if has && flags[len(flags)-1] != "movablekeys" {
			t.Errorf("%s: movablekeys is not the last flag: %v", name, flags)
		}
		if slices.Contains(redisMovableKeys, name) {
			shared++
			if !has {
				t.Errorf("%s: no movablekeys flag (Redis has it)", name)
			}
		} else if has && !strings.HasPrefix(name, "rl.") { // RL.* are Turnstile's own
			t.Errorf("%s: movablekeys flag, which Redis does not give it", name)
		}
	}
	if shared < 17 {
		t.Errorf("only %d of Redis's movablekeys commands exist here", shared)
	}
}
