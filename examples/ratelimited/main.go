// Command ratelimited is an example service behind Turnstile: each client
// address may make 10 requests per minute (GCRA, bursts of 5); the 11th
// in a minute gets 429 with Retry-After and the RateLimit headers.
//
//	go run ./cmd/turnstile &
//	go run ./examples/ratelimited -listen 127.0.0.1:8080 &
//	for i in $(seq 12); do curl -si 127.0.0.1:8080/ | head -1; done
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/httplimit"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address to serve")
	turnstile := flag.String("turnstile", "127.0.0.1:6379", "Turnstile's address")
	failClosed := flag.Bool("fail-closed", false, "refuse requests while Turnstile is unreachable")
	flag.Parse()

	rdb := redis.NewClient(&redis.Options{Addr: *turnstile})
	limiter, err := httplimit.New(rdb, httplimit.Rule{
		Name: "per-client", Algorithm: "GCRA", Limit: 10, Period: time.Minute, Burst: 5, FailClosed: *failClosed,
	}, httplimit.Options{Jitter: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	byClient := func(r *http.Request) string {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return "ip:" + host
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello,", r.RemoteAddr)
	})
	log.Printf("serving on %s, limits from Turnstile at %s", *listen, *turnstile)
	log.Fatal(http.ListenAndServe(*listen, limiter.Middleware(byClient)(hello)))
}
