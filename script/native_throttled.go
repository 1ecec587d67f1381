package script

import (
	"bytes"

	"github.com/turnstile/turnstile/resp"
)

// throttledCAS is the compare-and-swap script of throttled
// (github.com/throttled/throttled/v2 v2.15.0, store/goredisstore.v9),
// which stores a GCRA TAT in one string key:
//
//	KEYS[1]; ARGV old value, new value, ttl (s)
//	get key; the error reply "key does not exist" when there is none; 0
//	when the value is not the old one; else setex key ttl new and 1.
var throttledCAS = &Native{
	Name:  "throttled.cas",
	SHA:   "ebd682e30de074a6919bde872b507734c7c3ebe5",
	Check: func(keys, args [][]byte) bool { return len(keys) >= 1 && len(args) >= 3 },
	Run:   throttledCASRun,
}

var cmdSetexLower = []byte("setex")

func throttledCASRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "ebd682e30de074a6919bde872b507734c7c3ebe5"
	r := getCall(c, cmdGetLower, keys[0])
	if raised(r, w, sha, 2) {
		return
	}
	if r.IsNull() {
		w.Error(errorCode("key does not exist")) // redis.error_reply
		return
	}
	if !bytes.Equal(r.Str, args[0]) {
		w.Int(0)
		return
	}
	if raised(setexCall(c, cmdSetexLower, keys[0], args[2], args[1]), w, sha, 9) {
		return
	}
	w.Int(1)
}
