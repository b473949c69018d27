// Package envexpand is Bouncer's one rule for taking ${NAME} from the
// environment into a value a person wrote: a `bouncer run --header` value
// and a trust file's audit_ship.headers. Both carry credentials, so the
// rule is the same in both places by construction, and its tests are its
// only statement:
//
//   - ${NAME} is replaced by the variable's value. NAME is letters, digits
//     and _, not starting with a digit (a POSIX shell name).
//   - $NAME, a lone $ and a { without a $ before it are literal text: only
//     "${" starts a reference, so a value such as "pa$$word" stays as it is.
//   - An unset variable is an error naming it (and the caller's file, line
//     and key, or flag), never an empty credential sent in its place. A
//     variable that is set to the empty string expands to "".
//   - A "${" that does not start a well-formed ${NAME} (no closing brace, an
//     empty or invalid name, a shell default such as ${NAME:-x}) is an
//     error, not literal text: the person meant a variable, and sending the
//     text as written would be a credential other than the one they meant.
//     There is no escape for a literal "${"; a value that needs one is
//     written where values are taken as written (`--header-file`).
//   - A value is inserted as it is, never expanded again: a variable whose
//     value holds "${OTHER}" sends those characters.
//
// An error never quotes the value it was read from beyond the variable's
// name: the rest may be a token.
//
// The MCP client configs that `bouncer run --config` reads follow each
// client's own rule instead (internal/mcpconfig's Expander), because there
// bouncer must expand exactly as the client that wrote the file would.
package envexpand

import (
	"fmt"
	"strings"
)

// Lookup reads one variable; ok is false when it is unset. os.LookupEnv is
// one.
type Lookup func(name string) (value string, ok bool)

// Error is a value that could not be expanded.
type Error struct {
	// Where is the caller's name for the value ("trust.yaml:3:
	// audit_ship.headers.Authorization", "--header #1 (Authorization)"),
	// or "".
	Where string
	// Name is the unset variable; "" when the reference is malformed.
	Name string
	// Offset is the byte offset of the reference's "${" in the value.
	Offset int
	// unclosed is true for a "${" with no "}" after it.
	unclosed bool
}

func (e *Error) Error() string {
	var msg string
	switch {
	case e.Name != "":
		msg = fmt.Sprintf("${%s} is not set in the environment; set it where bouncer is started", e.Name)
	case e.unclosed:
		msg = fmt.Sprintf(`the "${" at byte %d has no closing "}"; write a variable as ${NAME}`, e.Offset)
	default:
		msg = fmt.Sprintf(`the "${...}" at byte %d is not a variable reference; write ${NAME} (letters, digits and _, not starting with a digit; there are no defaults or other forms)`, e.Offset)
	}
	if e.Where == "" {
		return msg
	}
	return e.Where + ": " + msg
}

// Expand returns s with each ${NAME} replaced by lookup(NAME). where names
// the value in an error (see Error.Where). The error is an *Error.
func Expand(where, s string, lookup Lookup) (string, error) {
	var b strings.Builder
	rest, base := s, 0
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			if base == 0 {
				return s, nil
			}
			b.WriteString(rest)
			return b.String(), nil
		}
		name, n, err := ref(rest[i:])
		if err != nil {
			err.Where, err.Offset = where, base+i
			return "", err
		}
		v, ok := lookup(name)
		if !ok {
			return "", &Error{Where: where, Name: name, Offset: base + i}
		}
		b.WriteString(rest[:i])
		b.WriteString(v)
		rest, base = rest[i+n:], base+i+n
	}
}

// Check reports the first malformed reference of s, as Expand would, without
// reading any variable: a loader calls it so that a mistake is named with
// the rest of the file's, before anything runs.
func Check(where, s string) error {
	_, err := Expand(where, s, func(string) (string, bool) { return "", true })
	return err
}

// ref reads the reference at the start of s (which starts with "${"): its
// name and its length in bytes.
func ref(s string) (name string, n int, err *Error) {
	j := strings.IndexByte(s, '}')
	if j < 0 {
		return "", 0, &Error{unclosed: true}
	}
	name = s[2:j]
	if !validName(name) {
		return "", 0, &Error{}
	}
	return name, j + 1, nil
}

// validName reports whether name is a POSIX shell variable name.
func validName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}
