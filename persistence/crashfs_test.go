package persistence

// crashFS: an in-memory FS that simulates power loss. Per file it keeps the
// bytes written and the bytes made durable by the last fsync; per directory,
// the namespace changes (creation, rename, removal) not yet made durable by
// SyncDir. A crash keeps only what is durable, plus (optionally) what a real
// disk may also have kept: a prefix of the namespace changes in order (a
// journaled file system commits them in order), and a prefix of the bytes
// appended since a file's last fsync, possibly followed by zeros (the size
// was extended before the data reached the disk).

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

var errCrashed = errors.New("crashfs: crashed")

type inode struct {
	data    []byte
	durable []byte
}

type dirOp struct {
	dir   string
	apply func(ns map[string]*inode)
}

type crashFS struct {
	mu      sync.Mutex
	names   map[string]*inode // namespace as the running process sees it
	durable map[string]*inode // namespace that survives a crash
	pending []dirOp
	dirs    map[string]bool

	ops     int64
	crashAt int64 // crash at this operation (0: never)
	crashed bool
	rng     *rand.Rand
	partial bool // on crash, keep a random prefix of un-fsynced appended data and of un-synced directory changes
	image   map[string][]byte
	onCrash func()

	// fault, when set, may fail an operation: op is "open", "write",
	// "sync", "truncate", "rename", "remove", "syncdir".
	fault func(op, name string) error
}

func newCrashFS(seed uint64) *crashFS {
	return &crashFS{
		names:   map[string]*inode{},
		durable: map[string]*inode{},
		dirs:    map[string]bool{"/": true, ".": true},
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// tick counts an operation and crashes when its turn has come. fs.mu is held.
func (c *crashFS) tick(op, name string) error {
	c.ops++
	if !c.crashed && c.crashAt > 0 && c.ops >= c.crashAt {
		c.crashLocked()
	}
	if c.crashed {
		return errCrashed
	}
	if c.fault != nil {
		return c.fault(op, name)
	}
	return nil
}

// crashNow crashes at once (if not crashed already).
func (c *crashFS) crashNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crashed {
		c.crashLocked()
	}
}

func (c *crashFS) isCrashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

func (c *crashFS) crashLocked() {
	c.crashed = true
	ns := make(map[string]*inode, len(c.durable))
	for k, v := range c.durable {
		ns[k] = v
	}
	if c.partial && len(c.pending) > 0 {
		for _, op := range c.pending[:c.rng.IntN(len(c.pending)+1)] {
			op.apply(ns)
		}
	}
	c.image = map[string][]byte{}
	for name, ino := range ns {
		b := slices.Clone(ino.durable)
		if c.partial && len(ino.data) > len(ino.durable) && string(ino.data[:len(ino.durable)]) == string(ino.durable) {
			extra := ino.data[len(ino.durable):]
			keep := c.rng.IntN(len(extra) + 1)
			b = append(b, extra[:keep]...)
			if keep < len(extra) && c.rng.IntN(3) == 0 {
				b = append(b, make([]byte, 1+c.rng.IntN(len(extra)-keep))...)
			}
		}
		c.image[name] = b
	}
	if c.onCrash != nil {
		c.onCrash()
	}
}

// recovered returns the file system as found after the crash (or, if there
// was none, the durable state now), with nothing pending.
func (c *crashFS) recovered(seed uint64) *crashFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crashed {
		c.crashLocked()
	}
	n := newCrashFS(seed)
	for d := range c.dirs {
		n.dirs[d] = true
	}
	for name, b := range c.image {
		ino := &inode{data: slices.Clone(b), durable: slices.Clone(b)}
		n.names[name] = ino
		n.durable[name] = ino
	}
	return n
}

// get returns a copy of the current contents of name (nil if absent).
func (c *crashFS) get(name string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ino, ok := c.names[name]; ok {
		return slices.Clone(ino.data)
	}
	return nil
}

// set stores b as the durable contents of name.
func (c *crashFS) set(name string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ino := &inode{data: slices.Clone(b), durable: slices.Clone(b)}
	c.names[name] = ino
	c.durable[name] = ino
	c.dirs[filepath.Dir(name)] = true
}

// clone returns an independent copy of the current state, all durable.
func (c *crashFS) clone() *crashFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := newCrashFS(1)
	for d := range c.dirs {
		n.dirs[d] = true
	}
	for name, ino := range c.names {
		i := &inode{data: slices.Clone(ino.data), durable: slices.Clone(ino.data)}
		n.names[name] = i
		n.durable[name] = i
	}
	return n
}

func (c *crashFS) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	for n := range c.names {
		s = append(s, n)
	}
	sort.Strings(s)
	return s
}

func notExist(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} }

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.tick("open", name); err != nil {
		return nil, err
	}
	name = filepath.Clean(name)
	ino, ok := c.names[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, notExist("open", name)
	case !ok:
		dir := filepath.Dir(name)
		if !c.dirs[dir] {
			return nil, notExist("open", name)
		}
		ino = &inode{}
		c.names[name] = ino
		c.pending = append(c.pending, dirOp{dir, func(ns map[string]*inode) { ns[name] = ino }})
	}
	if flag&os.O_TRUNC != 0 {
		ino.data = nil
	}
	return &crashFile{fs: c, ino: ino, name: name, flag: flag}, nil
}

func (c *crashFS) Rename(oldpath, newpath string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.tick("rename", newpath); err != nil {
		return err
	}
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	ino, ok := c.names[oldpath]
	if !ok {
		return notExist("rename", oldpath)
	}
	delete(c.names, oldpath)
	c.names[newpath] = ino
	c.pending = append(c.pending, dirOp{filepath.Dir(newpath), func(ns map[string]*inode) {
		delete(ns, oldpath)
		ns[newpath] = ino
	}})
	return nil
}

func (c *crashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.tick("remove", name); err != nil {
		return err
	}
	name = filepath.Clean(name)
	if _, ok := c.names[name]; !ok {
		return notExist("remove", name)
	}
	delete(c.names, name)
	c.pending = append(c.pending, dirOp{filepath.Dir(name), func(ns map[string]*inode) { delete(ns, name) }})
	return nil
}

func (c *crashFS) MkdirAll(path string, perm os.FileMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return errCrashed
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		c.dirs[p] = true
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return filepath.Base(i.name) }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

func (c *crashFS) Stat(name string) (os.FileInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.tick("stat", name); err != nil {
		return nil, err
	}
	name = filepath.Clean(name)
	if ino, ok := c.names[name]; ok {
		return memInfo{name: name, size: int64(len(ino.data))}, nil
	}
	if c.dirs[name] {
		return memInfo{name: name, dir: true}, nil
	}
	return nil, notExist("stat", name)
}

func (c *crashFS) SyncDir(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.tick("syncdir", dir); err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	if !c.dirs[dir] {
		return notExist("open", dir)
	}
	rest := c.pending[:0]
	for _, op := range c.pending {
		if op.dir == dir {
			op.apply(c.durable)
		} else {
			rest = append(rest, op)
		}
	}
	c.pending = rest
	return nil
}

type crashFile struct {
	fs     *crashFS
	ino    *inode
	name   string
	flag   int
	pos    int64
	closed bool
}

func (f *crashFile) check(op string) error {
	if err := f.fs.tick(op, f.name); err != nil {
		return err
	}
	if f.closed {
		return os.ErrClosed
	}
	return nil
}

func (f *crashFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[f.pos:])
	f.pos += int64(n)
	return n, nil
}

func (f *crashFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: os.ErrPermission}
	}
	if f.flag&os.O_APPEND != 0 {
		f.pos = int64(len(f.ino.data))
	}
	if end := f.pos + int64(len(p)); end > int64(len(f.ino.data)) {
		f.ino.data = append(f.ino.data, make([]byte, end-int64(len(f.ino.data)))...)
	}
	copy(f.ino.data[f.pos:], p)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *crashFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.crashed {
		return errCrashed
	}
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	return nil
}

func (f *crashFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	f.ino.durable = slices.Clone(f.ino.data)
	return nil
}

func (f *crashFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if size < int64(len(f.ino.data)) {
		f.ino.data = slices.Clone(f.ino.data[:size])
	} else {
		f.ino.data = append(f.ino.data, make([]byte, size-int64(len(f.ino.data)))...)
	}
	return nil
}

func (f *crashFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("seek"); err != nil {
		return 0, err
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += int64(len(f.ino.data))
	}
	if offset < 0 {
		return 0, errors.New("crashfs: negative offset")
	}
	f.pos = offset
	return offset, nil
}
