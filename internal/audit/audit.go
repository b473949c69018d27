// Package audit appends one JSON line per verdict to an append-only log, each
// line chained to the one before it by hash, and reads and verifies such logs.
//
// The chain: every line carries "prev", the SHA-256 of the previous line's
// exact bytes (without its newline); the first line carries the genesis value
// (64 zeros). Editing, removing or reordering a line breaks the chain at the
// line after it, which VerifyFile names. Removing lines from the end,
// editing the very last line, or replacing the whole log with another chain
// leaves a valid chain: the head file beside the log (head.go), which every
// Append rewrites with the log's length and its first and last hashes,
// catches that on this machine, and a head hash kept elsewhere (see
// Report.Head and HasHead) catches it against someone who can rewrite both.
package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/jsontext"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	unix "github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// Entry is one audit line. The first seven fields are fixed by the contract;
// the rest are ours. Prev is filled in by Append.
type Entry struct {
	TS     time.Time       `json:"ts"`
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	// ArgsForm says how Args records the arguments: "" as the JSON they
	// were, ArgsText as a JSON string holding their text (they were not
	// valid JSON). Marshal sets ArgsText itself.
	ArgsForm string `json:"args_form,omitempty"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason"`
	Rule     string `json:"rule"`
	// Session identifies one proxy process's session (bouncer listen: the
	// MCP session's id).
	Session string `json:"session,omitempty"`
	// User and Replica name, on a line of bouncer listen, who signed in
	// and which replica judged the call (each replica keeps its own
	// chain).
	User    string `json:"user,omitempty"`
	Replica string `json:"replica,omitempty"`
	// ID is the JSON-RPC id of the tools/call, as sent.
	ID json.RawMessage `json:"id,omitempty"`
	// Code is the one-time approval code issued or redeemed, if any.
	Code string `json:"code,omitempty"`
	// Taint, on a deny because a destination came from untrusted output,
	// names it and the server whose output held it: what `bouncer trust
	// add` offers a person to review.
	Taint *Taint `json:"taint,omitempty"`
	// Dests are the destinations the sink gate checked in the call (at
	// most 16), for `bouncer log` and `bouncer policy suggest`.
	Dests []Dest `json:"dests,omitempty"`
	// Policy is the digest of the effective policy set that decided the
	// line (policy.Policy.Digest): which policy made each decision.
	Policy string `json:"policy,omitempty"`
	// Enforced is false on a line written in observe mode (bouncer run
	// --observe): the verdict was decided but not acted on; the call was
	// forwarded whatever it was. Nil means enforced.
	Enforced *bool `json:"enforced,omitempty"`
	// Prev is "sha256:HEX" of the previous line's bytes (without its
	// newline), or "sha256:" followed by 64 zeros for the first line.
	Prev string `json:"prev"`
}

// Dest is one destination of a call: the argument and its value.
type Dest struct {
	Param string `json:"param"`
	Value string `json:"value"`
	// Vouch names the way that vouched for it on an allowed call, as the
	// table of ways (package vouch) names it; empty otherwise.
	Vouch string `json:"vouch,omitempty"`
}

// Observed reports whether the line was written in observe mode: decided,
// not enforced.
func (e Entry) Observed() bool { return e.Enforced != nil && !*e.Enforced }

// Declined reports whether the line ends an ask with a human's no: they
// declined the client's question or dismissed it (the proxy's reasons end
// so).
func (e Entry) Declined() bool {
	return e.Verdict == "deny" && e.Rule == "approval" &&
		(strings.HasSuffix(e.Reason, DeclinedSuffix) || strings.HasSuffix(e.Reason, DismissedSuffix))
}

// The ends of the reason of a line whose ask a human said no to, as the
// proxy writes them.
const (
	DeclinedSuffix  = "; the human declined"
	DismissedSuffix = "; the human dismissed the question"
)

// Taint is the destination of a taint deny.
type Taint struct {
	Param       string `json:"param"`
	Destination string `json:"destination"`
	// Source is the server whose output held it ("" when unknown).
	Source string `json:"source,omitempty"`
}

// ArgsText is the ArgsForm of a line whose arguments were not valid JSON
// (a malformed call is audited too): args is then a JSON string holding
// their text, with each byte that isn't UTF-8 replaced by U+FFFD, rather
// than bytes that would make the line unreadable.
const ArgsText = "text"

// ArgsElided is the ArgsForm of a line whose arguments were too large to
// record whole (more than 64 KiB encoded): every string longer than 1 KiB
// is its first 256 bytes followed by "…[bouncer: N bytes, sha256:HEX]",
// with N and HEX those of the whole string. The rest (keys, numbers, short
// strings such as paths and destinations) is kept as sent.
const ArgsElided = "elided"

// Genesis is the prev value of the first line of a log.
const Genesis = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// TimeFormat is how ts is written: UTC, always with nine fractional digits,
// so that lines sort as text and the fraction is never dropped (Go's
// RFC3339Nano drops trailing zeros, and with them the fraction at .000).
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// Hash returns the chain hash of one line's bytes (without its newline), in
// the form used by prev.
func Hash(line []byte) string {
	sum := sha256.Sum256(line)
	var b strings.Builder
	b.Grow(len("sha256:") + 2*len(sum))
	b.WriteString("sha256:")
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	b.Write(h[:])
	return b.String()
}

// Log appends to one audit file. It is safe for concurrent use, and several
// processes may append to the same file: each Append takes an exclusive file
// lock, reads the last line to chain to, and writes one line.
type Log struct {
	path string
	mu   sync.Mutex // flock does not exclude goroutines sharing one fd
	f    *os.File
	now  func() time.Time

	// Lines reach the kernel (write) before Append returns; the syncer
	// then flushes them to disk in the background, one fdatasync for every
	// batch of lines, so a call does not wait for the disk. fmu keeps the
	// file from being closed under a sync; syncErr, once set, fails every
	// later Append, which denies the calls.
	fmu     sync.Mutex
	kick    chan struct{}
	stop    chan struct{} // closed by Close
	done    chan struct{}
	written atomic.Uint64 // commits written so far, for the syncer
	syncErr atomic.Pointer[error]
	syncs   atomic.Int64 // background syncs done, for tests

	// tail is the file as this Log's last write left it, and hd the head
	// that write recorded. While the file is still that file at that size,
	// nobody has appended since: the next line chains to hd.Last without
	// reading the file or the head file back. hdOK is false when hd must be
	// worked out again (reconcile). Guarded by mu.
	tail struct {
		dev, ino uint64
		size     int64
	}
	hd   Head
	hdOK bool

	// id is the device and inode of f, once ok (lock). Guarded by mu.
	id struct {
		dev, ino uint64
		ok       bool
	}

	// The head file (head.go): its path, the open file, and the buffers
	// records are made and read in. hf is guarded by mu, and by fmu
	// against the syncer. headErr, once set, fails every later Append, as
	// syncErr does.
	hpath      string
	hf         *os.File
	hbuf, rbuf []byte // a record being made, one being read
	wbuf       []byte // the lines being written (guarded by mu)
	headErr    error
	// marks caches the encoding of the head's marks (encodeMarks): they
	// are the same record after record, and are encoded again only when
	// reconcile made new ones.
	marks struct {
		of  [3]*Mark
		enc []byte
	}
}

// Open opens (creating 0600, and its directory 0700) the audit file at path.
// An existing file must be a regular file owned by the current user that no
// other user can read or write: the log holds full call arguments (mail
// bodies included), and a log others can write is no evidence. Open refuses
// anything else rather than changing the file's mode behind the user's back.
func Open(path string) (*Log, error) {
	l := &Log{path: path, now: time.Now}
	if err := statefile.Dir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("audit %s: its directory: %w", path, err)
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	l.hpath = HeadPath(path)
	hf, err := openHead(l.hpath)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.f, l.hf = f, hf
	l.kick = make(chan struct{}, 1)
	l.stop = make(chan struct{})
	l.done = make(chan struct{})
	go l.syncer()
	return l, nil
}

// SyncInterval is the least time between two background syncs. Lines
// written in between share the next sync: under a steady stream of calls
// the disk sees one fdatasync per interval instead of one per call (each
// costs a virtual disk 0.3-1 ms and wakes the host), and a line written
// after a quiet spell is synced at once. What it trades is bounded: a line
// is in the kernel before its call is forwarded, so only a machine crash or
// power loss can lose it, and then at most the lines of the last interval.
const SyncInterval = 20 * time.Millisecond

// syncer flushes written lines to disk until Close.
func (l *Log) syncer() {
	defer close(l.done)
	var last time.Time
	var synced uint64 // l.written when the last sync began
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			return // Close does the last sync itself
		}
		if l.written.Load() == synced {
			continue // a kick of lines the last sync already covered
		}
		if wait := SyncInterval - time.Since(last); wait > 0 && !l.pause(wait) {
			return
		}
		synced = l.written.Load()
		l.fmu.Lock()
		if l.f != nil {
			_ = l.datasync() // a failure is kept in syncErr
		}
		l.fmu.Unlock()
		l.syncs.Add(1)
		last = time.Now()
	}
}

// pause waits for d, or until Close, and reports whether it was not
// closed. It does not take the kicks that arrive meanwhile: an appender's
// kick then only fills the channel's one slot, and wakes nobody (a
// goroutine woken per commit cost a thread wake-up on every lone call).
// The sync that follows covers their lines; the kick left in the slot is
// passed over if no line came after that sync began.
func (l *Log) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
		return false
	}
}

// datasync flushes the log, then its head file, to disk: the head goes
// with the lines it counts, and is no more durable than they are. The
// caller holds fmu.
//
// A failure fails every later Append, whoever asked for the sync (the
// background syncer, Sync for a readiness check, Close): after a failed
// flush the kernel may have dropped the lines it could not write, and a
// later flush that succeeds says nothing of them.
func (l *Log) datasync() error {
	err := datasync(l.f)
	if err != nil {
		err = fmt.Errorf("audit %s: syncing to disk: %w", l.path, err)
	} else if err = datasync(l.hf); err != nil {
		err = fmt.Errorf("audit head %s: syncing to disk: %w", l.hpath, err)
	}
	if err != nil {
		l.syncErr.CompareAndSwap(nil, &err)
	}
	return err
}

// Sync waits until every line appended so far is on disk.
func (l *Log) Sync() error {
	if l == nil {
		return errors.New("audit: log is not open")
	}
	l.fmu.Lock()
	defer l.fmu.Unlock()
	if l.f == nil {
		return errors.New("audit: log is closed")
	}
	if err := l.datasync(); err != nil {
		return err
	}
	if p := l.syncErr.Load(); p != nil {
		return *p
	}
	return nil
}

// openFile opens the log for appending and checks who may touch it
// (statefile.CheckPrivate). The log is appended to, never replaced, so it
// keeps its own open: O_APPEND, and a symbolic link is followed.
func openFile(path string) (*os.File, error) {
	f, err := statefile.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	if err := statefile.CheckPrivate(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	return f, nil
}

// Append writes e as one line, chained to the last line in the file, and
// returns only after the line is written to the file (in the kernel, so it
// survives the proxy being killed); the flush to disk follows in the
// background, and a failed flush fails every later Append. If it returns an
// error the caller must deny the call it describes.
//
// A zero TS is set to the current time; e.Prev is ignored and computed. If
// the file does not end with a newline (a write cut short by a crash or a
// full disk), Append first ends that partial line and chains to its bytes:
// the damage stays visible to VerifyFile as one bad line, and the log keeps
// working instead of denying every call from then on.
//
// Under the same lock, after the line, Append records the log's new head
// in the head file (head.go). A failure to write it fails every later
// Append, as a failed flush does: the line is already written, and a log
// whose head stops moving would look cut short.
func (l *Log) Append(e Entry) error {
	es := [1]Entry{e}
	return l.AppendAll(es[:])
}

// AppendAll is Append for several lines, in order, each chained to the
// one before it (it fills in their Prev, and a zero TS): the group commit
// of the calls a proxy decided together. They are written under one lock,
// with one write and one head record, and AppendAll returns only once all
// of them are in the file. An error means none of the calls they describe
// may go on (some of the lines may be written: a line never says more than
// that its call was decided).
func (l *Log) AppendAll(es []Entry) error {
	if l == nil {
		return errors.New("audit: log is not open")
	}
	for i := range es {
		if es[i].TS.IsZero() {
			es[i].TS = l.now()
		}
		if !verdicts[es[i].Verdict] {
			// A line Parse would reject later is no evidence; refuse it
			// now, which denies the call.
			return fmt.Errorf("audit %s: verdict %q is not allow, deny or ask", l.path, es[i].Verdict)
		}
	}
	if p := l.syncErr.Load(); p != nil {
		return *p
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("audit %s: log is closed", l.path)
	}
	if l.headErr != nil {
		return l.headErr
	}
	f, st, unlock, err := l.lock()
	if err != nil {
		return fmt.Errorf("audit %s: %w", l.path, err)
	}
	defer unlock()
	if err := l.checkHeadFile(); err != nil {
		return err
	}

	var partial bool
	if !l.hdOK || l.tail.dev != uint64(st.Dev) || l.tail.ino != st.Ino || l.tail.size != st.Size {
		l.hdOK = false
		hd, p, err := l.reconcile(f, st.Size, uint64(st.Ino))
		if err != nil {
			return fmt.Errorf("audit %s: reading the log back: %w", l.path, err)
		}
		l.hd, l.hdOK, partial = *hd, true, p
	}
	buf := l.wbuf[:0]
	if partial {
		buf = append(buf, '\n')
	}
	h := l.hd // the head once the lines are written
	for i := range es {
		es[i].Prev = h.next()
		start := len(buf)
		if buf, err = appendLine(buf, &es[i]); err != nil {
			return fmt.Errorf("audit %s: %w", l.path, err)
		}
		h.Last = Hash(buf[start:])
		if h.Lines == 0 {
			h.First = h.Last
		}
		h.Lines++
		buf = append(buf, '\n')
	}
	if cap(buf) <= maxKeptLines {
		l.wbuf = buf
	}
	// One write under the lock: with O_APPEND the kernel places it at the
	// end, and no other appender can interleave.
	n, err := f.Write(buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		l.hdOK = false
		return fmt.Errorf("audit %s: writing: %w", l.path, err)
	}
	h.Size = st.Size + int64(n)
	l.hd = h
	l.tail.dev, l.tail.ino, l.tail.size = uint64(st.Dev), st.Ino, h.Size
	if err := l.writeHead(&l.hd); err != nil {
		// The lines are written and their calls may go on; the next is
		// denied.
		l.hdOK = false
		l.headErr = fmt.Errorf("audit head %s: writing: %w", l.hpath, err)
	}
	l.written.Add(1)
	select {
	case l.kick <- struct{}{}:
	default: // a sync is already due; it covers these lines too
	}
	return nil
}

// maxKeptLines is the largest line buffer a Log keeps for the next
// append; one that grew past it (a call with large arguments) is let go.
const maxKeptLines = 64 << 10

// lock takes the exclusive lock on the file now at l.path. If the file was
// renamed or removed (log rotation) since it was opened, it opens the new one
// instead of writing on into a file nobody reads. The log is its own lock
// (statefile.LockOpen), so readers can hold it shared.
//
// What it returns is stat(2) of the path, taken under the lock: while the
// path names the open file (the same device and inode, which an open
// file's never change), that is the open file's size too, so the file is
// not looked at a second time (an fstat on every commit, a system call on
// every lone call's path).
func (l *Log) lock() (*os.File, unix.Stat_t, func(), error) {
	var st unix.Stat_t
	for tries := 0; ; tries++ {
		if !l.id.ok {
			var have unix.Stat_t
			if err := unix.Fstat(int(l.f.Fd()), &have); err != nil {
				return nil, st, nil, err
			}
			l.id.dev, l.id.ino, l.id.ok = uint64(have.Dev), have.Ino, true
		}
		unlock, err := statefile.LockOpen(l.f, false)
		if err != nil {
			return nil, st, nil, err
		}
		err = unix.Stat(l.path, &st)
		if err == nil && uint64(st.Dev) == l.id.dev && st.Ino == l.id.ino {
			return l.f, st, unlock, nil
		}
		unlock()
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return nil, st, nil, err
		}
		if tries >= 3 {
			return nil, st, nil, errors.New("the file keeps being replaced while opening it")
		}
		f, err := openFile(l.path)
		if err != nil {
			return nil, st, nil, err
		}
		l.fmu.Lock()
		datasync(l.f) // the old file's last lines reach the disk
		l.f.Close()
		l.f = f
		l.id.ok = false
		l.fmu.Unlock()
	}
}

// lastLineHash returns the hash of the last line of f, whose size is
// size (Genesis for an empty file), and whether that line lacks its
// newline. It reads backwards from the end in blocks, so a large last line
// costs one pass over it and no memory beyond a block.
func lastLineHash(f *os.File, size int64) (prev string, partial bool, err error) {
	if size == 0 {
		return Genesis, false, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return "", false, err
	}
	end := size // the last line is [start, end)
	if last[0] == '\n' {
		end = size - 1
	} else {
		partial = true
	}
	// Most lines fit the first small block; long ones (a mail body) get
	// larger blocks, up to 64 KiB.
	block := int64(4 << 10)
	start := int64(0)
	for pos := end; pos > 0; {
		n := block
		if pos < n {
			n = pos
		}
		chunk := make([]byte, n)
		if _, err := f.ReadAt(chunk, pos-n); err != nil {
			return "", false, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			start = pos - n + int64(i) + 1
			break
		}
		pos -= n
		if block < 64<<10 {
			block *= 2
		}
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, start, end-start), make([]byte, 8<<10)); err != nil {
		return "", false, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), partial, nil
}

// Close flushes every line to disk and releases the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	close(l.stop)
	<-l.done
	l.fmu.Lock()
	defer l.fmu.Unlock()
	err := l.datasync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if cerr := l.hf.Close(); err == nil {
		err = cerr
	}
	l.f, l.hf = nil, nil
	if p := l.syncErr.Load(); err == nil && p != nil {
		err = *p
	}
	return err
}

// Marshal encodes e as one audit line, without the newline. It is the one
// place lines are made, and every line it returns is valid UTF-8 and
// strict JSON (RFC 8259 with no lone surrogate escapes, I-JSON's rule), so
// that any JSON reader can read the log:
//
//   - Args are compacted but not otherwise changed, and no HTML escaping is
//     applied, so they read back as sent, except that bytes that are not
//     UTF-8 and \u escapes of lone surrogates become \ufffd, as Go's
//     encoding/json reads them (and so as the engine judged them), and
//     U+0085, U+2028 and U+2029 are written as escapes (the same string to
//     a JSON reader, but line breaks to some line splitters). nil Args are
//     written as null.
//   - Args that are not valid JSON are written as a JSON string of their
//     text, with args_form "text" (ArgsText), instead of failing the line.
//   - Strings that are not UTF-8 (server, tool, reason...) have each bad
//     byte written as \ufffd.
//   - An ID that isn't valid JSON is an error (the proxy makes IDs itself).
//
// The hash chain is over the bytes Marshal returns, so none of this
// affects verification.
func Marshal(e Entry) ([]byte, error) { return appendLine(nil, &e) }

// appendLine appends Marshal's line for e to buf. The line is written
// member by member, in the order and with the omissions encoding/json
// would give the Entry's tags (FuzzMarshalEncodingJSON holds the two
// together), since it is made for every call.
func appendLine(buf []byte, e *Entry) ([]byte, error) {
	if len(e.ID) > 0 && !json.Valid(e.ID) {
		return buf, fmt.Errorf("encoding entry for %q: the id is not valid JSON", e.Tool)
	}
	start := len(buf)
	buf = append(buf, `{"ts":"`...)
	buf = e.TS.UTC().AppendFormat(buf, TimeFormat)
	buf = append(buf, `","server":`...)
	buf = jsontext.AppendQuoted(buf, e.Server)
	buf = append(buf, `,"tool":`...)
	buf = jsontext.AppendQuoted(buf, e.Tool)
	buf = append(buf, `,"args":`...)
	form := e.ArgsForm
	switch {
	case len(e.Args) == 0:
		buf = append(buf, "null"...)
	default:
		b := bytes.NewBuffer(buf)
		if json.Compact(b, e.Args) == nil {
			buf = b.Bytes()
			break
		}
		// Not JSON: the text, as a string.
		buf = jsontext.AppendQuoted(buf, string(e.Args))
		form = ArgsText
	}
	if form != "" {
		buf = append(buf, `,"args_form":`...)
		buf = jsontext.AppendQuoted(buf, form)
	}
	buf = append(buf, `,"verdict":`...)
	buf = jsontext.AppendQuoted(buf, e.Verdict)
	buf = append(buf, `,"reason":`...)
	buf = jsontext.AppendQuoted(buf, e.Reason)
	buf = append(buf, `,"rule":`...)
	buf = jsontext.AppendQuoted(buf, e.Rule)
	buf = appendOpt(buf, `,"session":`, e.Session)
	buf = appendOpt(buf, `,"user":`, e.User)
	buf = appendOpt(buf, `,"replica":`, e.Replica)
	if len(e.ID) > 0 {
		buf = append(buf, `,"id":`...)
		b := bytes.NewBuffer(buf)
		_ = json.Compact(b, e.ID) // valid: checked above
		buf = b.Bytes()
	}
	buf = appendOpt(buf, `,"code":`, e.Code)
	if t := e.Taint; t != nil {
		buf = append(buf, `,"taint":{"param":`...)
		buf = jsontext.AppendQuoted(buf, t.Param)
		buf = append(buf, `,"destination":`...)
		buf = jsontext.AppendQuoted(buf, t.Destination)
		buf = appendOpt(buf, `,"source":`, t.Source)
		buf = append(buf, '}')
	}
	if len(e.Dests) > 0 {
		buf = append(buf, `,"dests":[`...)
		for i, d := range e.Dests {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"param":`...)
			buf = jsontext.AppendQuoted(buf, d.Param)
			buf = append(buf, `,"value":`...)
			buf = jsontext.AppendQuoted(buf, d.Value)
			buf = appendOpt(buf, `,"vouch":`, d.Vouch)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	buf = appendOpt(buf, `,"policy":`, e.Policy)
	if e.Enforced != nil {
		buf = append(buf, `,"enforced":`...)
		buf = strconv.AppendBool(buf, *e.Enforced)
	}
	buf = append(buf, `,"prev":`...)
	buf = jsontext.AppendQuoted(buf, e.Prev)
	buf = append(buf, '}')
	line := strictStrings(buf[start:])
	// Neither can happen after the above; be sure, since a bad line would
	// be written for good.
	if bytes.IndexByte(line, '\n') >= 0 {
		return buf[:start], errors.New("encoded entry spans lines")
	}
	if !utf8.Valid(line) {
		return buf[:start], errors.New("encoded entry is not valid UTF-8")
	}
	if len(line) > 0 && &line[0] != &buf[start] {
		buf = append(buf[:start], line...) // strictStrings rewrote it
	}
	return buf, nil
}

// appendOpt appends the member key (with its comma and colon) and the
// string s, unless s is empty (an omitempty field).
func appendOpt(buf []byte, key, s string) []byte {
	if s == "" {
		return buf
	}
	return jsontext.AppendQuoted(append(buf, key...), s)
}

// strictStrings rewrites, inside the strings of a valid JSON text, each
// byte that isn't part of valid UTF-8 and each \u escape of a lone
// surrogate as \ufffd (what Go's encoding/json decodes them to), and
// U+0085, U+2028 and U+2029 as \u escapes. It returns line itself when
// there is nothing to change.
func strictStrings(line []byte) []byte {
	if !bytes.Contains(line, []byte(`\u`)) && ascii(line) {
		return line // the usual line: nothing to look at
	}
	var out []byte // nil until something changes
	done := 0      // line[:done] is in out
	put := func(at, next int, with string) {
		out = append(append(out, line[done:at]...), with...)
		done = next
	}
	inString := false
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case !inString:
			inString = c == '"'
			i++
		case c == '"':
			inString = false
			i++
		case c == '\\' && i+1 < len(line) && line[i+1] == 'u':
			// line is valid JSON, so the escape is.
			r, n, _ := jsontext.UEscape(line[i:])
			if utf16.IsSurrogate(r) {
				put(i, i+n, `\ufffd`) // a lone surrogate
			}
			i += n
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(line[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				put(i, i+1, `\ufffd`)
			case r == 0x85 || r == 0x2028 || r == 0x2029:
				put(i, i+size, fmt.Sprintf(`\u%04x`, r))
			}
			i += size
		}
	}
	if out == nil {
		return line
	}
	return append(out, line[done:]...)
}

// ascii reports a text of ASCII bytes only, eight at a time.
func ascii(b []byte) bool {
	for ; len(b) >= 8; b = b[8:] {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// LineError is a problem with one line of a log.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string {
	if e.Line == 0 { // the log as a whole
		return e.Err.Error()
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// Verdicts a line may carry.
var verdicts = map[string]bool{"allow": true, "deny": true, "ask": true}

// Parse decodes one audit line (without its newline). Unknown fields are
// ignored, so newer logs stay readable; a line that isn't a JSON object, has
// no valid ts, or has a verdict other than allow, deny or ask is an error.
func Parse(line []byte) (Entry, error) {
	var e Entry
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return e, errors.New("empty line")
	}
	if trimmed[0] != '{' {
		return e, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &e); err != nil {
		return Entry{}, fmt.Errorf("not a valid audit entry: %w", err)
	}
	if err := checkKeys(trimmed); err != nil {
		return Entry{}, err
	}
	if e.TS.IsZero() {
		return Entry{}, errors.New("no ts")
	}
	if !verdicts[e.Verdict] {
		return Entry{}, fmt.Errorf("verdict %q is not allow, deny or ask", e.Verdict)
	}
	return e, nil
}

// Read parses the lines of r in order and calls fn for each, one line in
// memory at a time. It stops at the first malformed line with a *LineError,
// or at the first error fn returns (passed through unchanged).
func Read(r io.Reader, fn func(line int, e Entry) error) error {
	return Scan(r, func(n int, e Entry, err error) error {
		if err != nil {
			return err
		}
		return fn(n, e)
	})
}

// Scan is Read for callers that can live with bad lines (a review of a log
// a crash cut short): fn gets every line, with a *LineError instead of an
// entry for one that doesn't parse, and Scan goes on while fn returns nil.
func Scan(r io.Reader, fn func(line int, e Entry, err error) error) error {
	return eachLine(r, func(n int, line []byte, _ bool) error {
		e, err := Parse(line)
		if err != nil {
			return fn(n, Entry{}, &LineError{Line: n, Err: err})
		}
		return fn(n, e, nil)
	})
}

// eachLine calls fn with every line of r (without its newline); last
// reports a final line that had no newline.
func eachLine(r io.Reader, fn func(n int, line []byte, noNewline bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		noNewline := err == io.EOF
		if !noNewline {
			line = line[:len(line)-1]
		}
		if ferr := fn(n, line, noNewline); ferr != nil {
			return ferr
		}
		if noNewline {
			return nil
		}
	}
}

// ReadFile reads every line of an audit file. A malformed line is an error
// naming its line number.
func ReadFile(path string) ([]Entry, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	defer f.Close()
	var out []Entry
	err = Read(f, func(_ int, e Entry) error { out = append(out, e); return nil })
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	return out, nil
}

// Problem is one place where a log fails verification.
type Problem struct {
	Line int    // 1-based; 0 for the log as a whole (what its head file records)
	Msg  string // what is wrong there
	// Anchor: found against the head file, not in the chain itself (the
	// chain may be intact: a log replaced whole by another chain).
	Anchor bool
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Msg
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Msg)
}

// Report is the outcome of verifying a log.
type Report struct {
	Lines    int       // lines read
	Head     string    // hash of the last line (Genesis for an empty log)
	Problems []Problem // in line order, the log's own first; empty when intact
	// HeadFile is the head file the log was checked against
	// (VerifyFileReport), and Anchor its record: nil when it has none.
	HeadFile string
	Anchor   *Head
	// Unanchored reports a log with lines and no head record: nothing
	// shows it is the log bouncer wrote, since a log replaced whole by
	// another chain verifies too. Not a Problem: a copy of a log made
	// without its head file is one; the caller decides.
	Unanchored bool
	// Notes are what the head file says that is not a problem: lines past
	// it, an earlier log that was rotated away, a head started late.
	Notes []string
	// hashes maps line hashes to line numbers: every line's while the log
	// is small enough (to explain a reordering), and the pinned ones always.
	hashes map[string]int
}

// OK reports whether the chain is intact.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// HasHead reports the line number whose hash is head, or 0 when no line
// has it. A head pinned earlier that is no longer found means the log was cut
// back or rewritten at or before that line. The answer is certain for heads
// passed to Verify as pins; for others, only while the log is under
// maxRemembered lines.
func (r *Report) HasHead(head string) int { return r.hashes[normHead(head)] }

func normHead(h string) string { return strings.ToLower(strings.TrimSpace(h)) }

// maxProblems bounds a report on a log that is garbage from end to end.
const maxProblems = 1000

// maxRemembered bounds the memory Verify spends on naming reordered lines:
// past it a break is reported without saying which line prev points to.
const maxRemembered = 1 << 20

// Verify checks the hash chain of a log. After a break it carries on from the
// line that broke it, so one edited line yields one problem and every damaged
// place is listed. pins are head hashes kept from earlier runs; HasHead
// answers for them. It returns an error only when r can't be read.
func Verify(r io.Reader, pins ...string) (*Report, error) {
	return verify(r, nil, Genesis, pins)
}

// VerifyAfter is Verify for a log that continues another, rotated away,
// whose last line's hash is after: the first line's prev must be after
// rather than the genesis value. Verifying rotated logs oldest first,
// each after the head of the one before, checks the chain across them.
func VerifyAfter(r io.Reader, after string, pins ...string) (*Report, error) {
	return verify(r, nil, normHead(after), pins)
}

// verify is Verify, with the first line's prev start, and, when hd is not
// nil, a check of the log against that head record (see checkHead).
func verify(r io.Reader, hd *Head, start string, pins []string) (*Report, error) {
	rep := &Report{Head: Genesis, hashes: map[string]int{}}
	pinned := map[string]bool{}
	for _, p := range pins {
		pinned[normHead(p)] = true
	}
	expect := start
	err := eachLine(r, func(n int, line []byte, noNewline bool) error {
		rep.Lines = n
		h := Hash(line)
		rep.Head = h
		if _, dup := rep.hashes[h]; !dup && (n <= maxRemembered || pinned[h]) {
			rep.hashes[h] = n
		}
		problem := func(msg string) {
			if len(rep.Problems) < maxProblems {
				rep.Problems = append(rep.Problems, Problem{Line: n, Msg: msg})
			}
		}
		anchorProblem := func(msg string) {
			if len(rep.Problems) < maxProblems {
				rep.Problems = append(rep.Problems, Problem{Line: n, Msg: msg, Anchor: true})
			}
		}
		prev, err := prevOf(line)
		switch {
		case err != nil:
			problem(err.Error())
		case prev != expect:
			problem(breakMsg(n, prev, start, rep.hashes))
		}
		if noNewline {
			problem("the line is incomplete (no newline at the end of the file)")
		}
		if hd != nil {
			switch {
			case n == 1 && hd.Lines >= 1 && h != hd.First:
				anchorProblem(fmt.Sprintf("not the first line bouncer wrote: the head file records %s for line 1, this line is %s. The log was replaced whole, or its first line rewritten; %s", hd.First, h, compareAdvice))
			case n > 1 && n == hd.Lines && h != hd.Last:
				anchorProblem(fmt.Sprintf("not the line bouncer wrote last: the head file records %s for line %d, this line is %s. The log was rewritten up to here; %s", hd.Last, n, h, compareAdvice))
			}
		}
		expect = h
		return nil
	})
	if err != nil {
		return nil, err
	}
	if hd != nil {
		checkHead(rep, hd)
	}
	return rep, nil
}

// compareAdvice ends a message about a log that is not what bouncer wrote.
const compareAdvice = "compare it with a copy kept off this machine (bouncer audit ship) or a head you kept (--expect-head)"

// checkHead adds to rep what the head record hd shows about the whole log:
// lines missing from its end, a divergence an appender found, and notes.
func checkHead(rep *Report, hd *Head) {
	var top []Problem
	if d := hd.Diverged; d != nil {
		msg := fmt.Sprintf("on %s bouncer found this log was not what it had written: %s", d.At, d.Found)
		if d.Last != "" {
			msg += fmt.Sprintf(" (it had written %d lines, the last %s)", d.Lines, d.Last)
		}
		msg += ". It has appended on from the log as it found it, and keeps this record until the head file is removed: " +
			compareAdvice + ", then remove the head file to accept the log as it is now"
		top = append(top, Problem{Msg: msg, Anchor: true})
	}
	rep.Problems = append(top, rep.Problems...)
	matches := true // the lines up to the head's are the ones it records
	for _, p := range rep.Problems {
		matches = matches && !p.Anchor
	}
	switch {
	case rep.Lines < hd.Lines:
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, Problem{Line: rep.Lines + 1, Anchor: true, Msg: fmt.Sprintf(
				"missing: the head file records %d lines, and the log ends at line %d. Lines were cut from its end, or the log was replaced by a shorter one (or, after a machine crash, lost before they reached the disk); %s",
				hd.Lines, rep.Lines, compareAdvice)})
		}
	case rep.Lines > hd.Lines && matches:
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"lines %d-%d are past the head file's line %d: a writer stopped between writing them and recording them there (killed, or the machine crashed), or a bouncer without head files wrote them. The chain covers them; the next line bouncer writes records them",
			hd.Lines+1, rep.Lines, hd.Lines))
	}
	if a := hd.Adopted; a != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"the head file was started on %s, when the log already had %d lines (a log from a bouncer without head files, or the head file had been removed): a log replaced before then would not show",
			a.At, a.Lines))
	}
	if p := hd.Previous; p != nil && p.Chained && p.Lines == 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"this log's first line continues a log that ended with %s (the head file was started over it on %s, and knows nothing more of that log). Check both together with: bouncer audit verify --audit OLD --audit THIS",
			p.Last, p.At))
	} else if p != nil && p.Chained {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"a new log was started on %s; the one before it had %d lines and ended with %s, and this log's first line chains to it. If you did not rotate the log, someone moved or removed it. Check both together with: bouncer audit verify --audit OLD --audit THIS",
			p.At, p.Lines, p.Last))
	} else if p != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"a new log was started on %s; the one before it had %d lines and ended with %s. If you did not rotate or empty the log, someone removed it. Check the old file with: bouncer audit verify --audit OLD --no-head --expect-head %s",
			p.At, p.Lines, p.Last, p.Last))
	}
}

// breakMsg explains a prev that doesn't match the line before.
func breakMsg(n int, prev, start string, seen map[string]int) string {
	switch {
	case n == 1 && start == Genesis:
		return "prev is not the genesis value: the first lines were removed, or this line was edited"
	case n == 1:
		return fmt.Sprintf("prev is not %s, the last hash of the log before this one (rotated away): "+
			"the log was emptied or replaced and started again, its first lines were removed, or this line was edited", start)
	}
	if j, ok := seen[prev]; ok && j != n {
		return fmt.Sprintf("prev is the hash of line %d, not of line %d: lines were reordered or removed", j, n-1)
	}
	if prev == Genesis {
		return fmt.Sprintf("prev is the genesis value, but line %d comes before: lines were inserted or reordered", n-1)
	}
	return fmt.Sprintf("prev is not the hash of line %d: line %d was edited, or lines between were removed", n-1, n-1)
}

// prevOf extracts the prev field of a line that must be a JSON object.
func prevOf(line []byte) (string, error) {
	if !json.Valid(line) {
		return "", errors.New("not JSON (a line cut short by a crash, or edited)")
	}
	var v struct {
		Prev *string `json:"prev"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return "", errors.New("not a JSON object")
	}
	if v.Prev == nil {
		return "", errors.New("no prev field (not written by this version of bouncer)")
	}
	if err := checkKeys(line); err != nil {
		return "", err
	}
	return *v.Prev, nil
}

// VerifyFile checks the hash chain of an audit file and returns the number
// of lines verified; an edited, removed or reordered line is an error naming
// the first line where the chain breaks.
func VerifyFile(path string) (int, error) {
	rep, err := VerifyFileReport(path)
	if err != nil {
		return 0, err
	}
	if !rep.OK() {
		p := rep.Problems[0]
		return max(p.Line-1, 0), fmt.Errorf("audit %s: %w", path, &LineError{Line: p.Line, Err: errors.New(p.Msg)})
	}
	return rep.Lines, nil
}

// VerifyFileReport is VerifyFile with every problem, the head hash, and
// where the pinned heads are (see Verify). It also checks the log against
// its head file (HeadPath): a log whose first line is not the one recorded
// there, that is shorter than recorded, or whose line at the recorded
// count is another, is a problem, and so is a head file that can't be
// read. The head and the log's size are read under a shared lock, so
// that no Append is half done between them; lines appended after that are
// not read.
func VerifyFileReport(path string, pins ...string) (*Report, error) {
	return verifyFile(path, "", pins)
}

// VerifyFileAfter is VerifyFileReport for a log that continues another,
// rotated away, whose last line's hash is after (see VerifyAfter). The
// head file must agree: a head that records another predecessor is a
// problem.
func VerifyFileAfter(path, after string, pins ...string) (*Report, error) {
	return verifyFile(path, normHead(after), pins)
}

// verifyFile is VerifyFileReport; after, if not "", is the last hash of
// the log this one continues.
func verifyFile(path, after string, pins []string) (*Report, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	defer f.Close()
	hpath := HeadPath(path)
	// Without flock (a file system that lacks it) nothing appends here
	// either: Append needs it.
	unlock, lerr := statefile.LockOpen(f, true)
	hd, herr := ReadHead(hpath)
	fi, err := f.Stat()
	if lerr == nil {
		unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	start := after
	if start == "" {
		start = hd.start()
	}
	rep, err := verify(io.NewSectionReader(f, 0, fi.Size()), hd, start, pins)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	rep.HeadFile, rep.Anchor = hpath, hd
	switch {
	case herr != nil:
		rep.Problems = append([]Problem{{Anchor: true, Msg: fmt.Sprintf(
			"%v: nothing shows this log is the one bouncer wrote. The head file is damaged (a machine crash while it was written) or was edited; %s. The next line bouncer writes starts a new head from the log as it is, and records this", herr, compareAdvice)}},
			rep.Problems...)
	case hd == nil && rep.Lines > 0:
		rep.Unanchored = true
	case hd != nil && after != "" && hd.start() != after && hd.start() != Genesis:
		rep.Problems = append([]Problem{{Anchor: true, Msg: fmt.Sprintf(
			"the head file %s records that this log continues one that ended with %s, not with %s (the log given before it)", hpath, hd.start(), after)}},
			rep.Problems...)
	}
	return rep, nil
}
