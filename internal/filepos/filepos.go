// Package filepos is the one error type for a problem at a place in a file
// a person wrote: a policy file, a trust file, an MCP client's config. Its
// one text, "FILE:LINE: KEY: problem", is what `bouncer run`, `check`,
// `verify` and `init` print before exiting 2, so an editor's "go to" and a
// person reading it find the same spot whichever file it came from.
//
// policy.Error, bundle.Error and mcpconfig.Error are aliases of Error, so
// errors.As with any of those names (or this one) finds it.
//
// Problems located in a stream rather than a file a person edits (a line
// of the audit log, of a recorded session, an entry of pending.json) have
// their own types: they wrap a cause that callers test with errors.Is, and
// their texts ("line N: ...") are printed after the file's name by their
// callers.
//
// It imports nothing of Bouncer's, so any package may use it.
package filepos

import "strconv"

// Error is a problem at a place in a file. The message says what is wrong
// and ends with what the user can do about it.
type Error struct {
	File string // the file's path as given (or a pack's "packs/NAME.yaml")
	Line int    // 1-based; 0 when the problem has no single line (an unreadable file)
	Col  int    // 1-based byte column, for JSON; 0 when not known or not useful
	Key  string // the key at fault as a dotted path, e.g. "send_email.sink_params"; may be empty
	Msg  string
}

// Error formats the problem as FILE:LINE:COL: KEY: problem, leaving out
// LINE, COL and KEY when they are not known.
func (e *Error) Error() string {
	b := make([]byte, 0, len(e.File)+len(e.Key)+len(e.Msg)+16)
	b = append(b, e.File...)
	if e.Line > 0 {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(e.Line), 10)
		if e.Col > 0 {
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(e.Col), 10)
		}
	}
	b = append(b, ": "...)
	if e.Key != "" {
		b = append(b, e.Key...)
		b = append(b, ": "...)
	}
	b = append(b, e.Msg...)
	return string(b)
}
