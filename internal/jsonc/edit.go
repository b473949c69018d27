package jsonc

import (
	"fmt"
	"strings"
)

// Doc is a JSONC document edited in place: each edit splices new text into
// the bytes as they are, so comments, order and layout elsewhere stay.
type Doc struct {
	// Path names the file in messages.
	Path string
	data []byte
	root *Node
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
	root, err := Parse(d.Path, data)
	if err != nil {
		return err
	}
	if root.Kind != Object {
		return ErrorAt(d.Path, data, root.Start, "the top level is not a JSON object")
	}
	d.data, d.root = data, root
	return nil
}

// Bytes is the document's current text.
func (d *Doc) Bytes() []byte { return d.data }

// At walks keys from the root; nil when a key is missing.
func (d *Doc) At(keys ...string) *Node {
	n := d.root
	for _, k := range keys {
		v, ok := n.Get(k)
		if !ok {
			return nil
		}
		n = v
	}
	return n
}

func (d *Doc) errAt(n *Node, msg string) error {
	return ErrorAt(d.Path, d.data, n.Start, msg)
}

// Array returns the elements of the array at keys (nil when it is
// missing), refusing a value of another type.
func (d *Doc) Array(keys ...string) ([]*Node, error) {
	n := d.At(keys...)
	if n == nil {
		return nil, nil
	}
	if n.Kind != Array {
		return nil, d.errAt(n, fmt.Sprintf("%s is not a list", strings.Join(keys, ".")))
	}
	return n.Elems, nil
}

// Append adds value (JSON text) at the end of the array at keys, creating
// the array and the objects above it where they are missing.
func (d *Doc) Append(value string, keys ...string) error {
	parent := d.root
	for i, k := range keys {
		v, ok := parent.Get(k)
		if !ok {
			text := "[" + value + "]"
			for j := len(keys) - 1; j > i; j-- {
				text = "{" + Quote(keys[j]) + ": " + text + "}"
			}
			return d.Splice(d.addMember(parent, k, text)...)
		}
		want := Object
		if i == len(keys)-1 {
			want = Array
		}
		if v.Kind != want {
			what := "an object"
			if want == Array {
				what = "a list"
			}
			return d.errAt(v, fmt.Sprintf("%s is not %s; fix it by hand", strings.Join(keys[:i+1], "."), what))
		}
		parent = v
	}
	return d.Splice(d.addElem(parent, value)...)
}

// Remove deletes element elem of the array arr (both of this document),
// with the comma that separates it from its neighbour.
func (d *Doc) Remove(arr, elem *Node) error {
	idx := -1
	for i, e := range arr.Elems {
		if e == elem {
			idx = i
		}
	}
	var s Splice
	switch {
	case idx < 0:
		return d.errAt(elem, "not an element of this list") // a caller's mistake, refused
	case len(arr.Elems) == 1:
		s = Splice{arr.Start, arr.End, "[]"}
	case idx < len(arr.Elems)-1:
		s = Splice{elem.Start, arr.Elems[idx+1].Start, ""}
	default:
		s = Splice{arr.Elems[idx-1].End, elem.End, ""}
	}
	return d.Splice(s)
}

// RemoveMember deletes the member key of the object obj (of this
// document), with the comma that separates it from its neighbour: the
// member addMember would have added goes as it came. A missing key is
// no edit.
func (d *Doc) RemoveMember(obj *Node, key string) error {
	idx := -1
	for i, m := range obj.Members {
		if m.Key == key {
			idx = i
		}
	}
	var s Splice
	switch {
	case idx < 0:
		return nil
	case len(obj.Members) == 1:
		s = Splice{obj.Start, obj.End, "{}"}
		if obj == d.root {
			// The root keeps its own line breaks: what fillEmpty wrote.
			s.Text = "{" + d.nl() + "}"
		}
	case idx < len(obj.Members)-1:
		s = Splice{lineStartOr(d.data, obj.Members[idx].KeyStart), lineStartOr(d.data, obj.Members[idx+1].KeyStart), ""}
	default:
		s = Splice{obj.Members[idx-1].Val.End, obj.Members[idx].Val.End, ""}
	}
	return d.Splice(s)
}

// lineStartOr is the start of the line holding off when only whitespace
// comes before off on it (so that a member on its own line goes with its
// indentation), else off.
func lineStartOr(data []byte, off int) int {
	if ind, own := LineIndent(data, off); own {
		return off - len(ind)
	}
	return off
}

// Splice makes the edits, which are of the current text and must not
// overlap, and reads the result again: the nodes read before are stale
// after it. The result must still be a JSONC object, else nothing changes.
func (d *Doc) Splice(edits ...Splice) error {
	return d.set(Apply(d.data, edits))
}

func (d *Doc) nl() string { return Newline(d.data) }

// afterComma returns the edit that puts a comma after the value ending at
// end unless one follows already (a JSONC trailing comma).
func (d *Doc) afterComma(end int) []Splice {
	p := &jparser{data: d.data, pos: end, jsonc: true}
	_ = p.ws()
	if p.peek() == ',' {
		return nil
	}
	return []Splice{{end, end, ","}}
}

// insertBefore puts item before the closing bracket of container n whose
// last child ends at lastEnd and whose children start at firstStart.
func (d *Doc) insertBefore(n *Node, firstStart, lastEnd int, item string) []Splice {
	edits := d.afterComma(lastEnd)
	closing := n.End - 1
	if ind, own := LineIndent(d.data, closing); own {
		childInd, ok := LineIndent(d.data, firstStart)
		if !ok {
			childInd = ind + Indent(d.data)
		}
		lineStart := closing - len(ind)
		return append(edits, Splice{lineStart, lineStart, childInd + item + d.nl()})
	}
	return append(edits, Splice{closing, closing, " " + item})
}

func (d *Doc) addMember(obj *Node, key, value string) []Splice {
	item := Quote(key) + ": " + value
	if len(obj.Members) == 0 {
		return d.fillEmpty(obj, "{", item, "}")
	}
	last := obj.Members[len(obj.Members)-1]
	return d.insertBefore(obj, obj.Members[0].KeyStart, last.Val.End, item)
}

func (d *Doc) addElem(arr *Node, value string) []Splice {
	if len(arr.Elems) == 0 {
		return d.fillEmpty(arr, "[", value, "]")
	}
	return d.insertBefore(arr, arr.Elems[0].Start, arr.Elems[len(arr.Elems)-1].End, value)
}

// fillEmpty replaces an empty container (comments in it included) by one
// holding item: on lines of its own for the root object, inline otherwise.
func (d *Doc) fillEmpty(n *Node, open, item, closing string) []Splice {
	if n == d.root {
		ind := Indent(d.data)
		return []Splice{{n.Start, n.End, open + d.nl() + ind + item + d.nl() + closing}}
	}
	return []Splice{{n.Start, n.End, open + item + closing}}
}
