// Package jsonc reads and edits JSON with comments (JSONC: what VS Code,
// Cursor and Gemini CLI accept in their settings; strict JSON is a
// subset) so that a file a person keeps can be changed without losing a
// byte of it: the tree it reads keeps each value's byte range, and an edit
// splices new text into those ranges, so comments, key order, escapes and
// layout elsewhere stay as written.
//
// It also holds the rule for a key repeated in one object (CheckUnique)
// and the error that names a place in such a file (Error). It knows
// nothing of MCP clients: internal/mcpconfig and internal/hooks say which
// keys of which file mean what. The lexical pieces it shares with
// Bouncer's other JSON readers (a \u escape's hex digits) are
// internal/jsontext's; strings are decoded by encoding/json itself.
package jsonc

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/bouncer-mcp/bouncer/internal/filepos"
)

// Kind is the type of a JSON value, by the byte its text starts with.
type Kind byte

// The kinds of value.
const (
	Object Kind = '{'
	Array  Kind = '['
	String Kind = '"'
	Number Kind = '0'
	True   Kind = 't'
	False  Kind = 'f'
	Null   Kind = 'n'
)

// Node is one JSON value with the byte range it occupies in the document, so
// that a rewrite can replace one value and leave every other byte of the
// file as it was. Objects keep their members in file order.
type Node struct {
	Kind       Kind
	Start, End int // data[Start:End] is the value's text
	Members    []Member
	Elems      []*Node
	Str        string // decoded string, for Kind String
}

// Member is one key and value of an object.
type Member struct {
	Key              string
	KeyStart, KeyEnd int // data[KeyStart:KeyEnd] is the key as written, quotes included
	Val              *Node
}

// Get returns the value of the member named key, the last one when the
// key repeats: that is the one every client reads (JSON.parse and VS Code's
// jsonc-parser keep the last of two equal keys). On the path init reads and
// rewrites a repeat never gets here (CheckUnique refuses it); elsewhere (a
// hook file) reading the last keeps bouncer on the client's side.
func (n *Node) Get(key string) (*Node, bool) {
	if n == nil || n.Kind != Object {
		return nil, false
	}
	for i := len(n.Members) - 1; i >= 0; i-- {
		if n.Members[i].Key == key {
			return n.Members[i].Val, true
		}
	}
	return nil, false
}

// Has reports whether object n has a member named key.
func (n *Node) Has(key string) bool { _, ok := n.Get(key); return ok }

// Error is a problem with a JSONC file: the one file-position error
// (package filepos), printed as "FILE:LINE:COL: problem". Line and Col are
// 1-based and 0 when the problem has no single place (an unreadable file).
type Error = filepos.Error

// ErrorAt is msg about file, at byte offset off of its text data.
func ErrorAt(file string, data []byte, off int, msg string) *Error {
	line, col := LineCol(data, off)
	return &Error{File: file, Line: line, Col: col, Msg: msg}
}

// LineCol turns a byte offset into a 1-based line and column (the column
// counts bytes, which is what editors' "go to" accepts for ASCII JSON).
func LineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// Parse reads data as JSONC and returns its tree; file names it in the
// error, which is an *Error at the fault. Strict JSON is a subset, so one
// reader serves every client's file; a rewrite keeps the comments because
// it only replaces the byte ranges it changes.
func Parse(file string, data []byte) (*Node, error) {
	n, off, err := parse(data, true)
	if err != nil {
		msg := "not valid JSON: " + err.Error()
		if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
			msg += " (the file starts with a UTF-8 byte-order mark; save it without one)"
		}
		return nil, ErrorAt(file, data, off, msg)
	}
	return n, nil
}

// Quote is s as a JSON string, with <, > and & as they are: the text is
// for a file a person reads, not for HTML.
func Quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Indent returns the leading whitespace of the first indented line,
// which in a formatted file is one level; two spaces when there is none.
func Indent(data []byte) string {
	for _, line := range bytes.Split(data, []byte("\n")) {
		i := 0
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i > 0 && i < len(line) && line[i] != '\r' {
			return string(line[:i])
		}
	}
	return "  "
}

// Newline is the text's line ending: "\r\n" when it has one, else "\n".
func Newline(data []byte) string {
	if bytes.Contains(data, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// LineIndent is the whitespace before off on its line, when off starts
// its line's text; ok is false (and the indent "") when other text comes
// first.
func LineIndent(data []byte, off int) (indent string, ok bool) {
	i := off
	for i > 0 && (data[i-1] == ' ' || data[i-1] == '\t') {
		i--
	}
	if i == 0 || data[i-1] == '\n' {
		return string(data[i:off]), true
	}
	return "", false
}

// Splice is one edit: data[Start:End] becomes Text.
type Splice struct {
	Start, End int
	Text       string
}

// Apply returns data with the edits made, which must not overlap; data
// itself when there are none.
func Apply(data []byte, edits []Splice) []byte {
	if len(edits) == 0 {
		return data
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].Start < edits[j].Start })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(data[last:e.Start])
		out.WriteString(e.Text)
		last = e.End
	}
	out.Write(data[last:])
	return out.Bytes()
}
