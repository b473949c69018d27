//go:build unix

package session

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/internal/taint"
)

// The on-disk layout of a client session, in STATE/sessions/PID-START/:
//
//	key           the 32-byte hash key the session's stores share (0600)
//	gen           8 bytes, mapped shared: bumped after every record, so a
//	              reader with nothing new to read makes no system call
//	rec-PID-NONCE one append-only file per process, of frames
//	own-PID-NONCE the paths that process protects as Bouncer's own files
//	              (a JSON list of strings), made whole once (PublishOwn)
//
// A frame is: "BNR1", kind (1 byte), server length (2), hash count (4),
// the server name, the hashes (8 bytes each, little endian), then a
// CRC-32C of all that. Each frame is written with one write(2) on an
// O_APPEND file. A reader takes only whole frames with a good checksum; a
// frame cut short by a crash, or one that fails its checksum, ends what is
// read from that file.

const (
	frameMagic     = "BNR1"
	frameHeader    = 4 + 1 + 2 + 4
	maxFrameHashes = 8192 // 64 KiB of hashes: one write stays well under what appends keep whole
	maxServerName  = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// shared is this process's view of a session directory.
type shared struct {
	dir  string
	self string // our record file's name
	out  *os.File
	gen  []byte // the mapped counter
	log  func(string)

	smu    sync.Mutex
	shared map[*taint.Store]bool

	rmu     sync.Mutex // one reader at a time
	lastGen uint64
	peers   map[string]*peer
	own     map[string][]string // what each other process published, by file
	ownList []string            // own's paths, in file name order
	ownVer  uint64              // counts the files read into own

	broken atomic.Bool
	said   sync.Once
}

// peer is the read position in one other process's record file.
type peer struct {
	f    *os.File
	off  int64
	buf  []byte // bytes read past the last whole frame
	dead bool   // a bad frame: nothing more is read from this file
}

func (d *shared) counter() *uint64 { return (*uint64)(unsafe.Pointer(&d.gen[0])) }

// failed reports whether the shared directory became unusable.
func (d *shared) failed() bool { return d.broken.Load() }

// fail marks the directory unusable and says so once.
func (d *shared) fail(err error) {
	d.broken.Store(true)
	d.said.Do(func() {
		if d.log != nil {
			d.log(fmt.Sprintf("the client session in %s can't be used (%v); this proxy goes on with what it records itself, so a destination another server's output held is asked about, not denied", d.dir, err))
		}
	})
}

// share makes st append what it records to our file.
func (d *shared) share(kind byte, server string, st *taint.Store) {
	d.smu.Lock()
	defer d.smu.Unlock()
	if d.shared[st] {
		return
	}
	d.shared[st] = true
	st.OnRecord(func(hs []uint64) { d.write(kind, server, hs) })
}

// write appends frames holding hs and bumps the counter.
func (d *shared) write(kind byte, server string, hs []uint64) {
	if d.failed() || len(server) > maxServerName {
		return
	}
	for len(hs) > 0 {
		n := len(hs)
		if n > maxFrameHashes {
			n = maxFrameHashes
		}
		if _, err := d.out.Write(encodeFrame(kind, server, hs[:n])); err != nil {
			d.fail(fmt.Errorf("writing %s: %w", d.self, err))
			return
		}
		hs = hs[n:]
	}
	atomic.AddUint64(d.counter(), 1)
}

func encodeFrame(kind byte, server string, hs []uint64) []byte {
	b := make([]byte, 0, frameHeader+len(server)+8*len(hs)+4)
	b = append(b, frameMagic...)
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(server)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hs)))
	b = append(b, server...)
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeFrame reads one frame from the front of b. It returns how many
// bytes it took; 0 with a nil error means b holds only part of a frame;
// an error means b does not start with a valid frame.
func decodeFrame(b []byte) (n int, kind byte, server string, hs []uint64, err error) {
	if len(b) < frameHeader {
		if !bytes.HasPrefix([]byte(frameMagic), b[:min(len(b), 4)]) {
			return 0, 0, "", nil, errors.New("bad frame magic")
		}
		return 0, 0, "", nil, nil
	}
	if string(b[:4]) != frameMagic {
		return 0, 0, "", nil, errors.New("bad frame magic")
	}
	kind = b[4]
	sl := int(binary.LittleEndian.Uint16(b[5:]))
	cnt := int(binary.LittleEndian.Uint32(b[7:]))
	if sl > maxServerName || cnt > maxFrameHashes {
		return 0, 0, "", nil, errors.New("frame too large")
	}
	size := frameHeader + sl + 8*cnt + 4
	if len(b) < size {
		return 0, 0, "", nil, nil
	}
	if crc32.Checksum(b[:size-4], castagnoli) != binary.LittleEndian.Uint32(b[size-4:]) {
		return 0, 0, "", nil, errors.New("bad frame checksum")
	}
	switch kind {
	case kindUntrusted, kindTrusted, kindPrompt, kindDirectory, kindAnchorTyped, kindAnchorRecord:
	default:
		return 0, 0, "", nil, fmt.Errorf("unknown record kind %q", kind)
	}
	server = string(b[frameHeader : frameHeader+sl])
	hs = make([]uint64, cnt)
	for i := range hs {
		hs[i] = binary.LittleEndian.Uint64(b[frameHeader+sl+8*i:])
	}
	return size, kind, server, hs, nil
}

// sync reads what the other processes appended since the last look and
// hands it to add. With nothing new (the counter unchanged) it makes no
// system call.
func (d *shared) sync(add func(kind byte, server string, hs []uint64)) {
	if d.failed() {
		return
	}
	g := atomic.LoadUint64(d.counter())
	d.rmu.Lock()
	defer d.rmu.Unlock()
	if g == d.lastGen {
		return
	}
	// Read the counter before the files: a record that lands after this
	// bumps it again, and the next sync reads it.
	d.lastGen = g
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		d.fail(err)
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "own-") && name != d.ownName() {
			d.readOwn(name)
			continue
		}
		if !strings.HasPrefix(name, "rec-") || name == d.self {
			continue
		}
		p := d.peers[name]
		if p == nil {
			f, err := os.Open(filepath.Join(d.dir, name))
			if err != nil {
				continue // gone meanwhile, or not ours to read
			}
			p = &peer{f: f}
			d.peers[name] = p
		}
		d.readPeer(p, add)
	}
}

func (d *shared) readPeer(p *peer, add func(kind byte, server string, hs []uint64)) {
	if p.dead {
		return
	}
	var chunk [64 << 10]byte
	for {
		n, err := p.f.ReadAt(chunk[:], p.off)
		p.off += int64(n)
		p.buf = append(p.buf, chunk[:n]...)
		for {
			used, kind, server, hs, ferr := decodeFrame(p.buf)
			if ferr != nil {
				p.dead, p.buf = true, nil
				return
			}
			if used == 0 {
				break
			}
			add(kind, server, hs)
			p.buf = p.buf[used:]
		}
		if err != nil || n < len(chunk) {
			if len(p.buf) == 0 {
				p.buf = nil
			}
			if err != nil && !errors.Is(err, io.EOF) {
				p.dead = true
			}
			return
		}
	}
}

// Limits on a process's list of own files: a handful of policy, trust,
// config and hook files, with room.
const (
	maxOwnFile  = 1 << 20
	maxOwnPaths = 4096
)

// ownName is the name of this process's own-files list.
func (d *shared) ownName() string { return "own-" + strings.TrimPrefix(d.self, "rec-") }

// publishOwn writes this process's own-files list and tells the others.
func (d *shared) publishOwn(paths []string) error {
	if d.failed() {
		return nil
	}
	if len(paths) > maxOwnPaths {
		return fmt.Errorf("%d own files are more than %d", len(paths), maxOwnPaths)
	}
	b, err := json.Marshal(paths)
	if err != nil {
		return err
	}
	if err := statefile.Create(filepath.Join(d.dir, d.ownName()), b); err != nil {
		return fmt.Errorf("publishing the own files of this proxy in %s: %w", d.dir, err)
	}
	atomic.AddUint64(d.counter(), 1)
	return nil
}

// readOwn reads another process's own-files list, once: each is made
// whole, once. A list that can't be read, or holds anything but absolute
// paths, is passed over: it could only have added paths to protect.
func (d *shared) readOwn(name string) {
	if _, seen := d.own[name]; seen {
		return
	}
	d.own[name] = nil
	b, err := statefile.ReadOwned(filepath.Join(d.dir, name), maxOwnFile)
	if err != nil {
		return
	}
	var paths []string
	if json.Unmarshal(b, &paths) != nil || len(paths) > maxOwnPaths {
		return
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return
		}
	}
	d.own[name] = paths
	d.ownVer++
	names := make([]string, 0, len(d.own))
	for n := range d.own {
		names = append(names, n)
	}
	sort.Strings(names)
	d.ownList = nil
	for _, n := range names {
		d.ownList = append(d.ownList, d.own[n]...)
	}
}

// ownFiles returns what the other processes published, as last read.
func (d *shared) ownFiles() ([]string, uint64) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	return d.ownList, d.ownVer
}

// openShared joins (or starts) the session directory dir.
func openShared(dir string, log func(string)) (*shared, [taint.KeySize]byte, error) {
	var key [taint.KeySize]byte
	if err := statefile.Dir(dir); err != nil {
		return nil, key, fmt.Errorf("%s: %w", dir, err)
	}
	key, err := loadKey(dir)
	if err != nil {
		return nil, key, err
	}
	gen, err := mapCounter(filepath.Join(dir, "gen"))
	if err != nil {
		return nil, key, err
	}
	var nonce [6]byte
	if _, err := randRead(nonce[:]); err != nil {
		unix.Munmap(gen)
		return nil, key, err
	}
	self := fmt.Sprintf("rec-%d-%x", os.Getpid(), nonce)
	out, err := os.OpenFile(filepath.Join(dir, self), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		unix.Munmap(gen)
		return nil, key, err
	}
	d := &shared{dir: dir, self: self, out: out, gen: gen, log: log,
		shared: map[*taint.Store]bool{}, peers: map[string]*peer{}, own: map[string][]string{}, lastGen: ^uint64(0)}
	return d, key, nil
}

// loadKey reads the session's key, or makes it if this process is the
// first. statefile.Create makes it whole, once: two first processes agree
// on one, and a reader never sees half a key.
func loadKey(dir string) ([taint.KeySize]byte, error) {
	var key [taint.KeySize]byte
	path := filepath.Join(dir, "key")
	for attempt := 0; attempt < 2; attempt++ {
		b, err := statefile.ReadOwned(path, taint.KeySize)
		if err == nil {
			if len(b) != taint.KeySize {
				return key, fmt.Errorf("%s: %d bytes, not %d", path, len(b), taint.KeySize)
			}
			copy(key[:], b)
			return key, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return key, fmt.Errorf("%s: %w", path, err)
		}
		if _, err := randRead(key[:]); err != nil {
			return key, err
		}
		err = statefile.Create(path, key[:])
		if err == nil {
			return key, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return key, fmt.Errorf("%s: %w", path, err)
		}
		// Another process made its key first: read that one.
	}
	return key, fmt.Errorf("%s: could not be read or made", path)
}

// mapCounter maps the 8-byte counter file shared.
func mapCounter(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := statefile.Check(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 8 {
		if err := f.Truncate(8); err != nil {
			return nil, err
		}
	}
	return unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

var randRead = func(b []byte) (int, error) { return rand.Read(b) }

// dirName is the session directory's name for a client.
func dirName(c Client) string { return strconv.Itoa(c.PID) + "-" + strconv.FormatUint(c.Start, 10) }
