package dest_test

import (
	"fmt"

	"github.com/bouncer-mcp/bouncer/internal/dest"
)

// Parse reads a value as the library that receives it would, and gives its
// kind and canonical form, or why it has none (then nothing vouches for it).
func ExampleParse() {
	for _, s := range []string{
		"API.Example.COM",
		"bücher.example",
		"Bob <Bob@Example.COM>",
		"https://Example.com/Path?q=A",
		"#general",
		"evil\u202eexample.com",
	} {
		d, err := dest.Parse(s)
		if err != nil {
			fmt.Printf("%q: %v\n", s, err)
			continue
		}
		fmt.Printf("%q: %s %s\n", s, d.Kind, d.Canon)
	}
	// Output:
	// "API.Example.COM": host api.example.com
	// "bücher.example": host xn--bcher-kva.example
	// "Bob <Bob@Example.COM>": address bob@example.com
	// "https://Example.com/Path?q=A": URL https://example.com/Path?q=A
	// "#general": name #general
	// "evil\u202eexample.com": it holds the invisible or private character U+202E
}

// Same under-matches: spellings of one host or address are one
// destination (the ASCII case of a local part too: every mail system
// delivers Bob@ and bob@ alike); a non-ASCII letter's case or a
// look-alike letter is not.
func ExampleSame() {
	for _, p := range [][2]string{
		{"bob@EXAMPLE.com", "Bob <bob@example.com>"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"bob@example.com", "BOB@example.com"},
		{"élise@example.com", "Élise@example.com"},
		{"example.com", "ex\u0430mple.com"},
	} {
		fmt.Printf("%+q %+q: %v\n", p[0], p[1], dest.Same(p[0], p[1]))
	}
	// Output:
	// "bob@EXAMPLE.com" "Bob <bob@example.com>": true
	// "b\u00fccher.example" "xn--bcher-kva.example": true
	// "bob@example.com" "BOB@example.com": true
	// "\u00e9lise@example.com" "\u00c9lise@example.com": false
	// "example.com" "ex\u0430mple.com": false
}
