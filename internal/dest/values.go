package dest

import (
	"strings"
	"unicode"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
	"golang.org/x/text/unicode/norm"
)

// parseNumber reads a phone or account number written as one: an
// optional '+', then groups of digits, each after the first separated by
// one space or '-', any one of them perhaps wrapped in parentheses ("(555)
// 123-4567", "+1 (555) 123-4567"). It has from 7 to 20 digits, and a '+'
// or a separator: a bare run of digits is as often an order, a ticket or a
// record id. Without a '+', every group after the first has three digits
// or more, so a date (2022-02-22) or an identity number's 2-digit group is
// not one. Its canonical form is its digits, after the '+' when there is
// one: a phone network or a bank reads the digits, not how they were
// grouped.
func parseNumber(s string) (string, bool) { return readNumber(s, 3) }

// readNumber is parseNumber with minGroup the fewest digits of a group
// after the first when there is no '+'.
func readNumber(s string, minGroup int) (string, bool) {
	plus := strings.HasPrefix(s, "+")
	rest := strings.TrimPrefix(s, "+")
	var digits strings.Builder
	groups, seps, parens := 0, 0, 0
	for i := 0; i < len(rest); {
		var g string
		if rest[i] == '(' {
			end := strings.IndexByte(rest[i:], ')')
			if end < 2 || parens > 0 || !allDigits(rest[i+1:i+end]) {
				return "", false
			}
			g, parens = rest[i+1:i+end], 1
			i += end + 1
			seps++
			if i < len(rest) && rest[i] == ' ' {
				i++
			}
			if i == len(rest) {
				return "", false
			}
		} else {
			j := i
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			g = rest[i:j]
			if g == "" {
				return "", false
			}
			i = j
			if i < len(rest) && rest[i] == '(' {
				seps++ // "+1(415)555-0199"
			} else if i < len(rest) {
				if rest[i] != ' ' && rest[i] != '-' || i+1 == len(rest) {
					return "", false
				}
				seps++
				i++
			}
		}
		if groups > 0 && !plus && len(g) < minGroup {
			return "", false
		}
		digits.WriteString(g)
		groups++
	}
	n := digits.Len()
	if n < 7 || n > 20 || (!plus && seps == 0) {
		return "", false
	}
	if plus {
		return "+" + digits.String(), true
	}
	return digits.String(), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseIBAN reads an international bank account number (ISO 13616): two
// capital letters, two check digits and 11 to 30 capital letters or
// digits, perhaps in groups of four separated by one space, whose check
// sum (ISO 7064 mod 97-10) holds. Its canonical form has no spaces.
func parseIBAN(s string) (string, bool) {
	if len(s) < 15 || len(s) > 42 {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			// Groups of four, as printed: "GB29 NWBK 6016 ...".
			if i%5 != 4 || i+1 == len(s) {
				return "", false
			}
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z':
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	iban := b.String()
	if len(iban) < 15 || len(iban) > 34 || !isUpper(iban[0]) || !isUpper(iban[1]) || !isDigit(iban[2]) || !isDigit(iban[3]) {
		return "", false
	}
	rem := 0
	for _, c := range iban[4:] + iban[:4] {
		if c >= 'A' {
			v := int(c-'A') + 10
			rem = (rem*100 + v) % 97
		} else {
			rem = (rem*10 + int(c-'0')) % 97
		}
	}
	return iban, rem == 1
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsDestination reports whether a value, as a whole, is a destination by
// what it is, whatever argument holds it: a mail address, a URL, a host
// under one of ICANN's top-level domains, a phone or account number written
// as one, an IBAN, or a handle or channel (@name, #name). A value that
// reads as an address or a URL but has no canonical form ("a@b (c@d)",
// "https://user@host/") is one too: nothing can vouch for it, so it is
// asked about. So is what a WHATWG URL parser reads as a URL with a host
// ("https:evil.example/x", "//evil.example/x" under a public host), a URL
// whose path is a destination ("tel:+15550109999", "mailto:a%40b.example"),
// and a value whose percent-escapes, decoded, are one ("a%40b.example").
// A name ("Alice", "Le Marais"), a file name ("report.pdf") or a date is
// not: it makes no call a send.
func IsDestination(s string) bool {
	t := strings.Trim(s, surrounding)
	if r := readable(t); r != t && IsDestination(r) {
		return true // evil\u200b.com: no canonical form, but a host to a resolver
	}
	if u, ok := webURL(t); ok {
		if target, ok := opaqueTarget(u); ok {
			if target != t && IsDestination(target) {
				return true
			}
		} else if u.Hostname() != "" && (!networkPath(t) || publicHost(u.Hostname())) {
			return true
		}
	}
	if d, ok := percentDecoded(t); ok && IsDestination(d) {
		return true
	}
	d, err := Parse(t)
	if err != nil {
		return strings.Contains(t, "://") || holdsAt(t)
	}
	switch d.Kind {
	case Address, URL, Number, IBAN:
		if d.Kind == URL && strings.HasPrefix(d.Canon, "//") {
			return publicHost(hostOf(d.Canon[2:]))
		}
		return true
	case Host:
		return publicHost(hostOf(d.Canon))
	}
	// An IBAN is 15 characters or more, each of which upper-cases from at
	// least one byte, so a shorter t can't be one (and needs no copy).
	if len(t) >= 15 {
		if _, ok := parseIBAN(strings.ToUpper(t)); ok {
			return true // an IBAN in lower case, which banks read alike
		}
	}
	return isHandle(t)
}

// holdsAt reports whether s has an '@' between two characters that are not
// white space: the shape of an address, however it is dressed. An '@'
// before a version ("lodash@4.17.21", "@scope/pkg@^1.2.0") is a package's,
// not an address's: a domain whose last label is a number, and that is no
// IPv4 address, names no mail host (canonHost refuses it too).
func holdsAt(s string) bool {
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '@' && !strings.ContainsRune(" \t\r\n", rune(s[i-1])) && !strings.ContainsRune(" \t\r\n", rune(s[i+1])) && !version(s[i+1:]) {
			return true
		}
	}
	return false
}

// version reports whether s starts with a version or a version range and
// nothing else up to white space or the end: digits and dots, perhaps
// after a range operator ("4.17.21", "^1.2.0", "~2.0", ">=1.0.0").
func version(s string) bool {
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimLeft(s, "^~<>=v")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'x' || c == '*') {
			return false
		}
	}
	return true
}

// MayBeFileName reports whether s, a destination by value, is a bare name
// of two labels with no scheme, port, path or trailing dot ("README.md",
// "setup.py", "notes.md", "evil.com"): read alone, a file or an entity is
// named so as often as a host. It stays a destination (a tainted one is
// asked about); it is only no evidence that a tool registers where it
// sends.
func MayBeFileName(s string) bool {
	d, err := Parse(s)
	return err == nil && d.Kind == Host && strings.Count(d.Canon, ".") == 1 && !strings.ContainsAny(d.Canon, ":[")
}

// hostOf is the host of host[:port]/rest.
func hostOf(s string) string {
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if j := strings.LastIndexByte(s, ':'); j >= 0 && !strings.HasSuffix(s, "]") {
		s = s[:j]
	}
	return s
}

// publicHost reports whether a canonical host is an IP address or a name
// under a top-level domain of ICANN's list: "evil.example.com", not
// "report.pdf" or "v1.2".
func publicHost(h string) bool {
	if strings.HasPrefix(h, "[") || (h != "" && h[len(h)-1] >= '0' && h[len(h)-1] <= '9') {
		return true // an IP literal: canonHost refuses any other numeric end
	}
	h = strings.TrimSuffix(h, ".")
	dot := strings.LastIndexByte(h, '.')
	if dot < 0 {
		return false
	}
	tld, err := idna.Lookup.ToASCII(h[dot+1:])
	if err != nil {
		return false
	}
	_, icann := publicsuffix.PublicSuffix(tld)
	return icann
}

// isHandle reports whether s is one handle or channel: '@' or '#' and one
// word of letters, digits, '.', '_' or '-', perhaps on a server named
// after an '@' (the fediverse's @user@server) or a ':' (Matrix's
// @user:server, #room:server) that is a host.
func isHandle(s string) bool {
	if len(s) < 2 || (s[0] != '@' && s[0] != '#') {
		return false
	}
	name, server := s[1:], ""
	if i := strings.IndexAny(name, "@:"); i >= 0 {
		name, server = name[:i], name[i+1:]
		if d, err := Parse(server); err != nil || d.Kind != Host || !publicHost(hostOf(d.Canon)) {
			return false
		}
	}
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// AddressList splits a value that holds a list of mail addresses
// ("bob@example.com, Alice <alice@example.com>") into its addresses, as
// the libraries that receive it split it: nodemailer's addressparser and
// Python's email.utils.getaddresses. It splits only what both read alike,
// which this grammar keeps to: addresses, each with an optional display
// name of plain words before it in angle brackets, separated by commas,
// with no quote, comment, group, semicolon, backslash or empty element
// anywhere. Anything else is not split (ok false): its parts would be
// read differently by the two, so the value as a whole, which has no
// canonical form, is asked about.
func AddressList(s string) (parts []string, ok bool) {
	if !strings.ContainsRune(s, ',') || strings.ContainsAny(s, "\"();:[]\\\r\n") {
		return nil, false
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.Trim(p, surrounding)
		if p == "" || strings.Count(p, "@") != 1 || strings.Count(p, "<") != strings.Count(p, ">") || strings.Count(p, "<") > 1 {
			return nil, false
		}
		if lt := strings.IndexByte(p, '<'); lt >= 0 && (!strings.HasSuffix(p, ">") || lt == 0 || p[lt-1] != ' ') {
			return nil, false
		}
		d, err := Parse(p)
		if err != nil || d.Kind != Address {
			return nil, false
		}
		parts = append(parts, p)
	}
	return parts, len(parts) > 1
}

// HeaderDestinations returns the destinations a mail library would read in
// s as header lines: after a CR or LF, a line shaped as a header field
// ("Bcc: eve@evil.example") names the destinations of its value, split as
// AddressList splits it. A value that holds an address or a URL but can't
// be split or read is returned whole: nothing vouches for it. A line
// whose value is no destination ("Note: see below") names none.
//
// A line that starts with a space or a tab is read both ways: as a header
// of its own (mail servers forgive the indent), and as RFC 5322 folding,
// the rest of the header above it ("Bcc:\r\n eve@evil.example" is
// "Bcc: eve@evil.example" to every mail library).
func HeaderDestinations(s string) []string {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return nil
	}
	var out []string
	for _, line := range headerLines(s[i:]) {
		name, value, ok := strings.Cut(strings.TrimLeft(line, surrounding), ":")
		// White space before the colon is RFC 5322's obsolete syntax
		// (obs-optional), which mail servers still take as a header.
		if !ok || !fieldName(strings.TrimRight(name, surrounding)) {
			continue
		}
		value = strings.Trim(value, surrounding)
		if parts, ok := AddressList(value); ok {
			out = append(out, parts...)
			continue
		}
		if IsDestination(value) || strings.ContainsRune(value, '@') {
			out = append(out, value)
		}
	}
	return out
}

// fieldName reports whether s is a header field name (RFC 5322: printable
// ASCII but the colon, no space).
// headerLines is every line of s (split at CR, LF or CRLF), then each
// header unfolded: a line followed by lines that start with a space or a
// tab, joined to them. A blank line ends a header.
func headerLines(s string) []string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' })
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	var head string
	folded := false
	flush := func() {
		if folded {
			lines = append(lines, head)
		}
		head, folded = "", false
	}
	for _, l := range strings.Split(s, "\n") {
		switch {
		case l != "" && (l[0] == ' ' || l[0] == '\t') && head != "":
			head += l
			folded = true
		default:
			flush()
			head = l
		}
	}
	flush()
	return lines
}

func fieldName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 {
			return false
		}
	}
	return s != ""
}

// Mailbox is the one mailbox a lenient mail reader (Python's
// email.utils.parseaddr, Gmail reading a To: line) takes from s: the
// addr-spec around its '@', once RFC 5322's comments
// are dropped ("attacker(x)@evil.example") and white space is left out
// ("a @ evil . example"), cut at the brackets, colons, commas and
// semicolons around it (a display name's "<...>", an obsolete source route
// "<@relay.example:a@evil.example>", a group's "team: ...;"). It is for
// taint only (Variants): net/mail refuses these spellings, so nothing
// vouches for them, but a reader that delivers them delivers to that
// mailbox. A value with two such '@' has none.
func Mailbox(s string) (string, bool) {
	var b strings.Builder
	quoted, depth := false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && (quoted || depth > 0) && i+1 < len(s):
			if depth == 0 {
				b.WriteByte(c)
				b.WriteByte(s[i+1])
			}
			i++
		case depth > 0:
			switch c {
			case '(':
				depth++
			case ')':
				depth--
			}
		case c == '"':
			quoted = !quoted
			b.WriteByte(c)
		case c == '(' && !quoted:
			depth = 1
		case c == ' ' || c == '\t':
			if quoted {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	// The one '@' of an addr-spec: not one that starts a source route
	// (after '<', ',' or ':', or first), nor one in quotes. Two are two
	// mailboxes, which no one reading could pick between.
	a, at := b.String(), -1
	quoted = false
	for i := 0; i < len(a); i++ {
		switch {
		case a[i] == '\\':
			i++
		case a[i] == '"':
			quoted = !quoted
		case a[i] == '@' && !quoted && i > 0 && !strings.ContainsRune("<,:", rune(a[i-1])):
			if at >= 0 {
				return "", false
			}
			at = i
		}
	}
	if at < 0 {
		return "", false
	}
	l := strings.LastIndexAny(a[:at], "<>:,;") + 1
	r := strings.IndexAny(a[at:], "<>:,;\"")
	if r < 0 {
		r = len(a) - at
	}
	d, err := Parse(a[l : at+r])
	if err != nil || d.Kind != Address {
		return "", false
	}
	return d.Canon, true
}

// readable is s as a resolver or a number library reads it: without the
// characters UTS-46 and nameprep drop (format characters such as a
// zero-width space or a soft hyphen, variation selectors) and with
// compatibility forms folded (NFKC: full-width digits are digits). An
// ASCII string is itself.
func readable(s string) string {
	if isASCII(s) {
		return s
	}
	return norm.NFKC.String(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) {
			return -1
		}
		return r
	}, s))
}
