// Package dest is the one place that says whether two destinations are the
// same one, for every path that allows a send: what the user typed, the
// policy's trusted_destinations, trusted output, remembered destinations,
// approvals and policy suggest.
//
// An allow must under-match. So a destination is compared in one canonical
// form, read the way the library that receives it reads it: a host through
// UTS-46 (IDNA2008 lookup, as browsers, node's URL and mail libraries do),
// an address through net/mail (its local part's ASCII case folded, as every
// mail system a user meets folds it), a URL by its scheme and host with the
// rest kept byte for byte, a phone or account number written as one by its
// digits, an IBAN without its spaces, and anything else (a channel, a
// handle, a person's or a hotel's name, a bare run of digits) exactly as
// written. Nothing else is folded: a dotless ı, a sharp ẞ, a final ς, a
// non-ASCII capital in a local part or a full-width letter stays what it
// is, unless IDNA itself maps it inside a host, where every receiver maps
// it the same way. A value with control, format or
// bidirectional characters, a line break, an unusual space or invalid
// UTF-8 has no canonical form: nothing vouches for it.
//
// Taint, where a false match only denies, folds far more (package taint).
// It may ask for a destination's other spellings (Variants) so that a host
// re-spelled in punycode, a URL as a WHATWG parser reads it (whatwg.go) or
// a number by its digits is still seen.
package dest

import (
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
	"golang.org/x/text/unicode/norm"
)

// Kind says how a destination is read.
type Kind int

// The kinds of destination.
const (
	// Name is anything else, compared exactly: a channel, a handle, a
	// person's or a place's name, an account number.
	Name Kind = iota + 1
	// Host is a bare host name or IP address ("www.example.com").
	Host
	// Address is one mail address ("Bob <bob@example.com>" reads as
	// bob@example.com).
	Address
	// URL is a URL with a scheme and a host, or a host followed by a path
	// ("www.example.com/page").
	URL
	// Number is a phone or account number written in groups
	// ("+1 555-123-4567", "123-1234-1234"), compared by its digits.
	Number
	// IBAN is an international bank account number with a valid check
	// sum, compared without its spaces.
	IBAN
)

// String names a kind in messages.
func (k Kind) String() string {
	switch k {
	case Name:
		return "name"
	case Host:
		return "host"
	case Address:
		return "address"
	case URL:
		return "URL"
	case Number:
		return "number"
	case IBAN:
		return "IBAN"
	}
	return "unknown"
}

// Dest is one destination in canonical form.
type Dest struct {
	Kind Kind
	// Canon is the canonical form: two values are one destination exactly
	// when their Canon and Kind are equal.
	Canon string
}

// MaxLen bounds a destination that can be canonical: longer values are
// data, not a recipient, and nothing vouches for them.
const MaxLen = 2048

// Parse reads s as a destination. The error says why s has no canonical
// form; nothing vouches for such a value.
func Parse(s string) (Dest, error) {
	s = strings.Trim(s, surrounding)
	switch {
	case s == "":
		return Dest{}, errors.New("it is empty")
	case len(s) > MaxLen:
		return Dest{}, fmt.Errorf("it is longer than %d bytes", MaxLen)
	}
	if err := plain(s); err != nil {
		return Dest{}, err
	}
	if i := strings.Index(s, "://"); i > 0 {
		return parseURL(s, i)
	}
	if strings.ContainsRune(s, '@') && !strings.HasPrefix(s, "@") {
		return parseAddress(s)
	}
	if c, ok := parseIBAN(s); ok {
		return Dest{Kind: IBAN, Canon: c}, nil
	}
	if c, ok := parseNumber(s); ok {
		return Dest{Kind: Number, Canon: c}, nil
	}
	// Every IPv6 text holds a ':' (netip reads one without it as IPv4, or
	// not at all); looking first spares the error netip makes for a word.
	if strings.IndexByte(s, ':') >= 0 {
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
			return Dest{Kind: Host, Canon: "[" + a.String() + "]"}, nil // a bare IPv6 literal
		}
	}
	if looksLikeHost(s) {
		return parseHostish(s)
	}
	return Dest{Kind: Name, Canon: s}, nil
}

// surrounding is the white space taken off both ends of a value before it
// is read: what a person typing or pasting it leaves around it, and what
// every receiver trims. Anything else stays (and plain refuses it).
const surrounding = " \t"

// Canon returns the key of s's canonical form (Dest.Key: its kind and
// canonical form as one string, so a host and a name spelled alike differ),
// and false when s has none. It is what sets of vouched destinations hold.
func Canon(s string) (string, bool) {
	d, err := Parse(s)
	if err != nil {
		return "", false
	}
	return d.Key(), true
}

// Key is the destination's kind and canonical form as one string, for maps
// and hashes: a host and a name spelled alike are not one destination.
func (d Dest) Key() string {
	return d.Kind.String() + "\x00" + d.Canon
}

// Same reports whether a and b are one destination: both have a canonical
// form and the forms are equal.
func Same(a, b string) bool {
	ca, ok := Canon(a)
	if !ok {
		return false
	}
	cb, ok := Canon(b)
	return ok && ca == cb
}

// plain refuses what no receiver reads the way a person sees it: invalid
// UTF-8, control and format characters (bidirectional overrides, zero-width
// joiners, soft hyphens), line and paragraph separators, spaces other than
// the ASCII space, private-use and unassigned code points, and runs of
// spaces.
func plain(s string) error {
	prevSpace := false
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return errors.New("it is not valid UTF-8")
		case r == ' ':
			if prevSpace {
				return errors.New("it holds two spaces in a row")
			}
			prevSpace = true
			continue
		case unicode.IsControl(r):
			return fmt.Errorf("it holds the control character %U", r)
		case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r):
			return fmt.Errorf("it holds the invisible or private character %U", r)
		case unicode.IsSpace(r), unicode.Is(unicode.Zs, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
			return fmt.Errorf("it holds the space character %U", r)
		case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S):
			return fmt.Errorf("it holds the unassigned or unusual character %U", r)
		}
		prevSpace = false
	}
	return nil
}

// parseURL reads scheme://authority/rest. The scheme is lowercased, the
// host canonicalized, an empty path of a web URL written as "/" (every
// receiver requests "/"); the rest stays byte for byte. What parsers read
// differently is refused: userinfo, a backslash, a percent-escape or an
// empty host in the authority, and whitespace anywhere.
func parseURL(s string, i int) (Dest, error) {
	scheme := s[:i]
	if !validScheme(scheme) {
		return Dest{}, fmt.Errorf("%q is not a URL scheme", scheme)
	}
	scheme = strings.ToLower(scheme)
	rest := s[i+3:]
	if strings.ContainsAny(s, " \\") {
		return Dest{}, errors.New("a URL with a space or a backslash is read differently by different parsers")
	}
	end := strings.IndexAny(rest, "/?#")
	auth, tail := rest, ""
	if end >= 0 {
		auth, tail = rest[:end], rest[end:]
	}
	host, err := canonAuthority(auth)
	if err != nil {
		return Dest{}, err
	}
	if tail == "" || tail[0] != '/' {
		switch scheme {
		case "http", "https", "ws", "wss", "ftp":
			tail = "/" + tail
		}
	}
	return Dest{Kind: URL, Canon: scheme + "://" + host + tail}, nil
}

func validScheme(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isASCIILetter(c) && !('0' <= c && c <= '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// canonAuthority canonicalizes host[:port].
func canonAuthority(auth string) (string, error) {
	switch {
	case auth == "":
		return "", errors.New("the URL has no host")
	case strings.ContainsAny(auth, "@%"):
		return "", errors.New("a URL with userinfo or a percent-escape in its host is read differently by different parsers")
	}
	host, port := auth, ""
	if strings.HasPrefix(auth, "[") {
		end := strings.IndexByte(auth, ']')
		if end < 0 {
			return "", errors.New("the URL's IPv6 host has no closing bracket")
		}
		host, port = auth[:end+1], auth[end+1:]
	} else if j := strings.LastIndexByte(auth, ':'); j >= 0 {
		host, port = auth[:j], auth[j:]
	}
	if port != "" {
		if err := checkPort(port); err != nil {
			return "", err
		}
	}
	h, err := canonHost(host)
	if err != nil {
		return "", err
	}
	return h + port, nil
}

// checkPort accepts ":N" with N in 1..65535 written without leading zeros
// (parsers disagree about those).
func checkPort(p string) error {
	d := p[1:]
	if d == "" || len(d) > 5 || d[0] == '0' {
		return fmt.Errorf("the port %q is not written plainly", p)
	}
	n := 0
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return fmt.Errorf("the port %q is not a number", p)
		}
		n = n*10 + int(d[i]-'0')
	}
	if n > 65535 {
		return fmt.Errorf("the port %q is out of range", p)
	}
	return nil
}

// canonHost is a host as DNS and every URL parser look it up: an IP
// literal in its one standard spelling, or a name through UTS-46 to ASCII
// (lowercased, IDNA-mapped, punycode). A name whose last label is numeric
// is refused unless it is a plain dotted-quad IPv4 address: URL parsers
// read "127.1" or "0x7f.0.0.1" as addresses, others as names.
func canonHost(h string) (string, error) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", errors.New("the IPv6 host has no closing bracket")
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Errorf("%q is not an IPv6 address", h)
		}
		return "[" + a.String() + "]", nil
	}
	if h == "" {
		return "", errors.New("the host is empty")
	}
	ascii, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("the host %q is not a valid international domain name: %v", h, err)
	}
	if ascii == "" || strings.HasPrefix(ascii, ".") || strings.Contains(ascii, "..") {
		return "", fmt.Errorf("the host %q has an empty label", h)
	}
	labels := strings.Split(strings.TrimSuffix(ascii, "."), ".")
	last := labels[len(labels)-1]
	if last != "" && (last[0] >= '0' && last[0] <= '9') {
		a, err := netip.ParseAddr(ascii)
		if err != nil || !a.Is4() || a.String() != ascii {
			return "", fmt.Errorf("the host %q ends in a number but is not a plain IPv4 address", h)
		}
	}
	return ascii, nil
}

// parseAddress reads one mail address the way net/mail does (a display
// name and angle brackets allowed); its domain is canonicalized as a host,
// its local part kept exactly but for the case of its ASCII letters.
//
// The address must be the only thing in s that reads as one: a display
// name, a comment or a group name holding an "@", or a full-width one
// ("evil@evil.example" <bob@example.com>, bob@example.com
// (evil@evil.example)), is a second address to a person reading the mail
// and to every receiver that takes the first address-shaped word or
// splits at commas, so such a value has no canonical form. So has a local part that only quotes make valid
// ("bob@x"@example.com): its canonical form would not read back as itself.
func parseAddress(s string) (Dest, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return Dest{}, fmt.Errorf("it is not one mail address: %v", err)
	}
	if back, err := mail.ParseAddress(a.Address); err != nil || back.Address != a.Address {
		return Dest{}, errors.New("the address's local part is valid only in quotes, which receivers read differently")
	}
	if strings.Count(norm.NFKC.String(s), "@") != 1 || strings.ContainsRune(norm.NFKC.String(a.Name), '@') {
		return Dest{}, errors.New("its display name, comment or group name holds an '@', which reads as a second address")
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 {
		return Dest{}, errors.New("the address has no local part")
	}
	local, domain := a.Address[:at], a.Address[at+1:]
	if strings.HasPrefix(domain, "[") {
		return Dest{}, errors.New("an address at an IP literal is not compared")
	}
	if err := plain(local); err != nil || strings.ContainsRune(local, ' ') {
		return Dest{}, errors.New("the address's local part is not plain text")
	}
	d, err := canonHost(domain)
	if err != nil {
		return Dest{}, err
	}
	if strings.HasSuffix(d, ".") {
		return Dest{}, errors.New("the address's domain ends in a dot")
	}
	return Dest{Kind: Address, Canon: foldASCII(local) + "@" + d}, nil
}

// foldASCII lowercases the ASCII letters of a local part, and only those:
// every mail system a user meets delivers Bob@ and bob@ to one mailbox,
// while a non-ASCII letter's case is not folded alike by all of them.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// looksLikeHost reports whether s is a host, perhaps followed by a path: no
// space, a dot inside its first part (after UTS-46 mapping, which reads
// "。" as one), and a last label that starts with a letter or digit (not
// "v1.2" prose, which still passes as a name when IDNA refuses it); or an
// IPv6 literal in brackets.
func looksLikeHost(s string) bool {
	if strings.ContainsAny(s, " @") {
		return false
	}
	h := s
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		h = s[:i]
	}
	if strings.HasPrefix(h, "[") {
		return strings.Contains(h, "]") // an IPv6 literal, perhaps with a port
	}
	if j := strings.LastIndexByte(h, ':'); j >= 0 {
		h = h[:j]
	}
	if !isASCII(h) {
		// UTS-46 maps the ideographic and full-width full stops to
		// ".": evil。com is evil.com to every resolver.
		if a, err := idna.Lookup.ToASCII(h); err == nil {
			h = a
		}
	}
	h = strings.TrimSuffix(h, ".")
	dot := strings.LastIndexByte(h, '.')
	return dot > 0 && dot < len(h)-1
}

// parseHostish reads a bare host ("www.example.com", "example.com:8080")
// or a host followed by a path without a scheme ("www.example.com/page"),
// as tools that take a "url" often accept. A value that doesn't read as a
// host is a name.
func parseHostish(s string) (Dest, error) {
	end := strings.IndexAny(s, "/?#")
	auth, tail := s, ""
	if end >= 0 {
		auth, tail = s[:end], s[end:]
	}
	if strings.ContainsRune(s, '\\') {
		return Dest{}, errors.New("a host with a backslash is read differently by different parsers")
	}
	h, err := canonAuthority(auth)
	if err != nil {
		// Not a host after all ("v1.2", "e.g."): compare it as a name.
		return Dest{Kind: Name, Canon: s}, nil
	}
	if tail == "" {
		return Dest{Kind: Host, Canon: h}, nil
	}
	return Dest{Kind: URL, Canon: "//" + h + tail}, nil
}

// IsName reports whether s is a name and nothing else: it has a canonical
// form of kind Name, and read as a URL or mail parser reads it
// (compatibility forms and ideographic full stops as dots, a scheme
// without "//", a network path) it is no host, address or URL either: not
// "www.evil。example", "https:evil.example", "127.1" or "//evil.example/x". A directory's
// entry vouches only when it is one.
func IsName(s string) bool {
	d, err := Parse(s)
	if err != nil || d.Kind != Name {
		return false
	}
	n := strings.NewReplacer("\u3002", ".", "\uff61", ".").Replace(norm.NFKC.String(strings.Trim(s, surrounding)))
	if looksLikeHost(n) || networkPath(n) {
		return false
	}
	if i := strings.IndexByte(n, ':'); i > 0 && validScheme(n[:i]) {
		return false
	}
	if m, err := Parse(n); err != nil || m.Kind != Name {
		return false
	}
	return true
}

// networkPath reports whether a WHATWG URL parser, resolving s against a
// page or an API's base URL, reads it as a network-path reference: two
// slashes, either of which may be a backslash ("//evil.example/x",
// "/\\evil.example/x"), start a new host.
func networkPath(s string) bool {
	return len(s) >= 2 && (s[0] == '/' || s[0] == '\\') && (s[1] == '/' || s[1] == '\\')
}

// Variants returns the other spellings of s that taint may have recorded
// it under: a host (alone, in an address or in a URL) both in punycode and
// in Unicode, a host with and without a trailing dot, a host written with
// a port without it, an address as net/mail reads it (quotes and display
// name taken off), a URL as a WHATWG parser reads it (webForm: userinfo
// and a default port dropped, dot segments resolved, backslashes, a
// network path, "https:evil.example", a numeric IPv4 host), what a URL
// with no host names ("tel:+15550109999", "mailto:a%40b.example"), a
// phone or account number by its digits (numberForms) and an IBAN in the
// groups of four it is printed in. Only the taint side asks for them:
// there a match denies, so more spellings are safer; an allow never uses
// them.
func Variants(s string) []string { return variants(s, true) }

// variants is Variants; readings says whether to read s as a mail reader
// and git do too (Mailbox, scpURL), which is done once, not again on what
// they read (a reading of a reading could go round).
func variants(s string, readings bool) []string {
	var out []string
	add := func(v string) {
		if v == "" || v == s {
			return
		}
		for _, o := range out {
			if o == v {
				return
			}
		}
		out = append(out, v)
	}
	// The receiver's reading, and its own spellings.
	if u, ok := webURL(s); ok {
		w := webForm(u)
		if w == "" {
			w, _ = opaqueTarget(u)
		}
		if w != "" && w != strings.Trim(s, surrounding) {
			add(w)
			for _, v := range variants(w, readings) {
				add(v)
			}
		}
	}
	// What git reads an scp-like remote as.
	if u, ok := scpURL(s); ok && readings {
		add(u)
		for _, v := range variants(u, false) {
			add(v)
		}
	}
	// A mail reader's reading of a mailbox net/mail refuses.
	if m, ok := Mailbox(s); ok && readings && !strings.EqualFold(m, strings.Trim(s, surrounding)) {
		add(m)
		for _, v := range variants(m, false) {
			add(v)
		}
	}
	d, err := Parse(s)
	if err != nil || d.Kind == Name {
		// A number only the looser reading takes ("415.555.0199"), an
		// IBAN in lower case, as banks read it.
		t := strings.Trim(s, surrounding)
		for _, f := range NumberForms(t) {
			add(f)
		}
		if c, ok := parseIBAN(strings.ToUpper(t)); ok {
			add(c)
			add(groupsOfFour(c))
		}
		return out
	}
	uni := func(h string) string {
		u, err := idna.Lookup.ToUnicode(h)
		if err != nil {
			return h
		}
		return u
	}
	// The same host with and without a trailing dot: DNS resolves both
	// alike, so a taint of one is a taint of the other.
	dot := func(h string) string {
		if strings.HasSuffix(h, ".") {
			return strings.TrimSuffix(h, ".")
		}
		return h + "."
	}
	switch d.Kind {
	case Host:
		add(d.Canon)
		add(uni(d.Canon))
		if h := hostOf(d.Canon); h != d.Canon && !strings.HasSuffix(d.Canon, "]") {
			// evil.example:22 is evil.example.
			add(h)
			add(uni(h))
		} else if !strings.ContainsRune(d.Canon, ':') {
			add(dot(d.Canon))
		}
	case Address:
		at := strings.LastIndexByte(d.Canon, '@')
		add(d.Canon)
		add(d.Canon[:at+1] + uni(d.Canon[at+1:]))
	case URL:
		pre, rest := "", d.Canon
		if i := strings.Index(rest, "//"); i >= 0 {
			pre, rest = rest[:i+2], rest[i+2:]
		}
		end := strings.IndexAny(rest, "/?#")
		host, tail := rest, ""
		if end >= 0 {
			host, tail = rest[:end], rest[end:]
		}
		hostOnly := host
		if j := strings.LastIndexByte(host, ':'); j >= 0 && !strings.HasSuffix(host, "]") {
			hostOnly = host[:j]
		}
		add(d.Canon)
		add(pre + uni(hostOnly) + host[len(hostOnly):] + tail)
		if !strings.HasSuffix(hostOnly, "]") {
			add(pre + dot(hostOnly) + host[len(hostOnly):] + tail)
		}
	case Number:
		for _, f := range numberForms(d.Canon) {
			add(f)
		}
	case IBAN:
		add(d.Canon)
		add(groupsOfFour(d.Canon))
	}
	return out
}

// numberForms are the spellings of a phone or account number (its
// canonical form: digits, perhaps after a '+') that taint records for
// every number written in groups (package taint): its digits alone, and,
// since the same line is written with and without its country or trunk
// prefix ("+1 415-555-0199", "(415) 555-0199", "001 415 555 0199",
// "020 7946 0958" for "+44 20 7946 0958"), its digits without the first
// one to three (a country code) after a '+' or an international "00" or
// "011", and without a trunk '0'.
func numberForms(canon string) []string {
	digits := strings.TrimPrefix(canon, "+")
	out := []string{digits}
	intl := digits != canon
	for _, p := range []string{"00", "011"} {
		if !intl && strings.HasPrefix(digits, p) {
			digits, intl = digits[len(p):], true
			out = append(out, digits)
		}
	}
	if intl {
		for n := 1; n <= 3 && len(digits)-n >= 7; n++ {
			out = append(out, digits[n:])
		}
	} else if strings.HasPrefix(digits, "0") && len(digits) > 7 {
		out = append(out, digits[1:])
	}
	return out
}

// NumberForms returns the forms taint records for a number written in
// groups in text ("+1 415-555-0199", "(415) 555-0199", "415.555.0199",
// "01 42 68 53 00"), the same numberForms that Variants gives a
// destination: nil when s is no such number. Since taint may over-match,
// dots separate groups here too and a group may have two digits.
func NumberForms(s string) []string {
	c, ok := readNumber(strings.ReplaceAll(s, ".", "-"), 2)
	if !ok {
		return nil
	}
	return numberForms(c)
}

// groupsOfFour writes an IBAN as it is printed ("DE89 3704 0044 ...").
func groupsOfFour(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[i:min(i+4, len(s))])
	}
	return b.String()
}

// Exact is the key by which a value a person looked at is matched again
// (an approval, a one-time code): its canonical Key when it has one, else
// its exact bytes, so a value with no canonical form matches only itself.
func Exact(s string) string {
	if k, ok := Canon(s); ok {
		return k
	}
	return "raw\x00" + s
}

// Domains returns the domain of a destination, as it is spelled in
// canonical form (an address's domain, a URL's or a host's host name),
// then, when it differs, its registrable part (mail.evil.example:
// evil.example, by the public suffix list). A name, an IP address or a
// value with no canonical form has none. It is for a hint to a human
// (package approval's Seen), never for a decision: a domain is far wider
// than any destination in it.
func Domains(s string) []string {
	d, err := Parse(s)
	if err != nil {
		return nil
	}
	var host string
	switch d.Kind {
	case Address:
		host = d.Canon[strings.LastIndexByte(d.Canon, '@')+1:]
	case Host:
		host = d.Canon
	case URL:
		u, err := url.Parse(d.Canon)
		if err != nil {
			return nil
		}
		host = u.Hostname()
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil {
		return nil
	}
	return hostAndDomain(host)
}

// hostAndDomain is a canonical host name without its trailing dot and,
// when it differs, its registrable part by the public suffix list; nil
// for a name with no dot.
func hostAndDomain(host string) []string {
	host = strings.TrimSuffix(host, ".")
	if host == "" || !strings.Contains(host, ".") {
		return nil
	}
	out := []string{host}
	if reg, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil && reg != host {
		out = append(out, reg)
	}
	return out
}

// Hosts is where a client that connects to s goes, as its receiver reads
// it: the host of a URL as a WHATWG parser reads it (an scp-like remote
// "git@host:path" as git reads it, ssh://git@host/path; userinfo dropped, a
// numeric IPv4 host as a dotted quad, UTS-46 applied), or a bare host, and
// its registrable part; an IP address alone. A bare name outside ICANN's
// top-level domains (report.pdf), an address, a name or a number has
// none: nothing connects to it. It is for taint only: whoever
// named a host reads every request to it, whatever path, query or
// subdomain carries the data, so a value whose host untrusted output held
// is no more to be let through unasked than the link itself.
func Hosts(s string) []string {
	var host string
	if u, ok := scpURL(s); ok {
		s = u
	}
	if u, ok := webURL(s); ok {
		host = u.Hostname()
	} else if d, err := Parse(strings.Trim(s, surrounding)); err == nil {
		switch {
		case d.Kind == Host:
			host = hostOf(d.Canon)
		case d.Kind == URL && strings.HasPrefix(d.Canon, "//"):
			host = hostOf(d.Canon[2:])
		}
		if !publicHost(host) {
			host = "" // a file name as often as a host: report.pdf
		}
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []string{a.Unmap().String()}
	}
	return hostAndDomain(host)
}
