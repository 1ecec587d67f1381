// Command tracked measures reads through rueidis's client-side cache
// (server-assisted: CLIENT TRACKING, invalidation pushes) against any
// server that speaks RESP3, and prints reads per second and the share
// served from the cache:
//
//	tracked -addr 127.0.0.1:6379 -keys 1000 -readers 8 -writes 2000 -d 10s
//
// Readers call DoCache(GET k) on random keys; one writer SETs random keys at
// -writes per second, so the server keeps invalidating cached keys and the
// readers keep refetching them. (That invalidation reaches the cache is
// tested in server's TestIntegrationRueidisClientSideCache; this only
// measures.)
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	keys := flag.Int("keys", 1000, "distinct keys")
	readers := flag.Int("readers", 8, "reading goroutines")
	writes := flag.Int("writes", 2000, "SETs per second by the writer (0: none)")
	dur := flag.Duration("d", 10*time.Second, "run time")
	flag.Parse()
	if *keys < 1 || *keys > 1e7 || *readers < 1 || *readers > 1000 || *writes < 0 || *writes > 1e6 ||
		*dur <= 0 || *dur > time.Hour || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*addr, *keys, *readers, *writes, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "tracked:", err)
		os.Exit(1)
	}
}

func run(addr string, keys, readers, writes int, dur time.Duration) error {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dur+30*time.Second)
	defer cancel()
	key := func(i int) string { return "trk:" + strconv.Itoa(i) }
	for i := range keys {
		if err := c.Do(ctx, c.B().Set().Key(key(i)).Value("0").Build()).Error(); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	var reads, hits atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			var n, h int64
			for time.Now().Before(deadline) {
				resp := c.DoCache(ctx, c.B().Get().Key(key(rng.IntN(keys))).Cache(), time.Minute)
				if _, err := resp.ToString(); err != nil {
					errs <- fmt.Errorf("GET: %w", err)
					return
				}
				n++
				if resp.IsCacheHit() {
					h++
				}
			}
			reads.Add(n)
			hits.Add(h)
		}()
	}
	if writes > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(min(writes, 1000)))
			defer tick.Stop()
			per := max(writes/1000, 1)
			rng := rand.New(rand.NewPCG(99, 7))
			seq := 0
			for time.Now().Before(deadline) {
				<-tick.C
				for range per {
					seq++
					if err := c.Do(ctx, c.B().Set().Key(key(rng.IntN(keys))).Value(strconv.Itoa(seq)).Build()).Error(); err != nil {
						errs <- fmt.Errorf("SET: %w", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("%.0f %.3f\n", float64(reads.Load())/secs, float64(hits.Load())/float64(max(reads.Load(), 1)))
	return nil
}
