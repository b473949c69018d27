// Package approval keeps the one-time codes with which a human approves, in
// their own terminal, a destination the agent's client could not ask about.
//
// Codes live in pending.json (0600) in the state directory, read and written
// under an exclusive file lock so that several proxies and `bouncer approve`
// can share it. A code is bound to server, tool, argument and destination,
// is single use, and expires five minutes after it was issued.
//
// Every change is a read-modify-write under an flock on the sidecar file
// pending.json.lock, and the new content replaces the old by rename, so a
// reader never sees half a file and a crash leaves either the old or the new
// state. A pending.json that can't be parsed is an error for every operation
// and is never overwritten: nothing is approved until a human fixes or
// removes it.
package approval

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TTL is how long a code stays valid after it was issued.
const TTL = 5 * time.Minute

// Keep is how long a used or expired code stays in the file after it was
// issued, so that `bouncer approve` can still say "used" or "expired"
// instead of "unknown". Older entries are pruned on every write.
const Keep = 24 * time.Hour

// MaxCodes bounds the file. A hijacked agent asking for one new destination
// after another must not grow it without end: when it is full of open codes,
// Issue fails and the call is denied without a code.
const MaxCodes = 1000

// skew is how far in the future an issue time may lie (a clock stepped
// back) before the code is treated as invalid rather than open for longer.
const skew = time.Minute

// Alphabet is what codes are made of: A-Z and 0-9 without 0, O, 1, I and L,
// which people misread and mistype.
const Alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// codeRE is the shape of a code on the wire, as the contract fixes it.
var codeRE = regexp.MustCompile(`^[A-Z0-9]{3}-[A-Z0-9]{3}$`)

// Request is what a code approves.
type Request struct {
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Param       string `json:"param"`
	Destination string `json:"destination"`
}

// Code is one issued code and its state.
type Code struct {
	Code     string    `json:"code"` // [A-Z0-9]{3}-[A-Z0-9]{3}
	Request            // embedded: what it approves
	Issued   time.Time `json:"issued"`
	Approved bool      `json:"approved"`
	Used     bool      `json:"used"`
}

// Expires is when the code stops being valid.
func (c Code) Expires() time.Time { return c.Issued.Add(TTL) }

// open reports whether the code may still be approved or redeemed at now.
func (c Code) open(now time.Time) bool {
	return !c.Used && !expired(c, now)
}

// expired reports an issue time more than TTL ago, or implausibly far ahead.
func expired(c Code, now time.Time) bool {
	return !now.Before(c.Issued.Add(TTL)) || c.Issued.After(now.Add(skew))
}

// Errors returned for codes that can't be approved or used.
var (
	ErrUnknown = errors.New("unknown code")
	ErrUsed    = errors.New("code already used")
	ErrExpired = errors.New("code expired")
	// ErrChanged means the code now approves something other than what the
	// human was shown; see ApproveShown.
	ErrChanged = errors.New("code changed while it was shown")
)

// Store is the pending-code file at one path.
type Store struct {
	path string
	now  func() time.Time
}

// Open returns the store at path (created 0600 on first write). now may be
// nil (time.Now).
func Open(path string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{path: path, now: now}
}

// Path is the pending file's path.
func (s *Store) Path() string { return s.path }

// Normalize turns what a person typed into the canonical form of a code:
// surrounding space dropped, letters upper-cased. It does not check the shape.
func Normalize(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

// ValidCode reports whether code (already normalized) has the shape of a code.
func ValidCode(code string) bool { return codeRE.MatchString(code) }

// SameDestination compares destinations the way approvals and allowlists do:
// ASCII letters without regard to case, ASCII space around the value
// ignored, every other character exactly. (Unicode case folding would let
// the Kelvin sign stand for k, and so approve a destination nobody saw.)
func SameDestination(a, b string) bool {
	a, b = trimASCIISpace(a), trimASCIISpace(b)
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// SameRequest reports whether a code issued for a approves the call b:
// server, tool and argument exactly, destination by SameDestination.
func SameRequest(a, b Request) bool {
	return a.Server == b.Server && a.Tool == b.Tool && a.Param == b.Param &&
		SameDestination(a.Destination, b.Destination)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func trimASCIISpace(s string) string {
	return strings.Trim(s, " \t\n\v\f\r")
}

// Issue returns an open code for r, reusing an unexpired unused one for the
// same request, else creating one.
func (s *Store) Issue(r Request) (string, error) {
	var out string
	err := s.update(func(now time.Time, codes []Code) ([]Code, error) {
		for _, c := range codes {
			if c.open(now) && SameRequest(c.Request, r) {
				out = c.Code
				return nil, nil // nothing to write
			}
		}
		if len(codes) >= MaxCodes {
			return nil, fmt.Errorf("%d codes are open; approve or let them expire first", len(codes))
		}
		code, err := newCode(codes)
		if err != nil {
			return nil, err
		}
		out = code
		return append(codes, Code{Code: code, Request: r, Issued: now.UTC()}), nil
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// newCode draws a code from crypto/rand that no entry in the file has.
func newCode(codes []Code) (string, error) {
	taken := make(map[string]bool, len(codes))
	for _, c := range codes {
		taken[c.Code] = true
	}
	for {
		var b [6]byte
		i := 0
		for i < len(b) {
			var r [16]byte
			if _, err := rand.Read(r[:]); err != nil {
				return "", fmt.Errorf("random code: %w", err)
			}
			for _, x := range r {
				// Reject bytes past the last whole multiple of the alphabet
				// size, so each character is uniform.
				if int(x) >= 256-256%len(Alphabet) || i == len(b) {
					continue
				}
				b[i] = Alphabet[int(x)%len(Alphabet)]
				i++
			}
		}
		code := string(b[:3]) + "-" + string(b[3:])
		if !taken[code] {
			return code, nil
		}
	}
}

// Lookup returns the code's state, or ErrUnknown, ErrUsed or ErrExpired.
// With ErrUsed and ErrExpired the code's state is returned too. The code is
// normalized first (see Normalize).
func (s *Store) Lookup(code string) (Code, error) {
	code = Normalize(code)
	if !ValidCode(code) {
		return Code{}, ErrUnknown
	}
	codes, err := s.read()
	if err != nil {
		return Code{}, err
	}
	return find(codes, code, s.now())
}

func find(codes []Code, code string, now time.Time) (Code, error) {
	for _, c := range codes {
		if c.Code != code {
			continue
		}
		switch {
		case c.Used:
			return c, ErrUsed
		case expired(c, now):
			return c, ErrExpired
		}
		return c, nil
	}
	return Code{}, ErrUnknown
}

// Approve marks a code approved (a human said yes).
func (s *Store) Approve(code string) error { return s.approve(code, nil) }

// ApproveShown marks a code approved only if it still approves exactly what
// the human was shown (shown, from Lookup): the question may have stayed on
// screen for minutes, and the answer is about what was on it.
func (s *Store) ApproveShown(shown Code) error { return s.approve(shown.Code, &shown.Request) }

func (s *Store) approve(code string, want *Request) error {
	code = Normalize(code)
	if !ValidCode(code) {
		return ErrUnknown
	}
	return s.update(func(now time.Time, codes []Code) ([]Code, error) {
		c, err := find(codes, code, now)
		if err != nil {
			return nil, err
		}
		if want != nil && c.Request != *want {
			return nil, ErrChanged
		}
		for i := range codes {
			if codes[i].Code == code {
				codes[i].Approved = true
			}
		}
		return codes, nil
	})
}

// Take consumes an approved, unexpired, unused code for r, if there is one,
// and returns it.
func (s *Store) Take(r Request) (code string, ok bool, err error) {
	err = s.update(func(now time.Time, codes []Code) ([]Code, error) {
		for i, c := range codes {
			if c.Approved && c.open(now) && SameRequest(c.Request, r) {
				codes[i].Used = true
				code, ok = c.Code, true
				return codes, nil
			}
		}
		return nil, nil
	})
	if err != nil {
		return "", false, err
	}
	return code, ok, nil
}

// List lists the codes that are neither used nor expired, oldest first.
func (s *Store) List() ([]Code, error) {
	codes, err := s.read()
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []Code
	for _, c := range codes {
		if c.open(now) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Issued.Before(out[j].Issued) })
	return out, nil
}

// file is the shape of pending.json.
type file struct {
	Version int    `json:"version"`
	Codes   []Code `json:"codes"`
}

const version = 1

// read loads the file without the lock: it is only ever replaced whole by
// rename, so any reader sees one complete version of it.
func (s *Store) read() ([]Code, error) {
	b, err := readChecked(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pending %s: %w", s.path, err)
	}
	codes, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("pending %s: %w", s.path, err)
	}
	return codes, nil
}

// readChecked reads a pending file that only this user can write: a file
// others can write could carry approvals nobody gave.
func readChecked(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	if int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("owned by uid %d, not by this user (uid %d); nothing in it is trusted", st.Uid, os.Geteuid())
	}
	if st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("mode %04o lets other users write it, so nothing in it is trusted; remove it or run: chmod 600 %s", st.Mode&0o777, path)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Parse decodes the content of a pending file. An empty file holds no codes.
// Errors name the line and column of a JSON syntax or type error, or the
// entry that is invalid.
func Parse(b []byte) ([]Code, error) {
	if len(b) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, jsonError(b, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: unexpected content after the JSON object", position(b, dec.InputOffset()))
	}
	if f.Version != version {
		return nil, fmt.Errorf("version %d is not %d (written by another bouncer version?)", f.Version, version)
	}
	seen := map[string]bool{}
	for i, c := range f.Codes {
		at := fmt.Sprintf("codes[%d]", i)
		switch {
		case !ValidCode(c.Code):
			return nil, fmt.Errorf("%s: code %q is not like K7Q-F2M", at, c.Code)
		case seen[c.Code]:
			return nil, fmt.Errorf("%s: code %s appears twice", at, c.Code)
		case c.Server == "" || c.Tool == "" || c.Param == "":
			return nil, fmt.Errorf("%s (%s): server, tool and param must not be empty", at, c.Code)
		case c.Issued.IsZero():
			return nil, fmt.Errorf("%s (%s): no issued time", at, c.Code)
		}
		seen[c.Code] = true
	}
	return f.Codes, nil
}

// jsonError adds the line and column to a decoding error.
func jsonError(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s: %w", position(b, se.Offset-1), err) // Offset is just past the bad byte
	case errors.As(err, &te):
		return fmt.Errorf("%s: %w", position(b, te.Offset-1), err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: the JSON ends early", position(b, int64(len(b))))
	}
	return err
}

// position turns a byte offset into "line L, column C" (1-based).
func position(b []byte, off int64) string {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off < 0 {
		off = 0
	}
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// update runs fn on the current codes under the exclusive lock and writes
// what it returns (nil: no change). Entries issued more than Keep ago are
// pruned whenever the file is written.
func (s *Store) update(fn func(now time.Time, codes []Code) ([]Code, error)) error {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	lf, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("pending %s: lock: %w", s.path, err)
	}
	defer lf.Close() // closing drops the lock
	for {
		err = unix.Flock(int(lf.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("pending %s: lock: %w", s.path, err)
	}
	codes, err := s.read()
	if err != nil {
		return err
	}
	now := s.now()
	next, err := fn(now, prune(codes, now))
	if err != nil || next == nil {
		return err
	}
	return s.write(prune(next, now))
}

// prune drops entries issued more than Keep ago (or absurdly far ahead).
func prune(codes []Code, now time.Time) []Code {
	out := codes[:0:0]
	for _, c := range codes {
		if now.Sub(c.Issued) < Keep && c.Issued.Before(now.Add(Keep)) {
			out = append(out, c)
		}
	}
	return out
}

// write replaces the file atomically: a temp file in the same directory,
// synced, renamed over the old one, and the directory synced.
func (s *Store) write(codes []Code) error {
	if codes == nil {
		codes = []Code{}
	}
	b, err := json.MarshalIndent(file{Version: version, Codes: codes}, "", "  ")
	if err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, ".pending-*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	if err := os.Rename(name, s.path); err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename is done; a failed dir sync only risks it after a crash
		d.Close()
	}
	return nil
}
