package server

import (
	"strconv"
	"testing"
)

// BenchmarkThrottlePathOps is BenchmarkThrottlePath under the operability
// settings that change the per-command work (ops.go): "timed" is the
// default (the slow log is on: every command's end time is read), "off"
// turns the slow log off (only the commandstats sample is timed), and
// "monitor" has a monitor attached (each command formats a line and queues
// it). The difference between "timed" and "off" is the slow log's cost.
func BenchmarkThrottlePathOps(b *testing.B) {
	for _, mode := range []string{"timed", "off", "monitor"} {
		b.Run(mode, func(b *testing.B) {
			s, c := newPathClient(b, func(cfg *Config) {
				if mode != "timed" {
					cfg.Ops.SlowlogSlowerThan = -1
				}
			})
			if mode == "monitor" {
				_, m := newPathClient(b)
				m.s = s
				m.monitor.Store(true)
				s.ops.monitors.add(m)
				b.Cleanup(func() { m.out.close() })
			}
			const nkeys = 1024
			reqs := make([][]byte, nkeys)
			for i := range reqs {
				reqs[i] = []byte(encodeCommand("CL.THROTTLE", "user:"+strconv.Itoa(i), "15", "30", "60"))
			}
			for _, r := range reqs {
				feed(b, s, c, r)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				feed(b, s, c, reqs[i%nkeys])
				if mode == "monitor" && i%256 == 0 {
					b.StopTimer()
					for _, m := range *s.ops.monitors.list.Load() {
						m.out.done(m.out.take())
					}
					b.StartTimer()
				}
			}
		})
	}
}
