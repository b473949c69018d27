package ship

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	unix "github.com/bouncer-mcp/bouncer/internal/unixshim"
)

// CursorVersion is the format of the cursor files this package writes.
const CursorVersion = 1

// Cursor is how far one destination has accepted the audit log: every byte
// before Offset of the file identified by Dev and Ino was acknowledged by
// the destination, and Hash is the chain hash of the line that ends there,
// so a log that was truncated, rewritten or replaced since is recognised
// instead of being read from a wrong place.
type Cursor struct {
	V       int    `json:"v"`
	Dest    string `json:"dest"`    // the destination, as in messages
	Log     string `json:"log"`     // the audit log's path, for people
	Dev     uint64 `json:"dev"`     // file identity of the log the offset is in
	Ino     uint64 `json:"ino"`     //
	Offset  int64  `json:"offset"`  // bytes acknowledged: always the end of a line
	Line    int64  `json:"line"`    // lines acknowledged (the line number of the last one)
	Hash    string `json:"hash"`    // sha256: of the line ending at Offset, without its newline; "" at 0
	Updated string `json:"updated"` // when it was written, UTC
}

// cursorPath is the cursor file of one destination: one file per
// destination, named by its kind and a hash of its URL, so a changed URL
// starts from the beginning (the new collector has seen nothing) and two
// destinations never share a position.
func cursorPath(stateDir, key string) string {
	sum := sha256.Sum256([]byte(key))
	kind := "dest"
	if i := bytes.IndexByte([]byte(key), ' '); i > 0 {
		kind = key[:i]
	}
	return filepath.Join(stateDir, "ship", kind+"-"+hex.EncodeToString(sum[:8])+".json")
}

// maxCursorFile bounds a cursor file; one takes a few hundred bytes.
const maxCursorFile = 64 << 10

// loadCursor reads a cursor file. A missing file is the zero cursor; an
// unreadable or malformed one, or one another user owns or may write
// (statefile.ReadOwned: it could make shipping skip lines), is reported
// and treated as the zero cursor, which resends the log from the start
// rather than skip any of it.
func loadCursor(path string) (Cursor, error) {
	data, err := statefile.ReadOwned(path, maxCursorFile)
	if errors.Is(err, os.ErrNotExist) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, fmt.Errorf("%s: %w", path, err)
	}
	var c Cursor
	if err := json.Unmarshal(data, &c); err != nil {
		return Cursor{}, fmt.Errorf("%s: not a cursor file: %v", path, err)
	}
	if c.V != CursorVersion || c.Offset < 0 || c.Line < 0 || (c.Offset > 0) != (c.Hash != "") {
		return Cursor{}, fmt.Errorf("%s: not a cursor this version understands", path)
	}
	return c, nil
}

// saveCursor replaces the cursor file (statefile.Write: 0600, whole, on
// disk), so a crash leaves either the old cursor or the new one.
func saveCursor(path string, c Cursor) error {
	c.V = CursorVersion
	c.Updated = time.Now().UTC().Format(time.RFC3339)
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := statefile.Dir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%s: %w", filepath.Dir(path), err)
	}
	return statefile.Write(path, append(data, '\n'))
}

// Line is one line of the audit log, as shipped.
type Line struct {
	Text []byte // its exact bytes, without the newline
	Hash string // audit.Hash(Text): what the next line's prev holds
	Num  int64  // its line number in the file, from 1
	End  int64  // the offset just past it (and its newline)
}

// reader hands out the whole lines of the audit log after a cursor. It
// holds the log open, so a log rotated away is finished before the new one
// is started, and it checks at every step that the file is still the one
// the cursor points into.
type reader struct {
	path string
	cur  Cursor // what was acknowledged: the next batch starts at cur.Offset
	f    *os.File
	// size is the file's size when the line at cur.Offset was last checked
	// against cur.Hash; a change means it is checked again.
	checkedSize int64
	// opened counts the times the reader (re)started a file, so the
	// metrics can be recounted from that file's start.
	opened int
	note   func(format string, a ...any)
	// maxBytes bounds a batch (at least one line is always returned).
	maxBytes int
	maxLines int
}

func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*unix.SysStat); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

func (r *reader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// open opens the log and decides where to start: at the cursor if the line
// that ends there is still the line the cursor says; otherwise (the log was
// truncated, rewritten or replaced) from the start, saying so. A log that
// does not exist yet returns false.
func (r *reader) open() (bool, error) {
	f, err := statefile.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return false, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return false, fmt.Errorf("%s is not a regular file", r.path)
	}
	dev, ino := fileID(fi)
	c := r.cur
	if c.Offset > 0 {
		switch h, err := hashBefore(f, c.Offset, fi.Size()); {
		case err != nil:
			f.Close()
			return false, err
		case h == "":
			r.note("%s: the audit log %s is shorter than this destination's cursor (line %d): it was truncated or replaced; shipping it again from the start (repeated lines carry the same bouncer.line_hash)", c.Dest, r.path, c.Line)
			c = Cursor{Dest: c.Dest}
		case h != c.Hash:
			r.note("%s: the audit log %s no longer has at line %d the line this destination's cursor recorded: it was rewritten or replaced; shipping it again from the start (repeated lines carry the same bouncer.line_hash)", c.Dest, r.path, c.Line)
			c = Cursor{Dest: c.Dest}
		case dev != c.Dev || ino != c.Ino:
			// Another file with the same line at the same place: a copy or
			// a restore of the log. The chain hash of that line covers every
			// line before it, so resuming skips nothing.
			r.note("%s: the audit log %s is another file than when this destination's cursor was saved, with the same line %d; resuming after it", c.Dest, r.path, c.Line)
		}
	}
	c.Dev, c.Ino, c.Log = dev, ino, r.path
	r.close()
	r.f, r.cur, r.checkedSize = f, c, fi.Size()
	r.opened++
	return true, nil
}

// hashBefore returns the chain hash of the line that ends at off (the bytes
// after the previous newline, without the newline at off-1, which a torn
// line shipped from a finished file lacks), or "" when the file is shorter
// than off. It reads backwards in blocks, as the audit writer does.
func hashBefore(f *os.File, off, size int64) (string, error) {
	if size < off {
		return "", nil
	}
	end := off
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		return "", err
	}
	if b[0] == '\n' {
		end--
	}
	start := int64(0)
	block := int64(4 << 10)
	for pos := end; pos > 0; {
		n := min(block, pos)
		chunk := make([]byte, n)
		if _, err := f.ReadAt(chunk, pos-n); err != nil {
			return "", err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			start = pos - n + int64(i) + 1
			break
		}
		pos -= n
		block = min(block*2, 1<<20)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, start, end-start)); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// next returns the whole lines after the cursor, at most maxLines of them
// and about maxBytes (a longer line comes alone). It returns none while the
// log does not exist or nothing new ends in a newline: a line still being
// written waits for its newline. When the log was rotated away (the path
// now names another file), next finishes the old file first, under a shared
// lock so that no appender that has not yet seen the rotation can add to it
// after the last read, then moves to the new file.
func (r *reader) next() ([]Line, error) {
	if r.f == nil {
		ok, err := r.open()
		if !ok || err != nil {
			return nil, err
		}
	}
	fi, err := r.f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < r.cur.Offset {
		r.note("%s: the audit log %s was truncated below this destination's cursor (line %d); shipping it again from the start (repeated lines carry the same bouncer.line_hash)", r.cur.Dest, r.path, r.cur.Line)
		r.restart()
		return r.next()
	}
	if size != r.checkedSize && r.cur.Offset > 0 {
		// The file changed: check it still holds the cursor's line where
		// the cursor says, which catches a log rewritten in place.
		h, err := hashBefore(r.f, r.cur.Offset, size)
		if err != nil {
			return nil, err
		}
		if h != r.cur.Hash {
			r.note("%s: the audit log %s was rewritten: line %d is not the line this destination's cursor recorded; shipping it again from the start (repeated lines carry the same bouncer.line_hash)", r.cur.Dest, r.path, r.cur.Line)
			r.restart()
			return r.next()
		}
		r.checkedSize = size
	}
	lines, err := r.read(size, false)
	if len(lines) > 0 || err != nil {
		return lines, err
	}
	// Nothing new here: has the path moved on to another file?
	pfi, err := os.Stat(r.path)
	if err != nil || os.SameFile(fi, pfi) {
		return nil, nil // same file, or the new one not there yet
	}
	unlock, err := statefile.LockOpen(r.f, true)
	if err != nil {
		return nil, err
	}
	fi, err = r.f.Stat()
	if err == nil {
		lines, err = r.read(fi.Size(), true)
	}
	unlock()
	if len(lines) > 0 || err != nil {
		return lines, err
	}
	r.note("%s: the audit log %s was rotated; the old file is shipped to its end (line %d), shipping the new one from its start", r.cur.Dest, r.path, r.cur.Line)
	r.restart()
	return r.next()
}

// restart forgets the current file and starts over at the path's start.
func (r *reader) restart() {
	r.close()
	r.cur = Cursor{Dest: r.cur.Dest}
}

// read reads the whole lines from the cursor up to size; with final, a last
// line without a newline is returned too (a torn line in a file nobody
// appends to any more).
func (r *reader) read(size int64, final bool) ([]Line, error) {
	off := r.cur.Offset
	if size <= off {
		return nil, nil
	}
	want := min(size-off, int64(r.maxBytes))
	var buf []byte
	for {
		buf = make([]byte, want)
		n, err := r.f.ReadAt(buf, off)
		buf = buf[:n]
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if bytes.IndexByte(buf, '\n') >= 0 || off+int64(n) >= size || int64(n) < want {
			// A newline, the end of what there was, or a file that shrank
			// since it was measured (the next call sees the truncation).
			break
		}
		// A line longer than a batch: read on until its newline.
		want = min(size-off, want*2)
	}
	var lines []Line
	num := r.cur.Line
	for len(buf) > 0 && len(lines) < r.maxLines {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			if !final || off+int64(len(buf)) < size {
				break
			}
			i = len(buf)
		}
		text := buf[:i]
		num++
		end := off + int64(i)
		if i < len(buf) {
			end++ // the newline
		}
		lines = append(lines, Line{Text: text, Hash: audit.Hash(text), Num: num, End: end})
		off = end
		if i == len(buf) {
			break
		}
		buf = buf[i+1:]
	}
	return lines, nil
}

// commit moves the cursor past lines, which the destination accepted.
func (r *reader) commit(lines []Line) {
	if len(lines) == 0 {
		return
	}
	last := lines[len(lines)-1]
	r.cur.Offset, r.cur.Line, r.cur.Hash = last.End, last.Num, last.Hash
}

// scanBefore calls fn for each whole line before the cursor, from the start
// of the file; the metrics are recounted with it when a file is (re)opened.
func (r *reader) scanBefore(fn func(text []byte)) error {
	if r.f == nil || r.cur.Offset == 0 {
		return nil
	}
	return eachLine(io.NewSectionReader(r.f, 0, r.cur.Offset), fn)
}

func eachLine(rd io.Reader, fn func(text []byte)) error {
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 64<<10)
	for {
		n, err := rd.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			fn(buf[:i])
			buf = buf[i+1:]
		}
		if errors.Is(err, io.EOF) {
			if len(buf) > 0 {
				fn(buf)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			buf = make([]byte, 0, 64<<10)
		}
	}
}
