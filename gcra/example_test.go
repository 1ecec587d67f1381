package gcra_test

import (
	"fmt"

	"github.com/turnstile/turnstile/gcra"
)

// A limiter for CL.THROTTLE key 15 30 60: bursts of 16, then 30 per minute.
// The caller owns the clock and the storage; Decide only says what to do.
func ExampleDecide() {
	q, err := gcra.NewQuota(15, 30, 60)
	if err != nil {
		panic(err)
	}
	now := int64(1_700_000_000_000_000_000) // ns since the Unix epoch
	var tat int64                           // the stored TAT
	exists := false                         // whether the key exists

	for i := 0; i < 17; i++ {
		r := gcra.Decide(tat, exists, now, q, 1)
		switch r.Action {
		case gcra.Store: // SET key NewTAT, expiring at NewTAT
			tat, exists = r.NewTAT, true
		case gcra.Delete: // DEL key
			exists = false
		}
		if i == 0 || i >= 15 {
			fmt.Println(r.Reply(), r.Action)
		}
	}
	// Output:
	// [0 16 15 -1 2] Store
	// [0 16 0 -1 32] Store
	// [1 16 0 2 32] Keep
}
