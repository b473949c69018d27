package dest

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		kind  Kind
		canon string // "" with kind 0: no canonical form
	}{
		{"bob@example.com", Address, "bob@example.com"},
		{"  bob@Example.COM ", Address, "bob@example.com"},
		{"Bob <bob@example.com>", Address, "bob@example.com"},
		{`"bob"@example.com`, Address, "bob@example.com"},
		{"Bob@example.com", Address, "bob@example.com"}, // the ASCII case of a local part folds
		{"  FEN.Marlowe@Saltmarsh-Legal.example ", Address, "fen.marlowe@saltmarsh-legal.example"},
		{"\tOps.Rota@Quillfeather.Example", Address, "ops.rota@quillfeather.example"},
		{"Élise@example.com", Address, "Élise@example.com"}, // non-ASCII letters stay exact
		{"bob@example.com\r\n", 0, ""},
		{"bob@bücher.example", Address, "bob@xn--bcher-kva.example"},
		{"bob@example.com.", 0, ""},
		{"bob@[192.0.2.1]", 0, ""},
		{"bob@example.com\r\nBcc: eve@evil.example", 0, ""},
		{"bob@example.com, eve@evil.example", 0, ""},
		{"bob@example.com@evil.example", 0, ""},
		// A display name, comment or group name that holds an address:
		// a person and many receivers read the second address.
		{`"evil@evil.example" <bob@example.com>`, 0, ""},
		{`"evil@evil.example, x" <bob@example.com>`, 0, ""},
		{"bob@example.com (evil@evil.example)", 0, ""},
		{"Bob <bob@example.com> (evil@evil.example)", 0, ""},
		{`"evil@evil.example":bob@example.com;`, 0, ""},
		{"=?utf-8?q?evil=40evil.example?= <bob@example.com>", 0, ""},
		{"\"evil\uff20evil.example\" <bob@example.com>", 0, ""},
		{"=?utf-8?q?evil=EF=BC=A0evil.example?= <bob@example.com>", 0, ""},
		{"Bob (work) <bob@example.com>", Address, "bob@example.com"},
		// A local part valid only in quotes: its canonical form would
		// not read back as itself.
		{`"bob@example.com"@evil.example`, 0, ""},
		{`"bob\"x"@example.com`, 0, ""},
		{"www.Example.com", Host, "www.example.com"},
		{"bücher.example", Host, "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", Host, "xn--bcher-kva.example"},
		{"𝐞𝐱𝐚𝐦𝐩𝐥𝐞.com", Host, "example.com"}, // UTS-46 maps them, as every URL parser does
		{"paypaı.com", Host, "xn--paypa-r4a.com"},
		{"İnstagram.com", Host, "xn--instagram-5jf.com"},
		{"straẞe.example", Host, "strasse.example"}, // UTS-46 maps ẞ to ss, as node does
		{"straße.example", Host, "xn--strae-oqa.example"},
		{"ςigma.example", Host, "xn--igma-fod.example"},
		{"example.com:8080", Host, "example.com:8080"},
		{"example.com:08080", Name, "example.com:08080"},
		{"127.0.0.1", Host, "127.0.0.1"},
		{"127.1", Name, "127.1"}, // URL parsers read it as 127.0.0.1: no host form
		{"www.example.com/page", URL, "//www.example.com/page"},
		{"HTTPS://Example.com", URL, "https://example.com/"},
		{"https://example.com/A/../b?x=%41#f", URL, "https://example.com/A/../b?x=%41#f"},
		{"https://evil.example?@example.com", URL, "https://evil.example/?@example.com"},
		{"https://user@example.com/", 0, ""},
		{"https://exa%6dple.com/", 0, ""},
		{`https://example.com\@evil.example/`, 0, ""},
		{"https://[::FFFF:192.0.2.1]/", URL, "https://[::ffff:192.0.2.1]/"},
		{"mailto:bob@example.com", URL, ""}, // no "//": a name-like value, see below
		{"general", Name, "general"},
		{"#general", Name, "#general"},
		{"Le Marais Boutique", Name, "Le Marais Boutique"},
		{"Le  Marais", 0, ""},
		{"Ali\u200bce", 0, ""},
		{"Alice\u202e", 0, ""},
		{"Alice\u00a0B", 0, ""},
		{"Alice\tB", 0, ""},
		{"\xff", 0, ""},
		{"", 0, ""},
		{"GB29NWBK60161331926819", IBAN, "GB29NWBK60161331926819"},
		{"GB29 NWBK 6016 1331 9268 19", IBAN, "GB29NWBK60161331926819"},
		{"GB29NWBK60161331926818", Name, "GB29NWBK60161331926818"}, // a bad check sum
		{"+1 123-456-7890", Number, "+11234567890"},
		{"(555) 123-4567", Number, "5551234567"},
		{"123-1234-1234", Number, "12312341234"},
		{"2022-02-22", Name, "2022-02-22"},
		{"123-45-6789", Name, "123-45-6789"},
		{"12345678", Name, "12345678"}, // a bare run of digits is an id as often
		{"3524.67", Name, "3524.67"},
	}
	for _, tc := range tests {
		d, err := Parse(tc.in)
		if tc.in == "mailto:bob@example.com" {
			// An address after a scheme is read by net/mail as no
			// address: it has no canonical form as an address.
			if err == nil && d.Kind == Address {
				t.Errorf("Parse(%q) = %v, want no address", tc.in, d)
			}
			continue
		}
		if tc.kind == 0 {
			if err == nil {
				t.Errorf("Parse(%q) = %v %q, want no canonical form", tc.in, d.Kind, d.Canon)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if d.Kind != tc.kind || d.Canon != tc.canon {
			t.Errorf("Parse(%q) = %v %q, want %v %q", tc.in, d.Kind, d.Canon, tc.kind, tc.canon)
		}
	}
}

// TestSameUnderMatches pins the look-alikes that taint folds together and
// an allow must keep apart.
func TestSameUnderMatches(t *testing.T) {
	apart := [][2]string{
		{"paypal.com", "paypaı.com"},
		{"instagram.com", "İnstagram.com"},
		{"strasse.example", "straße.example"},
		{"strasse@example.com", "straẞe@example.com"},
		{"sigma.example", "ςigma.example"},
		{"σigma.example", "ςigma.example"},
		{"alice@example.com", "𝐚lice@example.com"},
		{"Alice", "alice"},
		{"Alice", "𝐀lice"},
		{"Alice", "Ａlice"},
		{"www.example.com", "https://www.example.com/"},
		{"https://example.com/", "https://example.com/?u=https%3A%2F%2Fevil.example"},
		{"bob@example.com", "bob@example.com\r\nBcc: eve@evil.example"},
		{"bob@example.com", `"eve@evil.example" <bob@example.com>`},
		{"bob@example.com", "bob@example.com (eve@evil.example)"},
		{"bob@example.com", "bob+x@example.com"},
		{"example.com", "example.com."},
		{"general", "#general"},
		{"+1 555-123-4567", "1 555-123-4567"},
		{"élise@example.com", "Élise@example.com"},
	}
	for _, p := range apart {
		if Same(p[0], p[1]) {
			t.Errorf("Same(%q, %q) = true, want false", p[0], p[1])
		}
	}
	same := [][2]string{
		{"bob@example.com", "Bob <bob@EXAMPLE.com>"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"BÜCHER.example", "bücher.example"},
		{"https://Example.com", "https://example.com/"},
		{"Ops.Rota@Quillfeather.Example", "ops.rota@quillfeather.example"},
		{"  FEN.Marlowe@Saltmarsh-Legal.example ", "fen.marlowe@saltmarsh-legal.example"},
		{"+1 555-123-4567", "+1 555 123 4567"},
	}
	for _, p := range same {
		if !Same(p[0], p[1]) {
			t.Errorf("Same(%q, %q) = false, want true", p[0], p[1])
		}
	}
}

func TestMentions(t *testing.T) {
	text := "Send it to 'Le Marais Boutique' and bob@example.com, then post to www.our-company.com.They said " +
		"(www.dora-website.com) is fine; also <carol@example.org> and mailto:dave@example.net! " +
		"See https://example.com/r?u=https%3A%2F%2Fevil.example and Www.Example.Com too, Eve."
	got := Mentions(text)
	want := []string{
		key(Name, "Le Marais Boutique"),
		key(Address, "bob@example.com"),
		key(Host, "www.our-company.com"),
		key(Host, "www.dora-website.com"),
		key(Address, "carol@example.org"),
		key(Address, "dave@example.net"),
		key(URL, "https://example.com/r?u=https%3A%2F%2Fevil.example"),
		key(Host, "www.example.com"),
		key(Name, "Eve"),
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("Mentions lacks %q", w)
		}
	}
	notWant := []string{
		key(URL, "https://evil.example/"),
		key(Host, "evil.example"),
		key(Host, "www.example"),
		key(Name, "to"),
		key(Name, "Marais"), // a word is named too, but not...
	}
	for _, w := range notWant[:4] {
		if slices.Contains(got, w) {
			t.Errorf("Mentions has %q", w)
		}
	}
	// A capital after a dot that starts a top-level domain continues the
	// host: "acme.co.UK" does not name acme.co, someone else's domain.
	for _, tc := range []struct{ text, not, want string }{
		{"Copy sales@acme.co.UK please", key(Address, "sales@acme.co"), key(Address, "sales@acme.co.uk")},
		{"Invoice orders@smallbiz.com.AU today", key(Address, "orders@smallbiz.com"), key(Address, "orders@smallbiz.com.au")},
		{"Open shop.example.com.Au now", key(Host, "shop.example.com"), key(Host, "shop.example.com.au")},
		{"Open shop.example.Com now", key(Host, "shop.example"), key(Host, "shop.example.com")},
		// A reverse-DNS identifier names no host cut out of it.
		{"Set org.example.app.Config now", key(Host, "org.example.app"), key(Host, "org.example.app.config")},
		{"Run com.example.myapp.MainActivity", key(Host, "com.example.myapp"), key(Host, "com.example.myapp.mainactivity")},
		{"Write to bob@example.com.Then go", key(Host, "nothing"), key(Address, "bob@example.com")},
	} {
		got := Mentions(tc.text)
		if slices.Contains(got, tc.not) {
			t.Errorf("Mentions(%q) has %q", tc.text, tc.not)
		}
		if !slices.Contains(got, tc.want) {
			t.Errorf("Mentions(%q) lacks %q", tc.text, tc.want)
		}
	}
	// ...a phrase never names a longer one.
	if slices.Contains(Mentions("hotel"), key(Name, "Riverside View Hotel")) {
		t.Error("a word names a phrase it is part of")
	}
}

func key(k Kind, c string) string { return Dest{Kind: k, Canon: c}.Key() }

func TestVariants(t *testing.T) {
	for in, want := range map[string][]string{
		"xn--bcher-kva.example":             {"bücher.example"},
		"bücher.example":                    {"xn--bcher-kva.example"},
		`"evil"@bücher.example`:             {"evil@xn--bcher-kva.example", "evil@bücher.example"},
		"https://xn--bcher-kva.example/x?y": {"https://bücher.example/x?y"},
		"https://evil.example./hook":        {"https://evil.example/hook"},
		"evil.example.":                     {"evil.example"},
	} {
		got := Variants(in)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("Variants(%q) = %q, lacks %q", in, got, w)
			}
		}
	}
	if v := Variants("Alice"); v != nil {
		t.Errorf("Variants of a name = %q", v)
	}
}

// TestAgainstWHATWG checks, with node's URL (the WHATWG parser that
// browsers and node servers use), that every pair of hosts Parse calls one
// destination is one host to node too, and that the look-alikes it keeps
// apart are apart to node: Canon must never join what the receiver
// separates.
func TestAgainstWHATWG(t *testing.T) {
	node := need.Node(t)
	hosts := []string{
		"example.com", "EXAMPLE.com", "𝐞𝐱𝐚𝐦𝐩𝐥𝐞.com", "ｅｘａｍｐｌｅ.com", "bücher.example", "BÜCHER.example",
		"xn--bcher-kva.example", "paypal.com", "paypaı.com", "instagram.com", "İnstagram.com",
		"strasse.example", "straße.example", "straẞe.example", "sigma.example", "σigma.example", "ςigma.example",
		"example.com.", "127.0.0.1", "www.example.com",
	}
	in, _ := json.Marshal(hosts)
	script := `const hs = JSON.parse(process.argv[1]); console.log(JSON.stringify(hs.map(h => { try { return new URL("http://" + h + "/").hostname } catch (e) { return null } })))`
	out, err := exec.Command(node, "-e", script, string(in)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var names []*string
	if err := json.Unmarshal(out, &names); err != nil {
		t.Fatalf("node said %q: %v", out, err)
	}
	for i, a := range hosts {
		for j, b := range hosts {
			if i >= j || names[i] == nil || names[j] == nil {
				continue
			}
			if Same(a, b) && *names[i] != *names[j] {
				t.Errorf("Same(%q, %q) but node reads %q and %q", a, b, *names[i], *names[j])
			}
		}
		if c, ok := Canon(a); ok && names[i] != nil {
			d, _ := Parse(a)
			if d.Kind == Host && d.Canon != strings.TrimSuffix(*names[i], ".") && d.Canon != *names[i] {
				t.Errorf("Parse(%q) = %q, node reads %q", a, c, *names[i])
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"bob@example.com", "Bob <bob@bücher.example>", "https://x.example:8080/a?b#c",
		"www.example.com/x", "Le Marais", "[::1]", "https://[::1]/", "a.b.c.d", "\u202e", "e.g.", "x.com.They"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if err := plain(d.Canon); err != nil && d.Kind != URL {
			t.Fatalf("Parse(%q) = %q, which is not plain: %v", s, d.Canon, err)
		}
		// A canonical form is its own canonical form, but for a number's
		// (its digits alone, which Parse reads as a number only with a
		// '+' or separators: a bare run of digits is as often an id) and
		// a network-path URL's.
		if d.Kind == Number {
			digits := strings.TrimPrefix(d.Canon, "+")
			if len(digits) < 7 || len(digits) > 20 || !allDigits(digits) {
				t.Fatalf("Parse(%q) = %v, which is not 7 to 20 digits", s, d)
			}
		} else if d.Kind != URL || !strings.HasPrefix(d.Canon, "//") {
			again, err := Parse(d.Canon)
			if err != nil || again != d {
				t.Fatalf("Parse(%q) = %v, but Parse(%q) = %v, %v", s, d, d.Canon, again, err)
			}
		}
		switch d.Kind {
		case Address:
			a, err := mail.ParseAddress(s)
			if err != nil {
				t.Fatalf("Parse(%q) is an address net/mail refuses: %v", s, err)
			}
			local := a.Address[:strings.LastIndexByte(a.Address, '@')]
			// Only the ASCII letters' case may change (foldASCII).
			if !strings.HasPrefix(d.Canon, foldASCII(local)+"@") {
				t.Fatalf("Parse(%q) = %q changed the local part %q beyond its ASCII case", s, d.Canon, local)
			}
		case Host:
			u, err := url.Parse("http://" + d.Canon + "/")
			if err != nil || strings.ToLower(u.Host) != d.Canon {
				t.Fatalf("Parse(%q) = %q, which net/url reads as host %q (%v)", s, d.Canon, u.Host, err)
			}
		}
		for _, m := range Mentions(s) {
			if !strings.Contains(m, "\x00") {
				t.Fatalf("Mentions(%q) gave %q, not a key", s, m)
			}
		}
	})
}

// TestIsName pins what a directory may list: names, and nothing a URL or
// mail parser reads as a host, an address or a URL.
func TestIsName(t *testing.T) {
	for _, s := range []string{"general", "#general", "Le Marais Boutique", "#room:matrix.org", "C0123ABC", "@bob"} {
		if !IsName(s) {
			t.Errorf("IsName(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"//evil.example/x", "/\\evil.example/x", "\\\\evil.example", "\\/evil.example", "／／evil.example/x",
		"evil.example", "evil\u3002example", "evil\uff0eexample", "evil\uff61example", "https:evil.example",
		"HTTPS:evil.example/x", "127.1", "0x7f.1", "bob@example.com", "https://example.com/", "Le  Marais", ""} {
		if IsName(s) {
			t.Errorf("IsName(%q) = true, want false", s)
		}
	}
}

func TestDomains(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"bob@Partner.Example", []string{"partner.example"}},
		{"Bob <bob@mail.partner.co.uk>", []string{"mail.partner.co.uk", "partner.co.uk"}},
		{"https://files.evil.example:8443/up?x=1", []string{"files.evil.example", "evil.example"}},
		{"www.evil.example/page", []string{"www.evil.example", "evil.example"}},
		{"evil.example", []string{"evil.example"}},
		{"https://user@evil.example/", nil}, // no canonical form
		{"https://127.0.0.1/x", nil},
		{"#general", nil},
		{"localhost", nil},
		{"bob@evil\u202e.example", nil},
	} {
		if got := Domains(tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Domains(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A host spelled with a full stop UTS-46 maps to "." or as an IPv6
// literal, bare or in brackets, is that host, as every resolver reads it.
func TestHostSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"evil\u3002com":      "evil.com",
		"EVIL\uff0eCOM:8080": "evil.com:8080",
		"evil\uff61com/x":    "//evil.com/x",
		"2001:DB8::1":        "[2001:db8::1]",
		"[2001:db8:0::1]":    "[2001:db8::1]",
		"[2001:db8::1]:8443": "[2001:db8::1]:8443",
		"[::ffff:192.0.2.1]": "[::ffff:192.0.2.1]",
	} {
		d, err := Parse(in)
		if err != nil || d.Canon != want || d.Kind == Name {
			t.Errorf("Parse(%q) = %v %q, %v; want %q", in, d.Kind, d.Canon, err, want)
		}
	}
	for _, in := range []string{"fe80::1%eth0", "12:30", "a:b::c:d:e:f:g"} {
		if d, _ := Parse(in); d.Kind != Name {
			t.Errorf("Parse(%q) = %v %q, want a name", in, d.Kind, d.Canon)
		}
	}
}

func TestHosts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"https://Collect.Evil.example.co.uk:8443/x?y", []string{"collect.evil.example.co.uk", "example.co.uk"}},
		{"https://data@collect.evil.com/x", []string{"collect.evil.com", "evil.com"}}, // userinfo: no canonical form, same host
		{"https://collect.evil.com\t/x", []string{"collect.evil.com", "evil.com"}},    // WHATWG strips the tab
		{"https://ev\u00adil.com/x", []string{"evil.com"}},                            // UTS-46 drops the soft hyphen
		{"//evil.com/x", []string{"evil.com"}},
		{"evil.com/x", []string{"evil.com"}},
		{"data.evil.com", []string{"data.evil.com", "evil.com"}},
		{"http://3405803783/x", []string{"203.0.113.7"}},
		{"http://[::ffff:203.0.113.7]/x", []string{"203.0.113.7"}},
		{"bob@evil.com", nil}, // an address: nothing connects to it
		{"mailto:bob@evil.com", nil},
		{"#general", nil},
		{"report.pdf", nil},
	} {
		if got := Hosts(tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Hosts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
