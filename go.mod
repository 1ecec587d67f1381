module github.com/turnstile/turnstile

go 1.26.8

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/throttled/throttled/v2 v2.15.0
	github.com/tidwall/redcon v1.6.4
	github.com/ulule/limiter/v3 v3.11.2
	github.com/yuin/gopher-lua v1.1.2
)

require (
	github.com/pkg/errors v0.9.1 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
