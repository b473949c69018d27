// Package approval keeps the one-time codes with which a human approves, in
// their own terminal, a destination the agent's client could not ask about.
//
// Codes live in pending.json (0600) in the state directory, read and written
// under an exclusive file lock so that several proxies and `bouncer approve`
// can share it. A code is bound to server, tool, argument and destination,
// is single use, and expires five minutes after it was issued.
package approval

import (
	"errors"
	"time"
)

// TTL is how long a code stays valid after it was issued.
const TTL = 5 * time.Minute

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

// Errors returned for codes that can't be approved or used.
var (
	ErrUnknown = errors.New("unknown code")
	ErrUsed    = errors.New("code already used")
	ErrExpired = errors.New("code expired")
)

// Store is the pending-code file at one path.
type Store struct {
	path string
	now  func() time.Time
}

// Open returns the store at path (created 0600 on first write). now may be
// nil (time.Now).
func Open(path string, now func() time.Time) *Store { return &Store{path: path, now: now} }

// Issue returns an open code for r, reusing an unexpired unused one for the
// same request, else creating one.
func (s *Store) Issue(r Request) (string, error) { return "", errors.New("approval: not implemented") }

// Lookup returns the code's state, or ErrUnknown, ErrUsed or ErrExpired.
func (s *Store) Lookup(code string) (Code, error) { return Code{}, ErrUnknown }

// Approve marks a code approved (a human said yes).
func (s *Store) Approve(code string) error { return errors.New("approval: not implemented") }

// Take consumes an approved, unexpired, unused code for r, if there is one,
// and returns it.
func (s *Store) Take(r Request) (code string, ok bool, err error) {
	return "", false, errors.New("approval: not implemented")
}

// List lists the codes that are neither used nor expired, oldest first.
func (s *Store) List() ([]Code, error) { return nil, errors.New("approval: not implemented") }
