// Package audit appends one JSON line per verdict to an append-only log, each
// line chained to the one before it by hash, and reads and verifies such logs.
package audit

import (
	"encoding/json"
	"errors"
	"time"
)

// Entry is one audit line. The first seven fields are fixed by the contract;
// the rest are ours. Prev is filled in by Append.
type Entry struct {
	TS      time.Time       `json:"ts"`
	Server  string          `json:"server"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Verdict string          `json:"verdict"`
	Reason  string          `json:"reason"`
	Rule    string          `json:"rule"`
	// Session identifies one proxy process's session.
	Session string `json:"session,omitempty"`
	// ID is the JSON-RPC id of the tools/call, as sent.
	ID json.RawMessage `json:"id,omitempty"`
	// Code is the one-time approval code issued or redeemed, if any.
	Code string `json:"code,omitempty"`
	// Prev is "sha256:HEX" of the previous line's bytes (without its
	// newline), or "sha256:" followed by 64 zeros for the first line.
	Prev string `json:"prev"`
}

// Log appends to one audit file. It is safe for concurrent use, and several
// processes may append to the same file: each Append takes an exclusive file
// lock, reads the last line to chain to, and writes one line.
type Log struct{ path string }

// Open opens (creating 0600, and its directory 0700) the audit file at path.
func Open(path string) (*Log, error) { return nil, errors.New("audit: not implemented") }

// Append writes e as one line, chained to the last line in the file, and
// returns only after the line is written (and synced). If it returns an
// error the caller must deny the call it describes.
func (l *Log) Append(e Entry) error { return errors.New("audit: not implemented") }

// Close releases the file.
func (l *Log) Close() error { return nil }

// ReadFile reads every line of an audit file. A malformed line is an error
// naming its line number.
func ReadFile(path string) ([]Entry, error) { return nil, errors.New("audit: not implemented") }

// VerifyFile checks the hash chain of an audit file and returns the number
// of lines verified; an edited, removed or reordered line is an error naming
// the first line where the chain breaks.
func VerifyFile(path string) (int, error) { return 0, errors.New("audit: not implemented") }
