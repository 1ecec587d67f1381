package script

import (
	"container/list"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// Host is the server side of a running script: the command table and the
// execution the script runs in.
type Host interface {
	// Lookup finds the command args names (its subcommand resolved, when it
	// is a container), with its arity and flags; ok is false when there is
	// no such command or subcommand.
	Lookup(args [][]byte) (arity int, flags command.Flag, ok bool)
	// Call runs args inside the script's execution and writes its reply to
	// w, in RESP3 when w is set to it. The engine has already made
	// Redis's checks (Lookup, arity, noscript, read-only).
	Call(args [][]byte, w *resp.Writer)
	// Log writes a redis.log line; level is one of the LOG_* levels.
	Log(level int, msg string)
}

// Log levels of redis.log, as Redis numbers them.
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Config configures an Engine.
type Config struct {
	Version    string // redis.REDIS_VERSION
	VersionNum int    // redis.REDIS_VERSION_NUM
}

// maxEvalScripts bounds the scripts EVAL caches (those SCRIPT LOAD
// loaded are kept): beyond it the least recently used is dropped.
const maxEvalScripts = 500

// Error replies of the scripting commands (Redis's texts).
const (
	ErrNoScript   = "NOSCRIPT No matching script. Please use EVAL."
	ErrNotBusy    = "NOTBUSY No scripts in execution right now."
	ErrUnkillable = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errKilled     = "ERR Script killed by user with SCRIPT KILL..."
)

// Engine runs scripts on one Lua state. See the package doc for the rules.
type Engine struct {
	cfg     Config
	lua     *lua.LState
	sandbox *sandbox
	cacheMu sync.RWMutex         // guards scripts against Exists from other goroutines (natives)
	scripts map[string]*compiled // by lower-case hex SHA1
	evalLRU *list.List           // of *compiled cached by EVAL, most recent first
	cached  atomic.Int64         // len(scripts), for INFO from other goroutines
	// nativeCached tells, by Native.Index, whether scripts holds the
	// native's script: Exists for EVALSHA of a native without cacheMu.
	// Changed under cacheMu with scripts.
	nativeCached []atomic.Bool

	// The running script (nil when idle), and what Kill needs.
	cur     *run
	mu      sync.Mutex  // guards kill, running, wrote, killed against Kill
	kill    *killSwitch // the context scripts run under
	running bool
	started time.Time
	wrote   atomic.Bool
	killed  bool
	scratch resp.Writer // redis.call replies
	runs    run         // the state of the running script (cur points to it)
	arena   []byte      // redis.call arguments of the running script
	argv    [][]byte
	noFold  bool // tests: compile without folding constant globals (fold.go)
}

// compiled is one cached script.
type compiled struct {
	sha    string
	fn     *lua.LFunction
	flags  shebang
	loaded bool          // by SCRIPT LOAD: kept until SCRIPT FLUSH
	elem   *list.Element // in evalLRU when cached by EVAL only
}

// run is the state of one script run.
type run struct {
	req      *Request
	sha      string
	resp3    bool // redis.setresp(3)
	readOnly bool // EVAL_RO, or a script declaring no-writes
}

// Request is one script run.
type Request struct {
	Body     []byte   // EVAL: the script text
	SHA      []byte   // EVALSHA: its digest (any case)
	Keys     [][]byte // KEYS
	Args     [][]byte // ARGV
	ReadOnly bool     // EVAL_RO, EVALSHA_RO: write commands are refused
	Host     Host
	// W receives the reply, in RESP3 when it is set to it.
	W *resp.Writer
}

func init() {
	// Lua 5.1's compatibility "arg" table, which gopher-lua builds on every
	// call of a vararg function that does not use "..." (every script's main
	// chunk): scripts do not use it, and it costs a table per run.
	lua.CompatVarArg = false
}

// New returns an engine with its sandbox built.
func New(cfg Config) *Engine {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   1024,
		RegistrySize:    1024,
		RegistryMaxSize: 1 << 20,
	})
	e := &Engine{cfg: cfg, lua: L, scripts: make(map[string]*compiled), evalLRU: list.New(),
		nativeCached: make([]atomic.Bool, len(natives))}
	e.sandbox = newSandbox(e)
	e.kill = newKillSwitch()
	L.SetContext(e.kill)
	return e
}

// killSwitch is the context scripts run under: its Done channel is closed
// to stop the running script (Kill, Stop). gopher-lua reads Done before
// every instruction, and a field is cheaper to read there than the
// channel context.WithCancel makes on demand. Once closed, it is replaced
// before the next script runs.
type killSwitch struct{ done chan struct{} }

func newKillSwitch() *killSwitch { return &killSwitch{done: make(chan struct{})} }

func (k *killSwitch) Deadline() (time.Time, bool) { return time.Time{}, false }
func (k *killSwitch) Done() <-chan struct{}       { return k.done }
func (k *killSwitch) Value(any) any               { return nil }
func (k *killSwitch) Err() error {
	select {
	case <-k.done:
		return context.Canceled
	default:
		return nil
	}
}

// Close releases the Lua state.
func (e *Engine) Close() { e.lua.Close() }

// SHA1Hex returns the lower-case hex SHA1 digest of b.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// AppendSHA1Hex appends the lower-case hex SHA1 digest of b.
func AppendSHA1Hex(dst, b []byte) []byte {
	sum := sha1.Sum(b)
	return hex.AppendEncode(dst, sum[:])
}

// Load compiles body and keeps it until Flush (SCRIPT LOAD); it returns
// the digest, or Redis's compile error.
func (e *Engine) Load(body []byte) (string, error) {
	c, err := e.compile(body)
	if err != nil {
		return "", err
	}
	if c.elem != nil {
		e.evalLRU.Remove(c.elem)
		c.elem = nil
	}
	c.loaded = true
	return c.sha, nil
}

// Exists reports whether the script with this digest (any case) is
// cached. Safe from any goroutine.
func (e *Engine) Exists(sha []byte) bool {
	e.cacheMu.RLock()
	ok := e.bySHA(sha) != nil
	e.cacheMu.RUnlock()
	return ok
}

// NativeCached is Exists for the script of native n, without a lock.
// Safe from any goroutine.
func (e *Engine) NativeCached(n *Native) bool { return e.nativeCached[n.index].Load() }

// markNative records whether the script sha, if it is a native's, is
// cached. Requires cacheMu held for writing.
func (e *Engine) markNative(sha string, cached bool) {
	if n := natives[sha]; n != nil {
		e.nativeCached[n.index].Store(cached)
	}
}

// Cache compiles and caches body as EVAL does, without running it (a
// script that runs natively is still cached, for EVALSHA and SCRIPT
// EXISTS).
func (e *Engine) Cache(body []byte) error {
	_, err := e.compile(body)
	return err
}

// Flush drops every cached script (SCRIPT FLUSH).
func (e *Engine) Flush() {
	e.cacheMu.Lock()
	clear(e.scripts)
	for i := range e.nativeCached {
		e.nativeCached[i].Store(false)
	}
	e.cacheMu.Unlock()
	e.evalLRU.Init()
	e.cached.Store(0)
}

// Cached returns the number of cached scripts. Safe from any goroutine.
func (e *Engine) Cached() int64 { return e.cached.Load() }

// compile returns the cached script of body, compiling and caching it
// (as EVAL does) when it is new.
func (e *Engine) compile(body []byte) (*compiled, error) {
	sha := SHA1Hex(body)
	if c, ok := e.scripts[sha]; ok {
		if c.elem != nil {
			e.evalLRU.MoveToFront(c.elem)
		}
		return c, nil
	}
	flags, code, err := parseShebang(body)
	if err != nil {
		return nil, err
	}
	chunk, err := parse.Parse(strings.NewReader(string(code)), chunkName)
	if err != nil {
		return nil, compileError(err)
	}
	proto, err := lua.Compile(chunk, chunkName)
	if err != nil {
		return nil, compileError(err)
	}
	if !e.noFold {
		e.sandbox.fold(proto)
	}
	fn := e.lua.NewFunctionFromProto(proto)
	fn.Env = e.sandbox.envFor(proto)
	c := &compiled{sha: sha, fn: fn, flags: flags}
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	e.scripts[sha] = c
	e.markNative(sha, true)
	c.elem = e.evalLRU.PushFront(c)
	for e.evalLRU.Len() > maxEvalScripts {
		old := e.evalLRU.Remove(e.evalLRU.Back()).(*compiled)
		old.elem = nil
		delete(e.scripts, old.sha)
		e.markNative(old.sha, false)
	}
	e.cached.Store(int64(len(e.scripts)))
	return c, nil
}

// chunkName is the name Redis gives every script in error positions.
const chunkName = "user_script"

type compileErr struct{ msg string }

func (c *compileErr) Error() string { return c.msg }

// parseErrRE matches gopher-lua's syntax errors, "name line:L(column:C)
// near 'T':   message", which compileError rewrites in Lua's way,
// "name:L: message near 'T'" (the messages themselves are gopher-lua's).
var parseErrRE = regexp.MustCompile(`^(\S+) line:(\d+)\(column:\d+\) near '(.*)':\s+(.*)$`)

func compileError(err error) error {
	msg := strings.TrimSpace(strings.ReplaceAll(err.Error(), "\n", " "))
	if m := parseErrRE.FindStringSubmatch(msg); m != nil {
		msg = m[1] + ":" + m[2] + ": " + m[4] + " near '" + m[3] + "'"
	}
	return &compileErr{"ERR Error compiling script (new function): " + msg}
}

// Running reports whether a script runs, and since when. Safe from any
// goroutine.
func (e *Engine) Running() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started, e.running
}

// Kill stops the running script (SCRIPT KILL) and returns "" or Redis's
// error: NOTBUSY when none runs, UNKILLABLE when it has written. Safe from
// any goroutine.
func (e *Engine) Kill() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !e.running:
		return ErrNotBusy
	case e.wrote.Load():
		return ErrUnkillable
	}
	e.killLocked()
	return ""
}

// killLocked stops the running script, once. Requires mu.
func (e *Engine) killLocked() {
	if !e.killed {
		e.killed = true
		close(e.kill.done)
	}
}

// Stop stops the running script even if it has written (SHUTDOWN NOSAVE,
// the server closing). Safe from any goroutine.
func (e *Engine) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running {
		e.killLocked()
	}
}

// Run runs one script and writes its reply to req.W. Not safe for
// concurrent use (the package doc).
func (e *Engine) Run(req *Request) {
	var c *compiled
	if req.Body != nil {
		var err error
		if c, err = e.compile(req.Body); err != nil {
			req.W.Error(err.Error())
			return
		}
	} else if c = e.bySHA(req.SHA); c == nil {
		req.W.Error(ErrNoScript)
		return
	} else if c.elem != nil {
		e.evalLRU.MoveToFront(c.elem)
	}
	if c.flags.present && !c.flags.noWrites && req.ReadOnly {
		req.W.Error("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	e.execute(c, req)
}

// bySHA returns the cached script with this digest (any case), or nil.
// Requires cacheMu, or the engine (the script lock: writers hold both).
func (e *Engine) bySHA(sha []byte) *compiled {
	var buf [40]byte
	if len(sha) != len(buf) {
		return nil // no digest: a map lookup would not find it either
	}
	for i, c := range sha {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return e.scripts[string(buf[:])]
}

// execute runs compiled script c.
func (e *Engine) execute(c *compiled, req *Request) {
	L := e.lua
	r := &e.runs
	*r = run{req: req, sha: c.sha, readOnly: req.ReadOnly || c.flags.noWrites}
	e.cur = r
	e.arena, e.argv = e.arena[:0], e.argv[:0]
	e.sandbox.setArgs(req.Keys, req.Args)
	e.mu.Lock()
	e.running, e.started, e.killed = true, time.Now(), false
	e.wrote.Store(false)
	e.mu.Unlock()

	top := L.GetTop()
	L.Push(c.fn)
	err := L.PCall(0, 1, e.sandbox.errHandler)

	e.mu.Lock()
	killed := e.killed
	e.running = false
	if killed { // the switch stays off: the next script needs a new one
		e.kill = newKillSwitch()
		L.SetContext(e.kill)
	}
	e.mu.Unlock()
	e.cur = nil

	switch {
	case killed:
		req.W.Error(errKilled + " script: " + c.sha + ", on @" + chunkName + ":" + lineOf(err) + ".")
	case err != nil:
		req.W.Error(e.errorReply(err, c.sha))
	default:
		e.writeValue(req.W, L.Get(-1), r.resp3, 0)
	}
	L.SetTop(top)
	*r = run{} // no reference to the request kept
}
