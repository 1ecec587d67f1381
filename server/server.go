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
	Port        int         // TCP port (redis "port"); 0 picks a free port
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

	// Memory limit (maxmemory.go): bytes (0: none), what happens at it,
	// keys sampled per eviction, and the LFU counter's parameters.
	MaxMemory        int64
	MaxMemoryPolicy  string
	MaxMemorySamples int
	LFULogFactor     int
	LFUDecayTime     int
	// GoBallast is the size of a heap allocation the process keeps but
	// never touches (cmd/turnstile's --gc-floor): the Go runtime counts
	// it, the OS does not, so the Go memory limit set for maxmemory is
	// raised by it.
	GoBallast int64

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

		MaxWatchedKeys:    100_000,
		MaxQueuedCommands: 100_000,
		MaxQueuedBytes:    64 << 20,

		BusyReplyThreshold: 5000,
		NativeScripts:      true,

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
	maxClients  atomic.Int64
	fdMu        sync.Mutex                         // serializes fitting the open files limit (fdlimit.go)
	fdLimiter   fdLimiter                          // the process's open files limit; nil: none
	idleTimeout atomic.Int64                       // seconds; 0: clients may stay idle (idle.go)
	outLimits   atomic.Pointer[OutputBufferLimits] // client-output-buffer-limit (outlimit.go)
	clientMem   clientMem                          // client buffer bytes (clientmem.go)

	mu      sync.Mutex // guards ln, clients, closed
	ln      net.Listener
	clients map[int64]*client
	closed  bool

	nextID atomic.Int64
	stats  stats
	dirty  atomic.Int64 // changes since the last snapshot (rdb_changes_since_last_save)
	dur    Durability   // nil: writes are not logged
	repl   Replication  // nil: a server of its own (replication.go)
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
	ops     opsState              // MONITOR, SLOWLOG, LATENCY, errorstats, CLIENT PAUSE (ops.go)
	loadErr atomic.Pointer[error] // why loading failed, if it did
	ready   chan struct{}         // closed once the dataset is loaded
	stopped chan struct{}         // closed once Serve has shut everything down
	wg      sync.WaitGroup        // connection and background goroutines
	stop    chan struct{}
}

// New builds a server. It does no I/O; Serve or ListenAndServe does.
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
	s.dur = cfg.Durability
	if cfg.Replication != nil {
		s.repl, s.dur = cfg.Replication, cfg.Replication
	}
	s.start = s.clock.Now()
	s.requirePass.Store(&cfg.RequirePass)
	// As Redis: before any save, the statuses are "ok", the last save
	// time is the start time and the last save took -1 seconds.
	s.persist.lastSaveOK.Store(true)
	s.persist.lastRewriteOK.Store(true)
	s.persist.lastSave.Store(s.start / 1e9)
	s.persist.lastSaveSecs.Store(-1)
	s.persist.stopWrites.Store(cfg.Persist.StopWritesOnBgsaveError)
	s.maxClients.Store(int64(cfg.MaxClients))
	s.idleTimeout.Store(int64(cfg.Timeout))
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
		setCommands(), hashCommands(), zsetCommands(), listCommands(), blockingCommands(), streamCommands(),
		pubsubCommands(), scriptingCommands(), raftCommands(),
		monitorCommands(), slowlogCommands(), latencyCommands(),
		cfg.extraCommands,
	)
	s.blocked.init(s.dbs)
	s.stats.init(s.table)
	s.initScripting()
	s.initMemory()
	s.initOps()
	return s, nil
}

// Listen binds the configured address.
func (s *Server) Listen() (net.Listener, error) {
	addr := net.JoinHostPort(s.cfg.Bind, fmt.Sprint(s.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve accepts connections on ln until ctx is done or Close is called,
// then closes every connection and waits for their goroutines.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	s.ln = ln
	s.mu.Unlock()
	s.log.Info("listening; loading the dataset", "addr", ln.Addr().String())
	if err := s.fitMaxClients(); err != nil {
		s.loadErr.Store(&err) // finish reports it and writes no snapshot
		s.Close()
		return s.finish()
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
	var retry acceptRetry // accept.go: every error but a closed listener passes
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return s.finish()
			}
			if errors.Is(err, net.ErrClosed) {
				s.Close()
				return errors.Join(fmt.Errorf("accept: %w", err), s.finish())
			}
			t := time.NewTimer(retry.failed(s.log, err, time.Now()))
			select {
			case <-t.C:
			case <-s.stop:
				t.Stop()
			}
			continue
		}
		retry.ok()
		s.accept(nc)
	}
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
		if s.persist.log != nil {
			s.persist.log.Close()
		}
		return *p
	}
	return s.closePersistence()
}

// Addr returns the listening address, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
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
	if s.ln != nil {
		s.ln.Close()
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
		s.stats.rejectedConns.Add(1)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-ERR max number of clients reached\r\n"))
		nc.Close()
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
