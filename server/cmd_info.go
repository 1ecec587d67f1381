package server

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// infoSection is one "# Name" block of INFO.
type infoSection struct {
	name      string
	inDefault bool
	write     func(s *Server, b *strings.Builder, now int64)
}

func infoSections() []infoSection {
	return []infoSection{
		{"server", true, infoServer},
		{"clients", true, infoClients},
		{"memory", true, infoMemory},
		{"persistence", true, infoPersistence},
		{"stats", true, infoStats},
		{"replication", true, infoReplication},
		{"cpu", true, infoCPU},
		{"scripts", false, infoScripts},
		{"commandstats", false, infoCommandStats},
		{"errorstats", false, infoErrorStats},     // errorstats.go
		{"latencystats", false, infoLatencyStats}, // latency.go
		{"keyspace", true, infoKeyspace},
	}
}

// cmdInfo implements INFO [section ...] with Redis's field names. "all" and
// "everything" include every section; "default" (or no argument) the usual ones.
func cmdInfo(x *Ctx) {
	want := map[string]bool{}
	for _, a := range x.args[1:] {
		want[keyword(a)] = true
	}
	all := want["all"] || want["everything"]
	def := len(want) == 0 || want["default"]
	var b strings.Builder
	for _, sec := range infoSections() {
		if !(all || want[sec.name] || (def && sec.inDefault)) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec.name[:1]) + sec.name[1:] + "\r\n")
		sec.write(x.s, &b, x.now)
	}
	x.w.Verbatim(b.String())
}

func field(b *strings.Builder, name string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", name, v)
}

func infoServer(s *Server, b *strings.Builder, now int64) {
	uptime := (now - s.start) / 1e9
	field(b, "redis_version", Version)
	field(b, "redis_git_sha1", "00000000")
	field(b, "redis_git_dirty", 0)
	field(b, "redis_mode", "standalone")
	field(b, "turnstile_version", TurnstileVersion)
	field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	field(b, "arch_bits", strconv.IntSize)
	field(b, "multiplexing_api", "go")
	field(b, "go_version", runtime.Version())
	field(b, "process_id", os.Getpid())
	field(b, "tcp_port", s.Port())
	field(b, "server_time_usec", now/1e3)
	infoClock(s, b)
	field(b, "uptime_in_seconds", uptime)
	field(b, "uptime_in_days", uptime/86400)
	field(b, "hz", s.hz.Load())
	field(b, "configured_hz", s.hz.Load())
	exe, _ := os.Executable()
	field(b, "executable", exe)
	field(b, "config_file", s.cfg.ConfigFile)
}

// Port returns the plain TCP port the server listens on (0 before Serve,
// and with TLS only, as Redis's tcp_port).
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ln := range s.lns {
		if _, isTLS := ln.(tlsListener); isTLS {
			continue
		}
		if addr, ok := ln.Addr().(*net.TCPAddr); ok {
			return addr.Port
		}
	}
	return 0
}

func infoClients(s *Server, b *strings.Builder, _ int64) {
	field(b, "connected_clients", s.Clients())
	field(b, "cluster_connections", 0)
	field(b, "maxclients", s.maxClients.Load())
	field(b, "blocked_clients", int64(s.blocked.n.Load())+int64(s.ops.paused.Load())) // paused ones too, as Redis
	field(b, "tracking_clients", 0)
	field(b, "clients_in_timeout_table", s.blocked.timed.Load())
}

func infoMemory(s *Server, b *strings.Builder, _ int64) {
	samples := make([]metrics.Sample, len(goMemoryClasses))
	for i, c := range goMemoryClasses {
		samples[i].Name = c.metric
	}
	metrics.Read(samples)
	// Large slot arrays live in their own mappings outside the Go heap
	// (shards/slotmem.go); they are data like the heap objects.
	var mapped uint64
	for _, db := range s.dbs {
		mapped += uint64(db.MappedBytes())
	}
	used := uint64(s.usedMemory())
	peak := uint64(s.mem.notePeak(int64(used)))
	rss := residentBytes()
	maxmem := uint64(s.mem.max.Load())
	field(b, "used_memory", used)
	field(b, "used_memory_human", humanBytes(used))
	field(b, "used_memory_rss", rss)
	field(b, "used_memory_rss_human", humanBytes(rss))
	field(b, "used_memory_peak", peak)
	field(b, "used_memory_peak_human", humanBytes(peak))
	field(b, "used_memory_startup", s.mem.startup)
	field(b, "used_memory_dataset", s.datasetBytes())
	field(b, "used_memory_mapped", mapped)
	field(b, "go_heap_objects", samples[0].Value.Uint64())
	for i, c := range goMemoryClasses[1:] {
		field(b, c.field, samples[i+1].Value.Uint64())
	}
	field(b, "number_of_cached_scripts", s.scripts.engine.Cached())
	field(b, "maxmemory", maxmem)
	field(b, "maxmemory_human", humanBytes(maxmem))
	field(b, "maxmemory_policy", s.mem.policy.Load().name)
	field(b, "maxmemory_samples", s.mem.samples.Load())
	if used > 0 {
		field(b, "mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rss)/float64(used)))
	}
	field(b, "mem_fragmentation_bytes", int64(rss)-int64(used))
	field(b, "mem_clients_normal", s.clientBufferBytes())
	field(b, "mem_allocator", "go")
}

// goMemoryClasses are the Go runtime's memory figures INFO memory shows,
// so that the part of RSS that is not live keys can be told apart: the
// first is go_heap_objects; go_memory_total is everything the runtime mapped,
// of which go_heap_released is returned to the OS and the rest is resident
// or may become so.
var goMemoryClasses = []struct{ field, metric string }{
	{"go_heap_objects", "/memory/classes/heap/objects:bytes"},
	{"go_memory_total", "/memory/classes/total:bytes"},
	{"go_heap_free", "/memory/classes/heap/free:bytes"},
	{"go_heap_released", "/memory/classes/heap/released:bytes"},
	{"go_heap_unused", "/memory/classes/heap/unused:bytes"},
	{"go_heap_stacks", "/memory/classes/heap/stacks:bytes"},
	{"go_os_stacks", "/memory/classes/os-stacks:bytes"},
	{"go_metadata", "/memory/classes/metadata/other:bytes"},
	{"go_metadata_spans", "/memory/classes/metadata/mspan/inuse:bytes"},
	{"go_gc_cycles", "/gc/cycles/total:gc-cycles"},
}

// residentBytes reads the process's resident set size (Linux), or 0.
func residentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func infoPersistence(s *Server, b *strings.Builder, _ int64) {
	p := &s.persist
	okStr := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "err"
	}
	field(b, "loading", boolInt(p.loading.Load()))
	field(b, "async_loading", 0)
	field(b, "rdb_changes_since_last_save", s.dirty.Load())
	field(b, "rdb_bgsave_in_progress", boolInt(p.bgsaveRunning.Load()))
	field(b, "rdb_last_save_time", p.lastSave.Load())
	field(b, "rdb_last_bgsave_status", okStr(p.lastSaveOK.Load()))
	field(b, "rdb_last_bgsave_time_sec", p.lastSaveSecs.Load())
	current := int64(-1)
	if p.bgsaveRunning.Load() {
		current = max(0, (s.clock.Now()-p.bgsaveStart.Load())/1e9)
	}
	field(b, "rdb_current_bgsave_time_sec", current)
	field(b, "rdb_saves", p.saves.Load())
	field(b, "aof_enabled", boolInt(p.aofOn.Load()))
	field(b, "aof_rewrite_in_progress", boolInt(p.rewriteRunning.Load()))
	field(b, "aof_rewrite_scheduled", 0)
	field(b, "aof_last_rewrite_time_sec", p.lastRewriteSecs.Load())
	field(b, "aof_last_bgrewrite_status", okStr(p.lastRewriteOK.Load()))
	field(b, "aof_last_write_status", okStr(p.aofWriteErr.Load() == nil))
	if lg := s.aofLog(); lg != nil {
		st := lg.Stats()
		field(b, "aof_current_size", st.BaseSize+st.IncrSize)
		field(b, "aof_base_size", st.BaseSize)
		field(b, "aof_buffer_length", st.PendingBytes)
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func infoStats(s *Server, b *strings.Builder, _ int64) {
	field(b, "total_connections_received", s.stats.totalConns.Load())
	field(b, "total_commands_processed", s.stats.totalCommands())
	field(b, "rejected_connections", s.stats.rejectedConns.Load())
	field(b, "expired_keys", s.expiredKeys())
	field(b, "evicted_keys", s.evictedKeys())
	field(b, "unknown_commands", s.stats.unknown.Load())
	field(b, "total_error_replies", s.stats.errorReplies.Load())
	field(b, "client_query_buffer_limit_disconnections", s.stats.queryLimitDisconns.Load())
	field(b, "client_output_buffer_limit_disconnections", s.stats.outputLimitDisconns.Load())
}

// infoReplication is the cluster's fields, verbatim and in its order, on
// a cluster node (role first); Redis's standalone fields otherwise.
func infoReplication(s *Server, b *strings.Builder, _ int64) {
	if s.repl != nil {
		for _, f := range s.repl.Info() {
			field(b, f[0], f[1])
		}
		return
	}
	field(b, "role", "master")
	field(b, "connected_slaves", 0)
	field(b, "master_repl_offset", 0)
}

func infoCPU(s *Server, b *strings.Builder, _ int64) {
	sys, user, err := cpuTimes() // cpu_unix.go; 0 where unsupported
	if err != nil {
		return
	}
	secs := func(d time.Duration) string {
		return fmt.Sprintf("%d.%06d", d/time.Second, d%time.Second/time.Microsecond)
	}
	field(b, "used_cpu_sys", secs(sys))
	field(b, "used_cpu_user", secs(user))
}

func infoCommandStats(s *Server, b *strings.Builder, _ int64) {
	for _, c := range s.table.All() {
		st := &s.stats.cmds[c.ID()]
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 {
			continue
		}
		usec := st.usec.Load()
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			c.FullName(), calls, usec, perCall, rejected, failed)
	}
}

func infoKeyspace(s *Server, b *strings.Builder, _ int64) {
	for i, db := range s.dbs {
		if n := db.Len(); n > 0 {
			fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", i, n, db.Expires())
		}
	}
}
