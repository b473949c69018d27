package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// The head file anchors the chain outside the log. A chain alone can't show
// a log replaced whole by another chain that verifies, or lines cut from its
// end: whoever can write the file can write a valid chain. So every Append
// also records, in HeadPath(log), what the log holds once its line is
// written: how many lines, how many bytes, the hash of the first line and
// the hash of the last. VerifyFileReport checks the log against that record.
//
// The record is rewritten in place (one pwrite of a fixed-size block at
// offset 0, under the log's lock), not replaced as Bouncer's other files
// are (statefile.Write, a temporary file renamed over the old one): a
// rename over the old file costs a millisecond on ext4 (it forces the
// data out, as auto_da_alloc does), seventy times an append.
// Readers take the log's lock too, so none sees half a record; a machine
// crash in the middle of the write leaves a record that doesn't parse, which
// is reported, never read as a valid one. The head is flushed to disk with
// the log, by the same background syncer.

// HeadPath returns the head file of the log at path: beside it, with
// ".head" added.
func HeadPath(path string) string { return path + ".head" }

// headSize is the fixed size of a head record: every write replaces the
// whole previous one, so a shorter record leaves no tail of a longer one.
const headSize = 2048

// Head is the chain head of a log as the appenders last left it.
type Head struct {
	Lines int    `json:"lines"` // lines written
	Size  int64  `json:"size"`  // bytes, up to and with the last line's newline
	First string `json:"first"` // hash of line 1; Genesis when Lines is 0
	Last  string `json:"last"`  // hash of line Lines; Genesis when Lines is 0
	// Ino is the inode number of the log the record describes (0: not
	// known, a record from an earlier bouncer). It tells a log emptied in
	// place from a new file put where the log was (see reconcile).
	Ino uint64 `json:"ino,omitempty"`
	// Adopted is set when the head was started over lines already in the
	// log (a log written before head files, or one whose head file was
	// removed): those lines were anchored only from then on.
	Adopted *Mark `json:"adopted,omitempty"`
	// Previous is the log before the last rotation: when an appender found
	// the log empty (renamed away and replaced by a new file, or emptied)
	// where the head had recorded lines. When it is Chained, the first
	// line of the new log carries its Last as prev (see start).
	Previous *Mark `json:"previous,omitempty"`
	// Diverged is set the first time an appender found the log not as the
	// head described it (shorter, or another line where the last one was),
	// and kept from then on, across rotations: the head then follows the
	// log as it was found, but the evidence stays until someone removes
	// the head file.
	Diverged *Mark `json:"diverged,omitempty"`
}

// Mark records a past state of the head and when it changed.
type Mark struct {
	At    string `json:"at"` // RFC 3339, UTC
	Lines int    `json:"lines"`
	Size  int64  `json:"size"`
	First string `json:"first,omitempty"`
	Last  string `json:"last,omitempty"`
	Found string `json:"found,omitempty"` // Diverged: what the log was instead
	// Chained, on Previous: the new log's first line chains to Last. A
	// Previous mark an earlier bouncer made lacks it, and its new log
	// started at Genesis.
	Chained bool `json:"chained,omitempty"`
}

// start is the prev of the log's first line: the last hash of the log
// before a rotation, where the rotation is chained, and Genesis otherwise.
// A rotation is then provable: the new log's first line names the old
// log's last, so a log that starts over at Genesis where the head records
// a predecessor is a break at line 1.
func (h *Head) start() string {
	if h == nil {
		return Genesis
	}
	if p := h.Previous; p != nil && p.Chained {
		return p.Last
	}
	return Genesis
}

// next is the prev of the line that follows the head's last.
func (h *Head) next() string {
	if h.Lines == 0 {
		return h.start()
	}
	return h.Last
}

// headVersion is the record's "v".
const headVersion = 1

// maxMark bounds a mark's encoding, so that any record parseHead accepts,
// and any made from one, fits in headSize with all three marks: a head
// file someone filled with one long mark must not make every later Append
// fail to record its head.
const maxMark = 560

// checkMark reports a mark that is not one an appender could have made.
func checkMark(m *Mark) error {
	b, err := json.Marshal(m)
	switch {
	case err != nil:
		return err
	case len(b) > maxMark:
		return fmt.Errorf("a mark of %d bytes is longer than %d", len(b), maxMark)
	case m.Lines < 0 || m.Size < 0:
		return errors.New("a mark's lines and size must not be negative")
	case m.First != "" && !isHash(m.First), m.Last != "" && !isHash(m.Last):
		return errors.New("a mark's first and last must be sha256: and 64 lowercase hex digits")
	}
	return nil
}

// fit shortens a Mark's Found text until the mark fits maxMark.
func fit(m *Mark) *Mark {
	for checkMark(m) != nil && m.Found != "" {
		r := []rune(m.Found)
		m.Found = string(r[:len(r)*3/4]) + "…"
		if len(r) < 8 {
			m.Found = ""
		}
	}
	return m
}

// isHash reports a chain hash as Hash writes it: "sha256:" and 64
// lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 71 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// appendHead encodes h as a head record of exactly headSize bytes into
// buf[:0]. The record is formatted by hand, since it is written on every
// Append; marks is the encoding of h's marks (encodeMarks), which rarely
// change.
func appendHead(buf []byte, h *Head, marks []byte) ([]byte, error) {
	buf = append(buf[:0], `{"v":`...)
	buf = strconv.AppendInt(buf, headVersion, 10)
	buf = append(buf, `,"lines":`...)
	buf = strconv.AppendInt(buf, int64(h.Lines), 10)
	buf = append(buf, `,"size":`...)
	buf = strconv.AppendInt(buf, h.Size, 10)
	if h.Ino != 0 {
		buf = append(buf, `,"ino":`...)
		buf = strconv.AppendUint(buf, h.Ino, 10)
	}
	buf = append(buf, `,"first":"`...)
	buf = append(buf, h.First...)
	buf = append(buf, `","last":"`...)
	buf = append(buf, h.Last...)
	buf = append(buf, '"')
	buf = append(buf, marks...)
	buf = append(buf, '}')
	if len(buf) >= headSize {
		return nil, fmt.Errorf("head record of %d bytes is larger than %d", len(buf), headSize-1)
	}
	buf = append(buf, spaces[:headSize-1-len(buf)]...)
	return append(buf, '\n'), nil
}

// encodeMarks encodes h's marks as the members that follow "last" in a
// head record (each starting with a comma); nil when it has none.
func encodeMarks(h *Head) ([]byte, error) {
	var buf []byte
	for _, m := range []struct {
		key  string
		mark *Mark
	}{{"adopted", h.Adopted}, {"previous", h.Previous}, {"diverged", h.Diverged}} {
		if m.mark == nil {
			continue
		}
		b, err := json.Marshal(m.mark)
		if err != nil {
			return nil, err
		}
		buf = append(buf, `,"`...)
		buf = append(buf, m.key...)
		buf = append(buf, `":`...)
		buf = append(buf, b...)
	}
	return buf, nil
}

// spaces pad a head record.
var spaces = bytes.Repeat([]byte{' '}, headSize)

// parseHead decodes a head record; nil, nil for an empty one (a head file
// just created). Anything else that isn't a whole, well-formed record is
// an error.
func parseHead(b []byte) (*Head, error) {
	b = bytes.TrimRight(b, " \n")
	if len(b) == 0 {
		return nil, nil
	}
	if h, ok := parsePlainHead(b); ok {
		return h, nil
	}
	var w struct {
		V *int `json:"v"`
		Head
	}
	// Unmarshal refuses anything after the object: a record a crash left
	// half overwritten, whose old tail follows the new one.
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("not a head record: %v", err)
	}
	if w.V == nil || *w.V != headVersion {
		return nil, errors.New("not a head record of version 1")
	}
	h := w.Head
	switch {
	case h.Lines < 0 || h.Size < 0 || (h.Lines == 0) != (h.Size == 0) || int64(h.Lines) > h.Size:
		return nil, fmt.Errorf("lines %d and size %d do not go together", h.Lines, h.Size)
	case !isHash(h.First) || !isHash(h.Last):
		return nil, errors.New("first and last must be sha256: and 64 lowercase hex digits")
	case h.Lines == 0 && (h.First != Genesis || h.Last != Genesis):
		return nil, errors.New("an empty log's first and last must be the genesis value")
	}
	for _, m := range []*Mark{h.Adopted, h.Previous, h.Diverged} {
		if m == nil {
			continue
		}
		if err := checkMark(m); err != nil {
			return nil, fmt.Errorf("not a head record: %v", err)
		}
	}
	return &h, nil
}

// parsePlainHead reads, without reflection, a record exactly as
// appendHead writes one with no marks (what nearly every Append that
// another proxy preceded reads), and says whether it was one; parseHead
// reads anything else. What it accepts, parseHead's own checks would too,
// to the same Head (FuzzParseHead checks it).
func parsePlainHead(b []byte) (*Head, bool) {
	var h Head
	rest, ok := bytes.CutPrefix(b, []byte(`{"v":1,"lines":`))
	if !ok {
		return nil, false
	}
	// num reads a number of at most digits digits, without a leading
	// zero, followed by next.
	num := func(digits int, next string) (uint64, bool) {
		i := bytes.Index(rest, []byte(next))
		if i < 1 || i > digits || (i > 1 && rest[0] == '0') {
			return 0, false
		}
		var n uint64
		for _, c := range rest[:i] {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + uint64(c-'0')
		}
		rest = rest[i+len(next):]
		return n, true
	}
	hash := func(next string) (string, bool) {
		if len(rest) < 71+len(next) || string(rest[71:71+len(next)]) != next {
			return "", false
		}
		s := string(rest[:71])
		rest = rest[71+len(next):]
		return s, isHash(s)
	}
	lines, ok1 := num(18, `,"size":`)
	size, ok2 := num(18, `,"`)
	var ino uint64
	okIno := true
	if r, ok := bytes.CutPrefix(rest, []byte(`ino":`)); ok {
		rest = r
		// At most 19 digits: no overflow, and a 20-digit inode number
		// is read by parseHead.
		ino, okIno = num(19, `,"`)
		okIno = okIno && ino != 0
	}
	r, okFirst := bytes.CutPrefix(rest, []byte(`first":"`))
	rest = r
	first, ok3 := hash(`","last":"`)
	last, ok4 := hash(`"}`)
	if !ok1 || !ok2 || !okIno || !okFirst || !ok3 || !ok4 || len(rest) != 0 {
		return nil, false
	}
	h.Ino = ino
	h.Lines, h.Size, h.First, h.Last = int(lines), int64(size), first, last
	if (h.Lines == 0) != (h.Size == 0) || int64(h.Lines) > h.Size || h.Lines == 0 && (h.First != Genesis || h.Last != Genesis) {
		return nil, false
	}
	return &h, true
}

// readHead reads the head record of f into buf (headSize+1 bytes, or nil
// for a new one); nil, nil when f is empty.
func readHead(f *os.File, buf []byte) (*Head, error) {
	if len(buf) != headSize+1 {
		buf = make([]byte, headSize+1)
	}
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n > headSize {
		return nil, fmt.Errorf("not a head record: longer than %d bytes", headSize)
	}
	return parseHead(buf[:n])
}

// ReadHead reads the head file at path (HeadPath of a log). It returns nil
// and no error when there is none, or when it is empty (created, not yet
// written).
func ReadHead(path string) (*Head, error) {
	f, err := statefile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit head %s: %w", path, err)
	}
	defer f.Close()
	h, err := readHead(f, nil)
	if err != nil {
		return nil, fmt.Errorf("audit head %s: %w", path, err)
	}
	return h, nil
}

// openHead opens (creating 0600) the head file, under the same rules as
// the log: a head file others can write anchors nothing.
func openHead(path string) (*os.File, error) {
	f, err := statefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit head %s: %w", path, err)
	}
	if err := statefile.CheckPrivate(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit head %s: %w", path, err)
	}
	return f, nil
}

// span is what scanning part of a log found.
type span struct {
	lines       int
	first, last string // hashes of the first and last line read
	// chained: every whole line's prev is the hash of the line before it
	// (the first's: the prev the scan was given).
	chained bool
	// partial: the last line has no newline (a write cut short).
	partial bool
	// start is the first line's prev, if it is a chain hash.
	start string
}

// scan reads the lines of f in [from, to), hashing each. The first line's
// prev must be prev for the span to be chained; a last line without its
// newline counts as a line and is not checked (nothing can chain to a
// write that was cut short until Append ends it).
func scan(f *os.File, from, to int64, prev string) (span, error) {
	s := span{chained: true}
	if from >= to {
		return s, nil // the usual case: nothing past the head
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, from, to-from), 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return s, nil
		}
		if err != nil && err != io.EOF {
			return s, err
		}
		whole := err == nil
		if whole {
			line = line[:len(line)-1]
		}
		h := Hash(line)
		s.lines++
		if s.lines == 1 {
			s.first = h
		}
		if whole {
			p, perr := prevOf(line)
			if perr != nil || p != prev {
				s.chained = false
			}
			if s.lines == 1 && perr == nil && isHash(p) {
				s.start = p
			}
		} else {
			s.partial = true
		}
		s.last, prev = h, h
		if !whole {
			return s, nil
		}
	}
}

// anchorOf makes a head for the log f as it is, size bytes long. A log
// whose first line chains to something other than the genesis value (a
// log that continues one rotated away) is taken as it is too: the head
// records that hash as the last of a Previous log, made at now, of which
// nothing more is known.
func anchorOf(f *os.File, size int64, now string) (*Head, bool, error) {
	s, err := scan(f, 0, size, Genesis)
	if err != nil {
		return nil, false, err
	}
	h := &Head{Lines: s.lines, Size: size, First: Genesis, Last: Genesis}
	if s.lines > 0 {
		h.First, h.Last = s.first, s.last
	}
	if s.start != "" && s.start != Genesis {
		h.Previous = &Mark{At: now, Last: s.start, Chained: true}
	}
	return h, s.partial, nil
}

// reconcile works out the head of the log f, size bytes long, from the
// head file's record, when the in-memory head can't be trusted to be
// current (another process appended, the log was rotated, or this is the
// first Append). It returns the head and whether the log's last line lacks
// its newline.
//
//   - The log is as the record says, or longer by lines that chain on from
//     its last line (a writer stopped between its line and its head, or a
//     bouncer without head files appended): the record, extended.
//   - The log is empty where the record has lines, and is another file
//     than the one recorded (ino): a rotation (the log was renamed away and
//     a new file put in its place). A new head, with the old one as
//     Previous, chained: the new log's first line carries the old log's
//     last hash as prev.
//   - The log is empty where the record has lines, and is the file
//     recorded: it was emptied in place, and its lines are gone. That is no
//     rotation (nothing of the old log is left to check) but a
//     divergence, recorded as below, with the old head as Previous so the
//     chain still goes on from its last line. A record without ino (from
//     an earlier bouncer) can't tell the two apart, and is taken as a
//     rotation, as that bouncer took it.
//   - No record (a log from before head files, or a removed head file): a
//     head made from the log as it is, marked Adopted.
//   - Anything else (shorter, another line where the last one was, a
//     record that doesn't parse): the log changed behind the appenders'
//     backs. A head made from the log as it is, with Diverged saying what
//     was expected and what was found.
func (l *Log) reconcile(f *os.File, size int64, ino uint64) (*Head, bool, error) {
	h, partial, err := l.reconcileHead(f, size, ino)
	if h != nil {
		h.Ino = ino
	}
	return h, partial, err
}

func (l *Log) reconcileHead(f *os.File, size int64, ino uint64) (*Head, bool, error) {
	now := l.now().UTC().Format(timeRFC3339)
	if l.rbuf == nil {
		l.rbuf = make([]byte, headSize+1)
	}
	old, herr := readHead(l.hf, l.rbuf)
	if herr != nil {
		h, partial, err := anchorOf(f, size, now)
		if err != nil {
			return nil, false, err
		}
		h.Diverged = fit(&Mark{At: now, Found: "the head file could not be read: " + strings.ToValidUTF8(herr.Error(), "\ufffd")})
		return h, partial, nil
	}
	if old == nil {
		h, partial, err := anchorOf(f, size, now)
		if err != nil {
			return nil, false, err
		}
		if h.Lines > 0 {
			h.Adopted = &Mark{At: now, Lines: h.Lines, Size: h.Size, First: h.First, Last: h.Last}
		}
		return h, partial, nil
	}
	if size == 0 {
		if old.Lines == 0 {
			return old, false, nil
		}
		h := &Head{First: Genesis, Last: Genesis, Diverged: old.Diverged,
			Previous: &Mark{At: now, Lines: old.Lines, Size: old.Size, First: old.First, Last: old.Last, Chained: true}}
		if old.Ino != 0 && old.Ino == ino && h.Diverged == nil {
			h.Diverged = &Mark{At: now, Lines: old.Lines, Size: old.Size, First: old.First, Last: old.Last,
				Found: "the log was emptied in place, not renamed away (a rotation leaves the old file)"}
		}
		return h, false, nil
	}
	found := ""
	switch {
	case size < old.Size:
		found = fmt.Sprintf("the log was %d bytes long, shorter than the %d bytes written", size, old.Size)
	default:
		last, partial, err := Genesis, false, error(nil)
		if old.Size > 0 {
			last, partial, err = lastLineHash(f, old.Size)
			if err != nil {
				return nil, false, err
			}
		}
		if partial || last != old.Last {
			found = fmt.Sprintf("the line ending at byte %d is not the line written last", old.Size)
			break
		}
		ext, err := scan(f, old.Size, size, old.next())
		if err != nil {
			return nil, false, err
		}
		if !ext.chained {
			found = fmt.Sprintf("the lines after byte %d do not chain on from the line written last", old.Size)
			break
		}
		h := *old
		if ext.lines > 0 {
			if h.Lines == 0 {
				h.First = ext.first
			}
			h.Lines += ext.lines
			h.Size = size
			h.Last = ext.last
		}
		return &h, ext.partial, nil
	}
	h, partial, err := anchorOf(f, size, now)
	if err != nil {
		return nil, false, err
	}
	if old.Previous != nil {
		h.Previous = old.Previous
	}
	h.Diverged = old.Diverged
	if h.Diverged == nil {
		h.Diverged = fit(&Mark{At: now, Lines: old.Lines, Size: old.Size, First: old.First, Last: old.Last, Found: found})
	}
	return h, partial, nil
}

// timeRFC3339 is how a Mark's time is written.
const timeRFC3339 = "2006-01-02T15:04:05Z"

// writeHead records h in the head file, in place (see above).
func (l *Log) writeHead(h *Head) error {
	if l.marks.of != [3]*Mark{h.Adopted, h.Previous, h.Diverged} {
		enc, err := encodeMarks(h)
		if err != nil {
			return err
		}
		l.marks.of, l.marks.enc = [3]*Mark{h.Adopted, h.Previous, h.Diverged}, enc
	}
	rec, err := appendHead(l.hbuf, h, l.marks.enc)
	if err != nil {
		return err
	}
	l.hbuf = rec
	n, err := l.hf.WriteAt(rec, 0)
	if err == nil && n != len(rec) {
		err = io.ErrShortWrite
	}
	return err
}

// checkHeadFile makes sure l.hf is the file now at the head's path: if
// someone removed or replaced it (it then has no name left: one fstat, no
// path to walk), the next record goes into the file a reader will find,
// and the head is worked out again from what that file holds.
func (l *Log) checkHeadFile() error {
	if !unlinked(l.hf) {
		return nil
	}
	f, err := openHead(l.hpath)
	if err != nil {
		return err
	}
	l.fmu.Lock()
	l.hf.Close()
	l.hf = f
	l.fmu.Unlock()
	l.hdOK = false
	return nil
}
