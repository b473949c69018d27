package dest

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// MinMention is the shortest word of free text, in runes, that names a
// destination: a name the user typed ("Bob", "Eve") is theirs to send to;
// "to", "me" and "it" are not names.
const MinMention = 3

// MaxPhrase bounds the words of a multi-word destination ("Le Marais
// Boutique") that free text names.
const MaxPhrase = 6

// Mentions returns the destinations that a person's free text names, each
// as the Key of its canonical form: every word of it, and every run of up
// to MaxPhrase words, read as a whole, with the quotes, brackets and
// sentence punctuation around it taken off, "mailto:" dropped and an
// address in <...> taken out. A word that runs into the next sentence
// ("www.example.com.They") also names its part before the sentence
// punctuation, when that part is a host, an address or a URL: nothing
// shorter than a whole host, so not before a top-level domain
// ("acme.co.UK" names no acme.co). No other part of a word names anything: a
// link names itself, not the link inside its query, and "hotel" does not
// name "Riverside View Hotel".
func Mentions(text string) []string { return MentionsMin(text, MinMention) }

// MentionsMin is Mentions with min in place of MinMention: a tool's text
// names words only as long as taint would trace (the whole value of a
// line or field is read by Entries).
func MentionsMin(text string, min int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string, hostOnly bool) {
		if utf8.RuneCountInString(s) < min {
			return
		}
		d, err := Parse(s)
		if err != nil || (hostOnly && d.Kind != Host && d.Kind != Address) {
			return
		}
		if k := d.Key(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	words := strings.FieldsFunc(text, isBreak)
	for i, w := range words {
		t := trimWord(w)
		add(t, false)
		for _, inner := range wordParts(t) {
			add(inner, false)
		}
		for _, pre := range sentencePrefixes(t) {
			add(pre, true)
		}
		for n := 2; n <= MaxPhrase && i+n <= len(words); n++ {
			add(trimWord(strings.Join(words[i:i+n], " ")), false)
		}
	}
	return out
}

// MentionsOf is MentionsMin for one value that is a field as a whole (a
// JSON string in trusted output): the value itself, of any length from
// MinMention, then what its words name.
func MentionsOf(value string, min int) []string {
	out := MentionsMin(value, min)
	if d, err := Parse(value); err == nil && utf8.RuneCountInString(strings.TrimSpace(value)) >= MinMention {
		k := d.Key()
		for _, o := range out {
			if o == k {
				return out
			}
		}
		out = append(out, k)
	}
	return out
}

// isBreak separates the words of free text: any white space (a line break
// too), so that a destination never spans a line.
func isBreak(r rune) bool { return unicode.IsSpace(r) }

// trimWord takes off what surrounds a word in prose: quotes, brackets and
// the punctuation that ends a clause.
func trimWord(w string) string {
	for {
		t := strings.TrimLeftFunc(w, isOpener)
		t = strings.TrimRightFunc(t, func(r rune) bool { return isCloser(r) || isClauseEnd(r) })
		if t == w {
			return t
		}
		w = t
	}
}

func isOpener(r rune) bool {
	return strings.ContainsRune("\"'`([{<«‹“‘„‚", r)
}

func isCloser(r rune) bool {
	return strings.ContainsRune("\"'`)]}>»›”’", r)
}

func isClauseEnd(r rune) bool {
	return strings.ContainsRune(".,;:!?…", r)
}

// wordParts returns the destinations inside one word that a reader takes
// as separate: the address of "Bob<bob@example.com>" and what follows
// "mailto:".
func wordParts(w string) []string {
	var out []string
	if i := strings.IndexByte(w, '<'); i >= 0 {
		if j := strings.IndexByte(w[i:], '>'); j > 0 {
			out = append(out, w[i+1:i+j])
		}
	}
	if len(w) > 7 && strings.EqualFold(w[:7], "mailto:") {
		out = append(out, trimWord(w[7:]))
	}
	return out
}

// sentencePrefixes returns the parts of a word before each point where a
// new sentence starts inside it with no space: "x.com.They" gives "x.com";
// "x.com,and" gives "x.com".
func sentencePrefixes(w string) []string {
	var out []string
	for i := 1; i < len(w)-1; i++ {
		c := w[i]
		if !isClauseEnd(rune(c)) {
			continue
		}
		next, _ := utf8.DecodeRuneInString(w[i+1:])
		if c == '.' && (!unicode.IsUpper(next) || strings.IndexFunc(w[:i], unicode.IsUpper) >= 0 || topLevel(w[i+1:])) {
			// A dot inside a host, a decimal or a file name; a new
			// sentence starts with a capital after a host written in
			// lower case ("x.com.They", not "Www.Example.Com"), and
			// not with a top-level domain: "acme.co.UK" is one host,
			// and acme.co is someone else's.
			continue
		}
		if c == ':' {
			continue // a port, a scheme
		}
		if (unicode.IsLetter(next) || unicode.IsDigit(next)) && wholeHost(w[:i]) {
			out = append(out, w[:i])
		}
	}
	return out
}

// wholeHost reports whether a part cut before a sentence break can be a
// host that a sentence named: one whose host ends in a top-level domain
// and does not start with one. "org.example.app.Config" and
// "com.example.myapp.Main" are reverse-DNS identifiers, read from the
// top-level domain down, and name no host; a cut that ends elsewhere than
// at a top-level domain named none either.
func wholeHost(s string) bool {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	s = hostOf(s)
	first, _, ok := strings.Cut(s, ".")
	return ok && publicHost(s) && !topLevel(first)
}

// topLevel reports whether rest, the part of a word after a dot, starts
// with a label that is a top-level domain (ICANN's list: "UK", "Com",
// "Now"), so that the dot before it may be one inside a host.
func topLevel(rest string) bool {
	end := strings.IndexFunc(rest, func(r rune) bool {
		return !(r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r))
	})
	if end >= 0 {
		rest = rest[:end]
	}
	label, err := idna.Lookup.ToASCII(rest)
	if err != nil || label == "" {
		return false
	}
	_, icann := publicsuffix.PublicSuffix(label)
	return icann
}

// Entries returns the whole entries of a listing as a tool's text gives
// it: each line, with a list marker ("- ", "* ", "• ", "1. ", "1) ") and
// the space around it taken off. A line is one value; nothing inside it is
// an entry of its own.
func Entries(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		line = strings.TrimSpace(trimMarker(line))
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// trimMarker takes a list marker off the front of a line.
func trimMarker(line string) string {
	for _, m := range []string{"- ", "* ", "• "} {
		if strings.HasPrefix(line, m) {
			return line[len(m):]
		}
	}
	i := 0
	for i < len(line) && i < 4 && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' ' {
		return line[i+2:]
	}
	return line
}
