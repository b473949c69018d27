// Package approval keeps the one-time codes with which a human approves, in
// their own terminal, a destination the agent's client could not ask about.
//
// Codes live in pending.json (0600) in the state directory, read and written
// under an exclusive file lock so that several proxies and `bouncer approve`
// can share it. A code is bound to server, tool, argument and destination,
// is single use, and expires five minutes after it was issued. A call that
// sends data but names no destination is asked about too: its request has an
// empty Param and an empty Destination (see Request.NoDestination). The codes
// of one call are redeemed together, all or none (Store.Redeem): deciding
// which codes approve a call, and using them up, is this package's, and the
// proxy only asks.
//
// Every change is a read-modify-write under an flock on the sidecar file
// pending.json.lock, and the new content replaces the old by rename, so a
// reader never sees half a file and a crash leaves either the old or the new
// state.
//
// # What the agent can put in the file
//
// Everything in a request but the server name comes from the agent or the
// upstream, and so possibly from an attacker. Request.Validate is the one
// rule for what an entry may hold: valid UTF-8, bounded lengths (MaxName,
// MaxDestination), and either a named argument with a non-blank destination
// or no destination at all. Issue refuses a request it rejects (the proxy
// then denies the call without a code, saying why), and Parse applies the
// same rule to every entry it reads, so Issue can't write what Parse would
// not read back. Values are stored as they are (control characters and all)
// and escaped only when shown (display.Printable, display.Show).
//
// # Damage is contained to what is damaged
//
// A file that isn't JSON of the expected shape (a syntax error, an unknown
// top-level key, a version this code doesn't know), that is too large to be
// ours, or that another user owns or can write, is an error for every
// operation and is never overwritten: its content can't be trusted, so
// nothing in it is approved until a human fixes or removes it. One entry
// that is well-formed JSON but breaks the rules (written by an older version
// that had no bounds, or edited by hand) is different: it is skipped and
// reported (Parse's EntryError, Store.Pending, and ErrInvalid for its code),
// not approvable or redeemable, and dropped at the next write. A bad entry
// can then only lose its own code; locking out every other open code instead
// would let one bad entry deny every later ask until a human edited the
// file, which is the outage this avoids.
//
// # Bounds
//
// Only open codes (neither used nor expired) count toward the limits: at
// most MaxOpenPerTool for one server and tool, and MaxOpen in all. At a
// limit Issue refuses (ErrFull) and the call is denied without a code; no
// open code is ever evicted, so a code a human is about to approve can't be
// pushed out by an agent asking in a loop, and approving or redeeming
// existing codes keeps working. A flood of one tool locks only that tool
// out of new codes, and only until its codes expire (TTL after the flood
// stops). Closed entries are kept only so that `bouncer approve` can say
// "used" or "expired": at most MaxClosed of them, newest first, none older
// than Keep.
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
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/display"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// TTL is how long a code stays valid after it was issued.
const TTL = 5 * time.Minute

// Keep is how long a used or expired code may stay in the file after it was
// issued, so that `bouncer approve` can still say "used" or "expired"
// instead of "unknown". Older entries are pruned on every write.
const Keep = 24 * time.Hour

// Limits on what the file holds; see the package doc for why they are
// what they are and what happens at each.
const (
	// MaxOpen bounds the open codes of all servers and tools together.
	MaxOpen = 1000
	// MaxOpenPerTool bounds the open codes of one server's tool, so that
	// an agent asking in a loop through one tool can't use up MaxOpen for
	// every other tool. A call with more unvouched destinations than this
	// can't get codes for all of them; trusted_destinations is the way.
	MaxOpenPerTool = 100
	// MaxClosed bounds the used and expired entries kept; the oldest go
	// first.
	MaxClosed = 1000
	// MaxName bounds the server, tool and argument names, in bytes.
	MaxName = 256
	// MaxDestination bounds a destination, in bytes. Addresses, URLs and
	// paths a human can judge fit easily; a longer value is refused rather
	// than stored, so no single call can make the file huge.
	MaxDestination = 4096
)

// maxFileBytes bounds the file this code reads. Within the limits above a
// file can't get near it (MaxOpen+MaxClosed entries of the longest values,
// every byte a six-byte JSON escape, stay under 64 MiB); anything larger was
// not written by this version, and is refused whole rather than read into
// memory on every call.
const maxFileBytes = 64 << 20

// skew is how far in the future an issue time may lie (a clock stepped
// back) before the code is treated as invalid rather than open for longer.
const skew = time.Minute

// Alphabet is what codes are made of: A-Z and 0-9 without 0, O, 1, I and L,
// which people misread and mistype.
const Alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// codeRE is the shape of a code on the wire, as the contract fixes it.
var codeRE = regexp.MustCompile(`^[A-Z0-9]{3}-[A-Z0-9]{3}$`)

// Request is what a code approves. A request with an empty Param and an
// empty Destination approves one call of the tool that names no
// destination at all (the engine asks about those too).
type Request struct {
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Param       string `json:"param"`
	Destination string `json:"destination"`
}

// NoDestination reports a request for a call that names no destination.
func (r Request) NoDestination() bool { return r.Param == "" && r.Destination == "" }

// Validate reports why r can't be carried by a code, with an error that
// matches ErrInvalid, or nil. It is the one rule for a request: Issue
// refuses what it rejects and Parse skips a stored entry it rejects.
func (r Request) Validate() error {
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"server name", r.Server, MaxName},
		{"tool name", r.Tool, MaxName},
		{"argument name", r.Param, MaxName},
		{"destination", r.Destination, MaxDestination},
	} {
		if !utf8.ValidString(f.v) {
			return invalidError(fmt.Sprintf("the %s is not valid UTF-8", f.name))
		}
		if len(f.v) > f.max {
			return invalidError(fmt.Sprintf("the %s is %d bytes long, more than the %d an approval code can carry; "+
				"if it is right, vouch for it in the policy's trusted_destinations instead", f.name, len(f.v), f.max))
		}
	}
	switch {
	case r.Server == "":
		return invalidError("the server name is empty")
	case r.Tool == "":
		return invalidError("the tool name is empty")
	case r.Param == "" && r.Destination != "":
		return invalidError("a destination without the name of its argument")
	case r.Param != "" && strings.TrimSpace(r.Destination) == "":
		return invalidError(fmt.Sprintf("argument %q has a blank destination (a call naming no destination has neither argument nor destination)", short(r.Param)))
	}
	return nil
}

// Code is one issued code and its state.
type Code struct {
	Code     string    `json:"code"` // [A-Z0-9]{3}-[A-Z0-9]{3}
	Request            // embedded: what it approves
	Issued   time.Time `json:"issued"`
	Approved bool      `json:"approved"`
	// Session: the human approved the request for the rest of the
	// session that redeems the code (the proxy whose call it is then
	// approves its server, tool, argument and destination as a yes through
	// the client does), not for one call. Only with Approved.
	Session bool `json:"session,omitempty"`
	Used    bool `json:"used"`
	// Seen is what the proxy knew of the destination when it issued the
	// code, for the human to weigh: never part of what the code approves.
	Seen *Seen `json:"seen,omitempty"`
}

// Seen says that the destination's domain appeared in untrusted output of
// the session that asked: a hint that the destination may have come from
// there, spelled another way. It is a hint for the human, never an allow
// or a deny: a domain is far wider than the destination approved.
type Seen struct {
	// Domain is the destination's domain (or the registrable part of it)
	// as it appeared.
	Domain string `json:"domain"`
	// Server is the server whose output held it.
	Server string `json:"server"`
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

// validEntry reports why a stored entry breaks the rules, or nil. With
// check (no code twice) it decides both what Parse accepts and what write
// will write.
func validEntry(c Code) error {
	if !ValidCode(c.Code) {
		return invalidError(fmt.Sprintf("code %q is not like K7Q-F2M", short(c.Code)))
	}
	if c.Issued.IsZero() {
		return invalidError("no issued time")
	}
	if c.Session && !c.Approved {
		return invalidError("approved for the session but not approved")
	}
	if err := c.Seen.validate(); err != nil {
		return err
	}
	return c.Request.Validate()
}

// validate reports why a note can't be stored, or nil (for no note too).
func (n *Seen) validate() error {
	if n == nil {
		return nil
	}
	for _, v := range []string{n.Domain, n.Server} {
		if v == "" || !utf8.ValidString(v) || len(v) > MaxName {
			return invalidError("a note on where the domain was seen that is empty, not UTF-8 or longer than a name")
		}
	}
	return nil
}

// Errors returned for codes that can't be approved or used, and for
// requests that can't get one.
var (
	ErrUnknown = errors.New("unknown code")
	ErrUsed    = errors.New("code already used")
	ErrExpired = errors.New("code expired")
	// ErrChanged means the code now approves something other than what the
	// human was shown; see ApproveShown.
	ErrChanged = errors.New("code changed while it was shown")
	// ErrInvalid matches the errors of Request.Validate (Issue refuses the
	// request) and of an entry in the file that breaks the rules (Lookup
	// and Approve of its code; the entry is skipped).
	ErrInvalid = errors.New("invalid approval request")
	// ErrFull means Issue refused because too many codes are open; see
	// MaxOpen and MaxOpenPerTool.
	ErrFull = errors.New("too many open approval codes")
)

// invalidError is a broken rule; it matches ErrInvalid.
type invalidError string

func (e invalidError) Error() string        { return string(e) }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// EntryError is an entry of pending.json that was skipped because it breaks
// the rules. It matches ErrInvalid.
type EntryError struct {
	Index int    // position in the file's "codes" list, from 0
	Code  string // the entry's code as stored ("" if it has none)
	Err   error
}

func (e *EntryError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("codes[%d]: %v", e.Index, e.Err)
	}
	c, _ := display.Printable(short(e.Code))
	return fmt.Sprintf("codes[%d] (%s): %v", e.Index, c, e.Err)
}

func (e *EntryError) Unwrap() error        { return e.Err }
func (e *EntryError) Is(target error) bool { return target == ErrInvalid }

// short cuts a value for an error message.
func short(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

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

// SameDestination compares destinations the way approvals do: the same
// destination in its canonical form, or, for a value that has none, the
// same bytes (dest.Exact). Nothing is folded: a person approved what they
// saw.
func SameDestination(a, b string) bool { return dest.Exact(a) == dest.Exact(b) }

// SameRequest reports whether a code issued for a approves the call b:
// server, tool and argument exactly, destination by SameDestination.
func SameRequest(a, b Request) bool {
	return a.Server == b.Server && a.Tool == b.Tool && a.Param == b.Param &&
		SameDestination(a.Destination, b.Destination)
}

// Issue returns an open code for r, reusing an unexpired unused one for the
// same request, else creating one, which carries seen (nil: nothing to
// note) for the human. It fails with an error matching ErrInvalid when r
// breaks Request.Validate, and with one matching ErrFull at MaxOpenPerTool
// or MaxOpen; either way nothing is written, and the caller denies the
// call without a code.
func (s *Store) Issue(r Request, seen *Seen) (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	if seen.validate() != nil {
		// A note that can't be stored is dropped, not the code: it is a
		// hint, and the file must read back.
		seen = nil
	}
	var out string
	err := s.update(func(now time.Time, codes []Code, invalid []*EntryError) ([]Code, error) {
		open, forTool := 0, 0
		for _, c := range codes {
			if !c.open(now) {
				continue
			}
			if SameRequest(c.Request, r) {
				out = c.Code
				return nil, nil // nothing to write
			}
			open++
			if c.Server == r.Server && c.Tool == r.Tool {
				forTool++
			}
		}
		if forTool >= MaxOpenPerTool {
			return nil, fmt.Errorf("%w: %d codes are open for tool %q of server %q, the most one tool may have; "+
				"approve the ones you want (bouncer pending lists them) or let them expire, %v after they were issued "+
				"(so many at once may mean the agent is asking in a loop)", ErrFull, forTool, short(r.Tool), short(r.Server), TTL)
		}
		if open >= MaxOpen {
			return nil, fmt.Errorf("%w: %d codes are open, the most the store holds; "+
				"approve the ones you want (bouncer pending lists them) or let them expire, %v after they were issued", ErrFull, open, TTL)
		}
		code, err := newCode(codes, invalid)
		if err != nil {
			return nil, err
		}
		out = code
		return append(codes, Code{Code: code, Request: r, Issued: now.UTC(), Seen: seen}), nil
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// newCode draws a code from crypto/rand that no entry in the file has, not
// even a skipped one.
func newCode(codes []Code, invalid []*EntryError) (string, error) {
	taken := make(map[string]bool, len(codes)+len(invalid))
	for _, c := range codes {
		taken[c.Code] = true
	}
	for _, e := range invalid {
		taken[e.Code] = true
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
// With ErrUsed and ErrExpired the code's state is returned too. A code whose
// entry was skipped as invalid gives an *EntryError (matching ErrInvalid)
// saying why. The code is normalized first (see Normalize).
func (s *Store) Lookup(code string) (Code, error) {
	code = Normalize(code)
	if !ValidCode(code) {
		return Code{}, ErrUnknown
	}
	codes, invalid, err := s.read()
	if err != nil {
		return Code{}, err
	}
	return find(codes, invalid, code, s.now())
}

func find(codes []Code, invalid []*EntryError, code string, now time.Time) (Code, error) {
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
	for _, e := range invalid {
		if e.Code == code {
			return Code{Code: code}, e
		}
	}
	return Code{}, ErrUnknown
}

// Approve marks a code approved (a human said yes) for one call.
func (s *Store) Approve(code string) error { return s.approve(code, nil, false) }

// ApproveShown marks a code approved only if it still approves exactly what
// the human was shown (shown, from Lookup): the question may have stayed on
// screen for minutes, and the answer is about what was on it. With
// session, the yes is for the rest of the session that redeems it (see
// Code.Session), bound to the same server, tool, argument and destination.
func (s *Store) ApproveShown(shown Code, session bool) error {
	return s.approve(shown.Code, &shown.Request, session)
}

func (s *Store) approve(code string, want *Request, session bool) error {
	code = Normalize(code)
	if !ValidCode(code) {
		return ErrUnknown
	}
	return s.update(func(now time.Time, codes []Code, invalid []*EntryError) ([]Code, error) {
		c, err := find(codes, invalid, code, now)
		if err != nil {
			return nil, err
		}
		if want != nil && c.Request != *want {
			return nil, ErrChanged
		}
		for i := range codes {
			if codes[i].Code == code {
				codes[i].Approved = true
				codes[i].Session = codes[i].Session || session
			}
		}
		return codes, nil
	})
}

// Redeem consumes the approved codes of one call, all of them or none.
// reqs are the call's requests (one per destination a human must approve).
// Under the store's lock, each must have an approved open code; then every
// one of those codes is used, in one write. If any request has none,
// nothing is written, and missing lists the index in reqs of each request
// without a code (the first, where the same request comes twice), so that
// the caller can issue codes for those alone. Otherwise used lists the
// codes used, as they were approved (Session: for the rest of the session),
// in the order of reqs.
//
// All or none, so that a call is never denied with some of its codes used
// up: the human would have to approve again what they approved already,
// and a code used between a look and a take (another proxy's call, its
// expiry) can't leave the codes taken before it spent. The same request
// twice (a call that names a destination twice) is approved by one code.
// With no requests there is nothing a human approved, and Redeem fails.
func (s *Store) Redeem(reqs []Request) (used []Code, missing []int, err error) {
	if len(reqs) == 0 {
		return nil, nil, errors.New("nothing to redeem: no destination was asked about")
	}
	err = s.update(func(now time.Time, all []Code, _ []*EntryError) ([]Code, error) {
		used, missing = nil, nil
		use := map[int]bool{} // index in all of each code to use
	requests:
		for i, r := range reqs {
			for _, earlier := range reqs[:i] {
				if SameRequest(earlier, r) {
					continue requests
				}
			}
			found := false
			for k, c := range all {
				if c.Approved && c.open(now) && SameRequest(c.Request, r) && !use[k] {
					use[k], found = true, true
					used = append(used, c)
					break
				}
			}
			if !found {
				missing = append(missing, i)
			}
		}
		if len(missing) > 0 {
			used = nil
			return nil, nil // nothing is used
		}
		for k := range use {
			all[k].Used = true
		}
		return all, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return used, missing, nil
}

// List lists the codes that are neither used nor expired, oldest first.
// Entries skipped as invalid are left out; Pending reports them.
func (s *Store) List() ([]Code, error) {
	open, _, err := s.Pending()
	return open, err
}

// Pending is List with the entries of the file that were skipped as
// invalid, in file order, so that a human can be told about them.
func (s *Store) Pending() (open []Code, invalid []*EntryError, err error) {
	codes, invalid, err := s.read()
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	for _, c := range codes {
		if c.open(now) {
			open = append(open, c)
		}
	}
	sort.SliceStable(open, func(i, j int) bool { return open[i].Issued.Before(open[j].Issued) })
	return open, invalid, nil
}

// file is the shape of pending.json as written.
type file struct {
	Version int    `json:"version"`
	Codes   []Code `json:"codes"`
}

const version = 1

// read loads the file without the lock: it is only ever replaced whole by
// rename, so any reader sees one complete version of it.
func (s *Store) read() ([]Code, []*EntryError, error) {
	b, err := statefile.ReadOwned(s.path, maxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pending %s: %w", s.path, err)
	}
	codes, invalid, err := Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("pending %s: %w; nothing in it is trusted: fix or remove it", s.path, err)
	}
	return codes, invalid, nil
}

// Parse decodes the content of a pending file. An empty file holds no codes.
// A file that isn't JSON of the expected shape is an error naming the line
// and column of a syntax error, the unknown key or the version. An entry
// that breaks the rules (validEntry, or a code that appears twice: then
// both) is left out of codes and described in invalid, in file order.
func Parse(b []byte) (codes []Code, invalid []*EntryError, err error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f struct {
		Version int               `json:"version"`
		Codes   []json.RawMessage `json:"codes"`
	}
	if err := dec.Decode(&f); err != nil {
		return nil, nil, jsonError(b, err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("%s: unexpected content after the JSON object", position(b, dec.InputOffset()))
	}
	if f.Version != version {
		return nil, nil, fmt.Errorf("version %d is not %d (written by another bouncer version?)", f.Version, version)
	}
	var decoded []Code
	var index []int
	for i, raw := range f.Codes {
		c, err := decodeEntry(raw)
		if err != nil {
			invalid = append(invalid, &EntryError{Index: i, Code: c.Code, Err: err})
			continue
		}
		decoded = append(decoded, c)
		index = append(index, i)
	}
	codes, bad := check(decoded)
	for _, e := range bad {
		e.Index = index[e.Index]
	}
	invalid = append(invalid, bad...)
	sort.SliceStable(invalid, func(i, j int) bool { return invalid[i].Index < invalid[j].Index })
	return codes, invalid, nil
}

// decodeEntry decodes one entry strictly: an unknown key or a value of the
// wrong type makes it invalid. The code is returned when it could be read,
// so that the entry can be named.
func decodeEntry(raw json.RawMessage) (Code, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c Code
	if err := dec.Decode(&c); err != nil {
		var probe struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(raw, &probe)
		return Code{Code: probe.Code}, invalidError(fmt.Sprintf("not a valid entry: %v", err))
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Code{}, invalidError("null is not an entry")
	}
	return c, nil
}

// check splits codes into the entries that keep the rules and an error for
// each one that doesn't (Index: its position in codes). A code that appears
// twice is ambiguous, so every entry with it is rejected.
func check(codes []Code) (ok []Code, bad []*EntryError) {
	count := make(map[string]int, len(codes))
	for _, c := range codes {
		count[c.Code]++
	}
	ok = make([]Code, 0, len(codes))
	for i, c := range codes {
		err := validEntry(c)
		if err == nil && count[c.Code] > 1 {
			err = invalidError(fmt.Sprintf("code %s appears %d times", c.Code, count[c.Code]))
		}
		if err != nil {
			bad = append(bad, &EntryError{Index: i, Code: c.Code, Err: err})
			continue
		}
		ok = append(ok, c)
	}
	return ok, bad
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
// what it returns (nil: no change). fn gets the valid entries, already
// pruned, and the skipped ones for reference; what it returns is pruned
// again and written, so skipped entries are dropped at the first write.
func (s *Store) update(fn func(now time.Time, codes []Code, invalid []*EntryError) ([]Code, error)) error {
	if err := statefile.Dir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("pending %s: its directory: %w", s.path, err)
	}
	unlock, err := statefile.Lock(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("pending %s: lock: %w", s.path, err)
	}
	defer unlock()
	codes, invalid, err := s.read()
	if err != nil {
		return err
	}
	now := s.now()
	next, err := fn(now, prune(codes, now), invalid)
	if err != nil || next == nil {
		return err
	}
	return s.write(prune(next, now))
}

// prune drops what the file need not keep. Open entries all stay (Issue
// bounds them). Closed ones (used or expired) stay only while they help
// `bouncer approve` say why a code can't be approved: not once issued more
// than Keep ago (or implausibly far ahead), and only the MaxClosed most
// recently issued.
func prune(codes []Code, now time.Time) []Code {
	keep := make([]bool, len(codes))
	var closed []int
	for i, c := range codes {
		switch {
		case c.open(now):
			keep[i] = true
		case now.Sub(c.Issued) < Keep && c.Issued.Before(now.Add(Keep)):
			closed = append(closed, i)
		}
	}
	if len(closed) > MaxClosed {
		sort.SliceStable(closed, func(a, b int) bool { return codes[closed[a]].Issued.After(codes[closed[b]].Issued) })
		closed = closed[:MaxClosed]
	}
	for _, i := range closed {
		keep[i] = true
	}
	out := make([]Code, 0, len(codes))
	for i, c := range codes {
		if keep[i] {
			out = append(out, c)
		}
	}
	return out
}

// write replaces the file whole (statefile.Write: a reader sees the old
// codes or the new ones, never half, and they are on disk). It refuses
// to write an entry Parse would skip (check is the same rule), so whatever
// it writes reads back whole.
func (s *Store) write(codes []Code) error {
	if _, bad := check(codes); len(bad) > 0 {
		return fmt.Errorf("pending %s: not written: %w", s.path, bad[0])
	}
	if codes == nil {
		codes = []Code{}
	}
	b, err := json.MarshalIndent(file{Version: version, Codes: codes}, "", "  ")
	if err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	b = append(b, '\n')
	if len(b) > maxFileBytes {
		return fmt.Errorf("pending %s: not written: %d bytes is more than %d MiB", s.path, len(b), maxFileBytes>>20)
	}
	if err := statefile.Write(s.path, b); err != nil {
		return fmt.Errorf("pending %s: %w", s.path, err)
	}
	return nil
}
