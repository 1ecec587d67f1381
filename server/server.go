package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Version is the Redis version Turnstile reports (clients gate features on
// it, e.g. Rails uses EXPIRE ... NX only from 7.0 on).
const Version = "7.2.0"

// TurnstileVersion is Turnstile's own version.
const TurnstileVersion = "0.1.0"

// Config holds the server settings. Names follow redis.conf where one exists;
// the settings that are configuration parameters (flags, config file, CONFIG
// GET/SET) are the rows of configTable (config_params.go).
type Config struct {
	Bind        string      // address to listen on (redis "bind")
	Port        int         // TCP port (redis "port"); 0 picks a free port, or, with a TLS port, turns plain TCP off
	RequirePass string      // password for the default user; "" disables AUTH
	MaxClients  int         // most simultaneous connections (redis "maxclients")
	Timeout     int         // seconds a client may stay idle before it is closed (redis "timeout"); 0: for ever
	Shards      int         // shards per database (power of two)
	Databases   int         // number of databases (SELECT 0..n-1)
	Hz          int         // background task frequency (active expiry), per second
	Limits      resp.Limits // request size bounds
	// OutputLimits is client-output-buffer-limit (outlimit.go).
	OutputLimits OutputBufferLimits
	Persist      PersistConfig
	Ops          OpsConfig // slow log and latency monitor (ops.go)
	LogLevel     string    // redis "loglevel": debug, verbose, notice, warning (the binary's logger; see SlogLevel)
	Clock        clock.Clock
	Logger       *slog.Logger
	// LogLevelVar, when set, is the level of Logger's handler: CONFIG SET
	// loglevel changes it (the binary passes its handler's).
	LogLevelVar *slog.LevelVar

	// The process's settings, which the binary applies (the server only
	// reports them in CONFIG GET and rewrites them): redis "logfile" (""
	// is standard output), "pidfile" ("": none), "daemonize" (not
	// supported: the binary warns and stays in the foreground).
	LogFile   string
	PidFile   string
	Daemonize bool
	// ConfigFile is the absolute path of the config file the server was
	// started with ("": none): INFO's config_file, CONFIG REWRITE's target.
	ConfigFile string

	// TLS is the TLS listener next to the plain port (tls.go).
	TLS TLSConfig
	// ProtectedMode refuses non-loopback clients while the default user
	// has no password (protected.go; redis "protected-mode").
	ProtectedMode bool

	// Transactions: most keys one connection may WATCH, and most commands
	// and argument bytes one MULTI may queue.
	MaxWatchedKeys    int
	MaxQueuedCommands int
	MaxQueuedBytes    int64

	// BusyReplyThreshold is how long, in milliseconds, a script runs before
	// other clients get BUSY replies (redis "busy-reply-threshold", alias
	// "lua-time-limit").
	BusyReplyThreshold int64
	// NativeScripts runs the known limiter scripts (script.Natives) in Go
	// instead of Lua ("turnstile-native-scripts").
	NativeScripts bool
	// EnableDebugCommand is "no", "yes" or "local" (loopback clients
	// only): who may run DEBUG (redis "enable-debug-command").
	EnableDebugCommand string

	// RLPolicies is the file of named rate-limit rules RL.CHECK applies
	// ("rl-policies"; "": none, rules come from RL.POLICY SET).
	RLPolicies string
	// HotKeys counts limiter calls per key for RL.HOTKEYS
	// ("turnstile-hotkeys").
	HotKeys bool
	// MetricsAddr is where Prometheus metrics are served, HOST:PORT
	// ("turnstile-metrics-addr"; "": nowhere).
	MetricsAddr string

	// Memory limit (maxmemory.go): bytes (0: none), what happens at it,
	// keys sampled per eviction, and the LFU counter's parameters.
	MaxMemory        int64
	MaxMemoryPolicy  string
	MaxMemorySamples int
	LFULogFactor     int
	LFUDecayTime     int
	// GoBallast, when set, reports the size of a heap allocation the
	// process keeps but never touches (cmd/turnstile's --gc-floor, which
	// drops it once the heap outgrows it): the Go runtime counts it, the
	// OS does not, so the Go memory limit set for maxmemory is raised by
	// it.
	GoBallast func() int64

	// Durability, when set, is where writes become durable instead of the
	// append-only log (a cluster passes its Raft log). nil: the append-only
	// log when Persist.AppendOnly, else none.
	Durability Durability
	// Replication, when set, makes this server one node of a replicated
	// cluster (replication.go): it is also the Durability, the server's
	// own append-only log and snapshots are off, and keyspace commands run
	// on the leader only.
	Replication Replication

	extraCommands   []*Command // test-only rows appended to the table
	fdLimiter       fdLimiter  // test-only: replaces the process's open files limit
	maxKeysPerShard int        // test-only: lower shard capacity (0: the natural limit)

	// portableConnLoop (test-only) serves sockets with the portable loop,
	// serveStream, instead of the raw socket loop, so that tests on Linux
	// cover the loop other platforms use.
	portableConnLoop bool

	// ACLFile is redis "aclfile": users loaded at start-up and by ACL LOAD,
	// written by ACL SAVE ("": none).
	ACLFile string
	// ACLLogMaxLen is redis "acllog-max-len": entries ACL LOG keeps.
	ACLLogMaxLen int
	// ACLPubsubDefault is redis "acl-pubsub-default": the channels of a
	// new (or reset) user, "resetchannels" (none) or "allchannels".
	ACLPubsubDefault string
}

// DefaultConfig returns the settings used when nothing is configured.
func DefaultConfig() Config {
	return Config{
		Bind:         "127.0.0.1",
		Port:         6379,
		MaxClients:   10000,
		Shards:       DefaultShards(),
		Databases:    16,
		Hz:           10,
		Limits:       resp.DefaultLimits,
		OutputLimits: DefaultOutputBufferLimits(),
		Persist:      DefaultPersistConfig(),
		Ops:          DefaultOpsConfig(),
		LogLevel:     "notice",

		TLS:           TLSConfig{AuthClients: "yes"},
		ProtectedMode: true,

		MaxWatchedKeys:    100_000,
		MaxQueuedCommands: 100_000,
		ACLLogMaxLen:      128,
		ACLPubsubDefault:  "resetchannels",
		MaxQueuedBytes:    64 << 20,

		BusyReplyThreshold: 5000,
		NativeScripts:      true,
		HotKeys:            true,
		EnableDebugCommand: "no",

		MaxMemoryPolicy:  "noeviction",
		MaxMemorySamples: 5,
		LFULogFactor:     10,
		LFUDecayTime:     1,
	}
}

// DefaultShards sizes the shard count for the machine: 64 per CPU, at least 64.
func DefaultShards() int { return max(64, 64*runtime.GOMAXPROCS(0)) }

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("port %d out of range", c.Port)
	case c.TLS.Port < 0 || c.TLS.Port > 65535:
		return fmt.Errorf("tls-port %d out of range", c.TLS.Port)
	case c.MaxClients < 1:
		return fmt.Errorf("maxclients must be at least 1, got %d", c.MaxClients)
	case c.Timeout < 0:
		return fmt.Errorf("timeout must not be negative, got %d", c.Timeout)
	case c.Shards < 1 || c.Shards > shards.MaxShards:
		return fmt.Errorf("shards must be in 1..%d, got %d", shards.MaxShards, c.Shards)
	case c.Databases < 1 || c.Databases > 1024:
		return fmt.Errorf("databases must be in 1..1024, got %d", c.Databases)
	case c.Hz < 1 || c.Hz > 500:
		return fmt.Errorf("hz must be in 1..500, got %d", c.Hz)
	case c.MaxWatchedKeys < 1 || c.MaxQueuedCommands < 1 || c.MaxQueuedBytes < 1:
		return errors.New("transaction limits must be positive")
	case c.Replication != nil && (c.Persist.AppendOnly || len(c.Persist.Save) > 0):
		return errors.New("a replicated server keeps its data in the Raft log and snapshots: appendonly and save rules must be off")
	case c.Limits.MaxBulkLen < 1 || c.Limits.MaxQueryBuf < 1 || c.Limits.MaxMultibulk < 1 || c.Limits.MaxInline < 1:
		return errors.New("protocol limits must be positive")
	}
	if c.TLS.Port != 0 {
		if err := c.TLS.check(); err != nil {
			return fmt.Errorf("tls-port %d: %w", c.TLS.Port, err)
		}
	}
	return nil
}

// Server is a Turnstile instance: the keyspace, the command table and the
// connections. Safe for concurrent use.
type Server struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	dbs   []*shards.Map
	table *Table
	start int64 // Unix ns at start-up

	requirePass atomic.Pointer[string]
	acl         aclState // users, ACL LOG (acl.go)
	maxClients  atomic.Int64
	fdMu        sync.Mutex                         // serializes fitting the open files limit (fdlimit.go)
	fdLimiter   fdLimiter                          // the process's open files limit; nil: none
	idleTimeout atomic.Int64                       // seconds; 0: clients may stay idle (idle.go)
	hz          atomic.Int64                       // background task frequency (CONFIG SET hz)
	confMu      sync.Mutex                         // one CONFIG REWRITE at a time (configrewrite.go)
	logLevel    atomic.Pointer[string]             // loglevel's name (CONFIG SET loglevel)
	outLimits   atomic.Pointer[OutputBufferLimits] // client-output-buffer-limit (outlimit.go)
	clientMem   clientMem                          // client buffer bytes (clientmem.go)
	rl          rlPolicies                         // RL.CHECK's named rules (rlpolicy.go)
	hot         hotState                           // hot limiter keys (hotkeys.go)
	metricsAddr atomic.Value                       // string: where /metrics is served (metrics.go)

	protectedMode atomic.Bool // protected.go
	tls           tlsState    // tls.go

	mu      sync.Mutex     // guards lns, clients, closed
	lns     []net.Listener // what Serve accepts on; a TLS one is a tlsListener
	clients map[int64]*client
	closed  bool

	nextID atomic.Int64
	stats  stats
	dirty  atomic.Int64 // changes since the last snapshot (rdb_changes_since_last_save)
	// dur is where writes become durable (durability.go): nil while
	// they are not logged. It changes only while every shard lock is held
	// (CONFIG SET appendonly, aof.go), so one execution, which holds its
	// shards' locks from its first effect to its Append, sees one value.
	dur  atomic.Pointer[durBox]
	repl Replication // nil: a server of its own (replication.go)
	// leading: this cluster node is the leader and decides expiry
	// (SetLeading); always false on a server of its own.
	leading atomic.Bool

	persist persistState
	mem     memLimit      // maxmemory and eviction (maxmemory.go)
	pubsub  pubsub        // channel and pattern subscriptions (pubsub.go)
	track   tracker       // client-side caching (tracking.go)
	blocked blockRegistry // clients blocked on keys (blocking.go)
	// hooks counts the clients that hear of changed keys: those with
	// tracking on plus the blocked ones. Ctx.record notes changes only
	// while it is not 0 (its one atomic load).
	hooks   atomic.Int32
	scripts scripting             // Lua scripts (scripting.go)
	debug   debugState            // what DEBUG changed (cmd_debug.go)
	ops     opsState              // MONITOR, SLOWLOG, LATENCY, errorstats, CLIENT PAUSE (ops.go)
	loadErr atomic.Pointer[error] // why loading failed, if it did
	ready   chan struct{}         // closed once the dataset is loaded
	stopped chan struct{}         // closed once Serve has shut everything down
	wg      sync.WaitGroup        // connection and background goroutines
	stop    chan struct{}
}

// New builds a server. Its only I/O is reading the rate-limit policy file
// (rl-policies), so that a bad file refuses start-up; Serve or
// ListenAndServe does the rest.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil { // a disciplined clock without a state file (the binary passes clock.Restore's)
		cfg.Clock = clock.NewDisciplined(clock.System(), cfg.Logger.With("component", "clock"))
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "server"),
		clock:   cfg.Clock,
		clients: make(map[int64]*client),
		stop:    make(chan struct{}),
		ready:   make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if cfg.Durability != nil {
		s.setDurability(cfg.Durability)
	}
	if cfg.Replication != nil {
		s.repl = cfg.Replication
		s.setDurability(cfg.Replication)
	}
	s.start = s.clock.Now()
	s.requirePass.Store(&cfg.RequirePass)
	s.protectedMode.Store(cfg.ProtectedMode)
	s.tls.settings = cfg.TLS
	// As Redis: before any save, the statuses are "ok", the last save
	// time is the start time and the last save took -1 seconds.
	s.persist.lastSaveOK.Store(true)
	s.persist.lastRewriteOK.Store(true)
	s.persist.lastSave.Store(s.start / 1e9)
	s.persist.lastSaveSecs.Store(-1)
	s.persist.stopWrites.Store(cfg.Persist.StopWritesOnBgsaveError)
	s.maxClients.Store(int64(cfg.MaxClients))
	s.idleTimeout.Store(int64(cfg.Timeout))
	s.hz.Store(int64(cfg.Hz))
	logLevel := logLevelCodec.format(cfg.LogLevel)
	s.logLevel.Store(&logLevel)
	saveRules := cfg.Persist.Save
	s.persist.save.Store(&saveRules)
	s.persist.fsync.Store(uint32(cfg.Persist.AppendFsync))
	s.persist.aofOn.Store(cfg.Persist.AppendOnly)
	s.persist.rewritePct.Store(int64(cfg.Persist.AutoRewritePercentage))
	s.persist.rewriteMin.Store(cfg.Persist.AutoRewriteMinSize)
	outLimits := cfg.OutputLimits
	s.outLimits.Store(&outLimits)
	s.fdLimiter = cfg.fdLimiter
	if s.fdLimiter == nil {
		s.fdLimiter = processFDLimiter()
	}
	s.dbs = make([]*shards.Map, cfg.Databases)
	for i := range s.dbs {
		s.dbs[i] = shards.NewWithLimit(cfg.Shards, cfg.maxKeysPerShard)
		s.dbs[i].SetExpireHook(func(key []byte) { s.keyExpired(i, key) })
		s.dbs[i].SetKeepExpired(cfg.Replication != nil) // until this node leads (replication.go)
	}
	s.table = newTable(
		connectionCommands(), serverCommands(), transactionCommands(),
		stringCommands(), keyCommands(), objectCommands(), throttleCommands(), persistCommands(),
		setCommands(), hashCommands(), zsetCommands(), zsetAlgebraCommands(), bitmapCommands(), bitfieldCommands(), listCommands(), blockingCommands(), streamCommands(), streamGroupCommands(), sortCommands(), hllCommands(), geoCommands(),
		pubsubCommands(), scriptingCommands(), raftCommands(), aclCommands(), dbCommands(), dumpCommands(), debugCommands(),
		rlCommands(), rlCheckCommands(), rlLeaseCommands(), hotkeysCommands(),
		monitorCommands(), slowlogCommands(), latencyCommands(),
		cfg.extraCommands,
	)
	s.initACL()
	if cfg.ACLFile != "" {
		if e := s.loadACLFile(cfg.ACLFile, nil); e != "" {
			return nil, fmt.Errorf("aborting start-up because of ACL errors: %s", e)
		}
	}
	s.blocked.init(s.dbs)
	s.stats.init(s.table)
	s.initScripting()
	s.initMemory()
	s.initOps()
	s.hot.init(len(s.dbs), cfg.HotKeys)
	if err := s.rl.init(cfg.RLPolicies); err != nil {
		return nil, fmt.Errorf("rate-limit policies: %w", err)
	}
	return s, nil
}

// Listeners binds what the configuration asks for, for Serve: the plain
// port, unless it is 0 and a TLS port is set (as Redis's port 0), and the
// TLS port if set, on the same addresses. A TLS certificate, key or CA
// file that cannot be loaded is an error here.
func (s *Server) Listeners() ([]net.Listener, error) {
	var lns []net.Listener
	if s.cfg.Port != 0 || s.cfg.TLS.Port == 0 {
		ln, err := s.Listen()
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	if s.cfg.TLS.Port != 0 {
		ln, err := s.listenTLS(s.cfg.Bind, s.cfg.TLS.Port)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// Listen binds the configured addresses (listen.go: bind's syntax).
func (s *Server) Listen() (net.Listener, error) { return listenBind(s.cfg.Bind, s.cfg.Port) }

// Serve accepts connections on lns (from Listeners or Listen; at least
// one) until ctx is done or Close is called, then closes every connection
// and waits for their goroutines.
func (s *Server) Serve(ctx context.Context, lns ...net.Listener) error {
	if len(lns) == 0 {
		return errors.New("serve: no listener (port 0 with tls-port 0 listens nowhere)")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		for _, ln := range lns {
			ln.Close()
		}
		return net.ErrClosed
	}
	s.lns = lns
	s.mu.Unlock()
	ln := lns[0]
	for _, l := range lns {
		if _, ok := l.(tlsListener); ok {
			s.log.Info("listening for TLS connections", "addr", l.Addr().String())
		} else {
			s.log.Info("listening; loading the dataset", "addr", l.Addr().String())
		}
	}
	if err := s.fitMaxClients(); err != nil {
		s.loadErr.Store(&err) // finish reports it and writes no snapshot
		s.Close()
		return s.finish()
	}
	if s.cfg.MetricsAddr != "" {
		if err := s.serveMetrics(s.cfg.MetricsAddr); err != nil {
			s.loadErr.Store(&err)
			s.Close()
			return s.finish()
		}
	}

	// Load in the background while accepting: clients get LOADING until
	// the dataset is in memory. A damaged file stops the server.
	if err := s.openLog(); err != nil {
		s.Close()
		return err
	}
	s.persist.loading.Store(true)
	s.goFunc(func() {
		if err := s.loadData(); err != nil {
			s.log.Error("cannot load the dataset; refusing to start", "err", err)
			s.loadErr.Store(&err)
			s.Close()
			return
		}
		if s.repl == nil {
			if err := s.policiesAfterLoad(); err != nil {
				s.log.Error("cannot record the policy file's rules", "err", err)
			}
		}
		s.persist.loading.Store(false)
		close(s.ready)
		s.log.Info("ready to accept connections", "addr", ln.Addr().String())
	})
	s.goFunc(s.backgroundLoop)
	s.goFunc(s.expireLoop)
	s.goFunc(s.scriptWatchdog)
	go func() {
		select {
		case <-ctx.Done():
		case <-s.stop:
		}
		s.Close()
	}()
	for _, l := range lns[1:] {
		s.goFunc(func() {
			if err := s.acceptLoop(l); err != nil {
				s.log.Error("the server stops", "err", err)
			}
		})
	}
	err := s.acceptLoop(ln)
	return errors.Join(err, s.finish())
}

// Ready is closed once the dataset is loaded and every command is served.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Stopped is closed once Serve has finished shutting down: connections and
// background work stopped, the final snapshot written, the log closed.
func (s *Server) Stopped() <-chan struct{} { return s.stopped }

// finish waits for every connection and background task, then shuts
// persistence down (final snapshot, log flushed and closed).
func (s *Server) finish() error {
	defer close(s.stopped)
	s.wg.Wait()
	s.releaseGoLimit()
	if p := s.loadErr.Load(); p != nil {
		if lg := s.aofLog(); lg != nil {
			lg.Close()
		}
		return *p
	}
	return s.closePersistence()
}

// Addr returns the listening address, or nil before Serve.
// With several listeners, the plain port's, if there is one, else the
// first's.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ln := range s.lns {
		if _, isTLS := ln.(tlsListener); !isTLS {
			return ln.Addr()
		}
	}
	if len(s.lns) == 0 {
		return nil
	}
	return s.lns[0].Addr()
}

// Close stops accepting, closes all connections and stops background work.
// It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.stop)
	if _, running := s.scripts.engine.Running(); running { // its connection must end too
		s.scripts.shutdown.Store(true)
		s.scripts.engine.Stop()
	}
	for _, ln := range s.lns {
		ln.Close()
	}
	for _, c := range s.clients {
		c.kill()
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// goFunc runs f in a goroutine tracked by the server's WaitGroup.
func (s *Server) goFunc(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// backgroundLoop runs the persistence checks, the idle client timeout, the
// memory release check and the saving of the clock's state once a second
// (the clock's state once more when the server stops). Active expiry has
// its own loop (expire.go).
func (s *Server) backgroundLoop() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	rel := memReleaser{release: debug.FreeOSMemory}
	for {
		select {
		case <-s.stop:
			s.saveClock()
			return
		case <-t.C:
			s.saveClock()
			now := s.clock.Now()
			s.persistTick(now)
			s.closeIdleClients(now)
			rel.tick(s.datasetBytes(), s.clientBytesFreed())
			s.tuneGoLimit()
		}
	}
}

// accept registers a new connection, or refuses it when maxclients is reached.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if int64(len(s.clients)) >= s.maxClients.Load() {
		s.mu.Unlock()
		s.reject(nc, "-ERR max number of clients reached\r\n")
		return
	}
	if s.protectedRefuses(nc.RemoteAddr()) {
		s.mu.Unlock()
		s.reject(nc, errProtectedMode)
		return
	}
	c := newClient(s, nc)
	s.clients[c.id] = c
	s.mu.Unlock()
	s.stats.totalConns.Add(1)
	s.goFunc(func() { s.serveConn(c) })
}

func (s *Server) removeClient(c *client) {
	s.mu.Lock()
	delete(s.clients, c.id)
	s.mu.Unlock()
}

// numDBs is the number of databases (SELECT's range).
func (s *Server) numDBs() int { return len(s.dbs) }

// Clients returns the number of connected clients.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}
