package mcpconfig

import (
	"bytes"
	"fmt"
	"strings"
)

// Doc is a JSONC document edited in place: each edit splices new text into
// the bytes as they are, so comments, order and layout elsewhere stay.
type Doc struct {
	// Path names the file in messages.
	Path string
	data []byte
	root *node
}

// ParseDoc reads a JSONC document whose top level must be an object.
func ParseDoc(path string, data []byte) (*Doc, error) {
	d := &Doc{Path: path}
	if err := d.set(data); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Doc) set(data []byte) error {
	root, err := parse(d.Path, data)
	if err != nil {
		return err
	}
	if root.kind != '{' {
		line, col := lineCol(data, root.start)
		return &Error{File: d.Path, Line: line, Col: col, Msg: "the top level is not a JSON object"}
	}
	d.data, d.root = data, root
	return nil
}

// Bytes is the document's current text.
func (d *Doc) Bytes() []byte { return d.data }

// at walks keys from the root; nil when a key is missing.
func (d *Doc) at(keys ...string) *node {
	n := d.root
	for _, k := range keys {
		v, ok := n.get(k)
		if !ok {
			return nil
		}
		n = v
	}
	return n
}

func (d *Doc) errAt(n *node, msg string) error {
	line, col := lineCol(d.data, n.start)
	return &Error{File: d.Path, Line: line, Col: col, Msg: msg}
}

// Array returns the elements of the array at keys (nil when it is
// missing), refusing a value of another type.
func (d *Doc) array(keys ...string) ([]*node, error) {
	n := d.at(keys...)
	if n == nil {
		return nil, nil
	}
	if n.kind != '[' {
		return nil, d.errAt(n, fmt.Sprintf("%s is not a list", strings.Join(keys, ".")))
	}
	return n.elems, nil
}

// Append adds value (JSON text) at the end of the array at keys, creating
// the array and the objects above it where they are missing.
func (d *Doc) Append(value string, keys ...string) error {
	parent := d.root
	for i, k := range keys {
		v, ok := parent.get(k)
		if !ok {
			text := "[" + value + "]"
			for j := len(keys) - 1; j > i; j-- {
				text = "{" + jsonString(keys[j]) + ": " + text + "}"
			}
			return d.splice(d.addMember(parent, k, text))
		}
		want := byte('{')
		if i == len(keys)-1 {
			want = '['
		}
		if v.kind != want {
			what := "an object"
			if want == '[' {
				what = "a list"
			}
			return d.errAt(v, fmt.Sprintf("%s is not %s; fix it by hand", strings.Join(keys[:i+1], "."), what))
		}
		parent = v
	}
	return d.splice(d.addElem(parent, value))
}

// Remove deletes element elem of the array at keys, with the comma that
// separates it from its neighbour.
func (d *Doc) remove(arr, elem *node) error {
	idx := -1
	for i, e := range arr.elems {
		if e == elem {
			idx = i
		}
	}
	var s splice
	switch {
	case len(arr.elems) == 1:
		s = splice{arr.start, arr.end, "[]"}
	case idx < len(arr.elems)-1:
		s = splice{elem.start, arr.elems[idx+1].start, ""}
	default:
		s = splice{arr.elems[idx-1].end, elem.end, ""}
	}
	return d.splice([]splice{s})
}

func (d *Doc) splice(edits []splice) error {
	c := &Config{data: d.data}
	return d.set(c.apply(edits))
}

// indentOf is the whitespace before the line holding off, when off starts
// its line's text; ok is false when other text comes first.
func (d *Doc) indentOf(off int) (string, bool) {
	i := off
	for i > 0 && (d.data[i-1] == ' ' || d.data[i-1] == '\t') {
		i--
	}
	if i == 0 || d.data[i-1] == '\n' {
		return string(d.data[i:off]), true
	}
	return "", false
}

func (d *Doc) nl() string {
	if bytes.Contains(d.data, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// afterComma returns the edit that puts a comma after the value ending at
// end unless one follows already (a JSONC trailing comma).
func (d *Doc) afterComma(end int) []splice {
	p := &jparser{data: d.data, pos: end, jsonc: true}
	_ = p.ws()
	if p.peek() == ',' {
		return nil
	}
	return []splice{{end, end, ","}}
}

// insertBefore puts item before the closing bracket of container n whose
// last child ends at lastEnd and whose children start at firstStart.
func (d *Doc) insertBefore(n *node, firstStart, lastEnd int, item string) []splice {
	edits := d.afterComma(lastEnd)
	closing := n.end - 1
	if ind, own := d.indentOf(closing); own {
		childInd, ok := d.indentOf(firstStart)
		if !ok {
			childInd = ind + detectIndent(d.data)
		}
		lineStart := closing - len(ind)
		return append(edits, splice{lineStart, lineStart, childInd + item + d.nl()})
	}
	return append(edits, splice{closing, closing, " " + item})
}

func (d *Doc) addMember(obj *node, key, value string) []splice {
	item := jsonString(key) + ": " + value
	if len(obj.members) == 0 {
		return d.fillEmpty(obj, "{", item, "}")
	}
	last := obj.members[len(obj.members)-1]
	return d.insertBefore(obj, obj.members[0].keyStart, last.val.end, item)
}

func (d *Doc) addElem(arr *node, value string) []splice {
	if len(arr.elems) == 0 {
		return d.fillEmpty(arr, "[", value, "]")
	}
	return d.insertBefore(arr, arr.elems[0].start, arr.elems[len(arr.elems)-1].end, value)
}

// fillEmpty replaces an empty container (comments in it included) by one
// holding item: on lines of its own for the root object, inline otherwise.
func (d *Doc) fillEmpty(n *node, open, item, closing string) []splice {
	if n == d.root {
		ind := detectIndent(d.data)
		return []splice{{n.start, n.end, open + d.nl() + ind + item + d.nl() + closing}}
	}
	return []splice{{n.start, n.end, open + item + closing}}
}
