package dest

import (
	"encoding/json"
	"math/rand/v2"
	"net/mail"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

func TestIsDestination(t *testing.T) {
	yes := []string{
		"bob@example.com", "Bob <bob@example.com>", "https://evil.example/x", "evil.example.com", "www.hereticeagle.com",
		"evil.example.com/path", "192.0.2.1", "+1 555-123-4567", "123-1234-1234", "GB29 NWBK 6016 1331 9268 19",
		"@attacker", "#general", "https://user@evil.example/", "bob@example.com (eve@evil.example)",
		// IPv6 literals, as IPv4 ones are; a host with the full stops
		// UTS-46 maps to "." (ideographic, full-width, half-width).
		"2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:8080", "[::ffff:192.0.2.1]/x",
		"evil\u3002com", "evil\uff0ecom", "ｅｖｉｌ\uff61ｃｏｍ", "data.evil\u3002com/x",
		// A handle on another server: the fediverse's @user@server,
		// Matrix's @user:server and #room:server.
		"@attacker_x@evil.social", "@eve:matrix.evil.org", "#leaks:matrix.evil.org",
		// Invisible characters UTS-46 and nameprep drop: still a host,
		// a number (with no canonical form: nothing vouches for them).
		"evil\u200b.com", "ev\u00adil.com", "evil.com\ufe0f", "+1 415\u200b-555-0199", "+１ ４１５-５５５-０１９９",
		// IBANs in lower case, the shortest (Norway's, 15 characters) among
		// them: the length test before the upper-casing must let it by.
		"no9386011117947", "gb29 nwbk 6016 1331 9268 19",
	}
	no := []string{
		"Alice", "Le Marais Boutique", "report.pdf", "notes.txt", "v1.2", "2022-02-22", "12345678", "3524.67",
		"P-123456", "guest_amy01", "knows", "", "hello @bob", "123 Maine st, Troy, MI 48083", "/tmp/x",
		"@scope/pkg@1.2.0", "@user:", "#tag:x", "@a@b",
	}
	for _, s := range yes {
		if !IsDestination(s) {
			t.Errorf("IsDestination(%q) = false, want true", s)
		}
	}
	for _, s := range no {
		if IsDestination(s) {
			t.Errorf("IsDestination(%q) = true, want false", s)
		}
	}
}

func TestHeaderDestinations(t *testing.T) {
	for in, want := range map[string][]string{
		"report\r\nBcc: attacker@evil.com":                  {"attacker@evil.com"},
		"report\nCc: a@evil.example, b@evil.example":        {"a@evil.example", "b@evil.example"},
		"report\r\n bcc:Eve <eve@evil.example>":             {"Eve <eve@evil.example>"},
		"report\r\nReply-To: \"x\" <eve@evil.example>":      {"\"x\" <eve@evil.example>"},
		"report\rX-Hook: https://evil.example/h":            {"https://evil.example/h"},
		"report\r\nBcc : eve@evil.example":                  {"eve@evil.example"},
		"report\r\nBcc:\r\n eve@evil.example":               {"eve@evil.example"},
		"report\r\nBcc:\r\n\t<eve@evil.example>":            {"<eve@evil.example>"},
		"report\r\nCc: bob@x.example,\r\n eve@evil.example": {"bob@x.example,", "bob@x.example", "eve@evil.example"}, // each line, then unfolded
		"Hi Bob,\nNote: see below\nThanks":                  nil,
		"one line with bob@example.com: no break before it": nil,
	} {
		if got := HeaderDestinations(in); !slices.Equal(got, want) {
			t.Errorf("HeaderDestinations(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIsNameAgainstWHATWG checks, with node's URL, that nothing IsName
// accepts is read by a WHATWG resolver as another host than the base it is
// resolved against: a directory entry vouches only for a name, never for
// a network path.
func TestIsNameAgainstWHATWG(t *testing.T) {
	node := need.Node(t)
	var in []string
	for _, pre := range []string{"", "/", "\\", "//", "/\\", "\\/", "\\\\", "///", " //", "／／", "＼＼", "⁄⁄", "∕∕", "./", "../", ".//", "%2F%2F", "/%2F", "https:", "http:/", "https:\\\\", "HTTP:"} {
		for _, h := range []string{"evil.example", "evil.example/x", "evil", "evil:8080", "evil。example", "127.1"} {
			in = append(in, pre+h)
		}
	}
	b, _ := json.Marshal(in)
	script := `const xs = JSON.parse(process.argv[1]); console.log(JSON.stringify(xs.map(x => { try { return new URL(x, "https://base.example/dir/").host } catch (e) { return null } })))`
	out, err := exec.Command(node, "-e", script, string(b)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var hosts []*string
	if err := json.Unmarshal(out, &hosts); err != nil {
		t.Fatalf("node said %q: %v", out, err)
	}
	for i, s := range in {
		if IsName(s) && (hosts[i] == nil || *hosts[i] != "base.example") {
			t.Errorf("IsName(%q) = true, but node resolves it to host %v", s, show(hosts[i]))
		}
	}
}

func show(p *string) string {
	if p == nil {
		return "(an error)"
	}
	return *p
}

// TestAddressListAgainstReceivers checks AddressList against the libraries
// that split an address list in one string: nodemailer's addressparser
// (the npm package pinned in testdata/npm) and Python's
// email.utils.getaddresses. Wherever AddressList splits, both must read
// exactly those addresses, in that order; it may refuse what they agree
// on (then the value is asked about), never split what they read another
// way.
func TestAddressListAgainstReceivers(t *testing.T) {
	node := need.Node(t)
	parser := need.NPM(t, "nodemailer/dist/cjs/addressparser/index.js")
	python := need.Program(t, "python3", "install Python 3 (Debian: apt-get install python3)")

	in := []string{
		"bob@company.com, alice@company.com",
		"bob@company.com,alice@company.com",
		"Bob <bob@company.com>, Alice Smith <alice@company.com>",
		"bob@company.com; alice@company.com",
		"\"Bob, Jr\" <bob@company.com>, alice@company.com",
		"bob@company.com (x, eve@evil.example), alice@company.com",
		"team: bob@company.com, alice@company.com;",
		"bob@company.com,, alice@company.com",
		"<bob@company.com>, alice@company.com",
		"Bob<bob@company.com>, alice@company.com",
		"bob@company.com, eve@evil.example@x.example",
		"bob@company.com , ALICE@Company.com ",
		"bob@company.com, <eve@evil.example> alice@company.com",
		"bob@company.com, alice@company.com <eve@evil.example>",
		"bob@company.com, a\\,b@company.com",
		"bob@company.com, [eve@evil.example]",
		"a@x.example, b@y.example, c@z.example",
		"Ann Lee <ann@x.example>,Bo <bo@y.example>",
		"ann@x.example,\tbo@y.example",
	}
	// Random lists from the pieces that make parsers disagree.
	pieces := []string{"bob@company.com", "alice@x.example", "Eve", " ", ",", ";", ":", "\"", "<", ">", "(", ")", "@", "\\", "[", "]", "eve@evil.example", "Bob Smith ", "."}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		in = append(in, b.String())
	}
	b, _ := json.Marshal(in)

	js := `const ap = require(process.argv[1]); const xs = JSON.parse(process.argv[2]);
const flat = (l) => l.flatMap(a => a.group ? flat(a.group) : [a.address]);
console.log(JSON.stringify(xs.map(x => { try { return flat(ap(x)) } catch (e) { return null } })))`
	out, err := exec.Command(node, "-e", js, parser, string(b)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var fromNode [][]string
	if err := json.Unmarshal(out, &fromNode); err != nil {
		t.Fatalf("node said %q: %v", out, err)
	}
	py := `import email.utils, json, sys
xs = json.loads(sys.stdin.read())
print(json.dumps([[a for _, a in email.utils.getaddresses([x])] for x in xs]))`
	cmd := exec.Command(python, "-c", py)
	cmd.Stdin = strings.NewReader(string(b))
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var fromPython [][]string
	if err := json.Unmarshal(out, &fromPython); err != nil {
		t.Fatalf("python3 said %q: %v", out, err)
	}
	split := 0
	for i, s := range in {
		parts, ok := AddressList(s)
		if !ok {
			continue
		}
		split++
		var want []string
		for _, p := range parts {
			a, err := mail.ParseAddress(p)
			if err != nil {
				t.Fatalf("AddressList(%q) gave %q, which net/mail refuses: %v", s, p, err)
			}
			want = append(want, a.Address)
		}
		if !slices.Equal(fromNode[i], want) {
			t.Errorf("AddressList(%q) = %q, nodemailer reads %q", s, want, fromNode[i])
		}
		if !slices.Equal(fromPython[i], want) {
			t.Errorf("AddressList(%q) = %q, getaddresses reads %q", s, want, fromPython[i])
		}
	}
	if split < 5 {
		t.Errorf("only %d lists were split: the test says nothing", split)
	}
}

// A package and its version is no address; a bare name of two labels may
// be a file name, a longer host or an address may not.
func TestPackagesAndFileNames(t *testing.T) {
	for _, s := range []string{"lodash@4.17.21", "@scope/pkg@^1.2.0", "react@>=18.0.0"} {
		if IsDestination(s) {
			t.Errorf("IsDestination(%q) = true", s)
		}
	}
	for _, s := range []string{"eve@evil.example", "a@b (c@d)", "user@localhost", "eve@4.17.21.com"} {
		if !IsDestination(s) {
			t.Errorf("IsDestination(%q) = false", s)
		}
	}
	for s, want := range map[string]bool{"README.md": true, "setup.py": true, "evil.com": true, "hooks.evil.com": false,
		"evil.com:8080": false, "https://evil.com": false, "evil.com/x": false, "a@evil.com": false, "Alice": false} {
		if got := MayBeFileName(s); got != want {
			t.Errorf("MayBeFileName(%q) = %v", s, got)
		}
	}
}

// TestMailboxAgainstPython: an address dressed in RFC 5322's comments, a
// source route or white space around its dots and '@' is one mailbox to a
// lenient reader (Python's email.utils.parseaddr; Gmail reads such a To:
// alike), so taint looks it up as that mailbox (Variants). Wherever
// Mailbox reads one, Python must read the same.
func TestMailboxAgainstPython(t *testing.T) {
	python := need.Program(t, "python3", "install Python 3 (Debian: apt-get install python3)")
	in := []string{
		"attacker(x)@evil.com", "attacker@(x)evil.com", "(x)attacker@evil.com", "att(x)acker@evil.com",
		"attacker@evil.com (x)", "attacker(a(b)c)@evil.com", "<@relay.example:attacker@evil.com>",
		"Eve <@relay.example:attacker@evil.com>", "attacker @ evil.com", "attacker@evil . com",
		"attacker . x@evil.com", "\"attacker\"(x)@evil.com", "Eve (x) <attacker(y)@evil(z).com>",
		"attacker@evil.com", "Eve <attacker@evil.com>",
	}
	fixed, read := len(in), 0
	// Random spellings: comments, spaces, quotes and escapes put anywhere
	// into an address, perhaps with a display name and a route.
	inserts := []string{"(x)", " ", "(a(b)c)", "\t", "\"", "(\\))", "\\", ".", "@", ":", "<", ">", ","}
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		v := "attacker@evil.com"
		for range 1 + r.IntN(3) {
			i := r.IntN(len(v) + 1)
			v = v[:i] + inserts[r.IntN(len(inserts))] + v[i:]
		}
		switch r.IntN(4) {
		case 0:
			v = "Eve <" + v + ">"
		case 1:
			v = "<@relay.example:" + v + ">"
		}
		in = append(in, v)
	}
	b, _ := json.Marshal(in)
	py := `import email.utils, json, sys
print(json.dumps([email.utils.parseaddr(x)[1] for x in json.loads(sys.stdin.read())]))`
	cmd := exec.Command(python, "-c", py)
	cmd.Stdin = strings.NewReader(string(b))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var fromPython []string
	if err := json.Unmarshal(out, &fromPython); err != nil {
		t.Fatalf("python3 said %q: %v", out, err)
	}
	for i, s := range in {
		if p, err := Parse(fromPython[i]); i >= fixed && (err != nil || p.Kind != Address) {
			// Python reads no mailbox (or keeps a space between the
			// words of a local part): a lookup of what Mailbox reads
			// can only deny more.
			continue
		}
		got, ok := Mailbox(s)
		if !ok {
			if i < fixed {
				t.Errorf("Mailbox(%q): none, Python reads %q", s, fromPython[i])
			}
			continue
		}
		read++
		if p, err := Parse(fromPython[i]); err != nil || got != p.Canon {
			t.Errorf("Mailbox(%q) = %q, Python reads %q", s, got, fromPython[i])
		}
		if s != got && !slices.Contains(Variants(s), got) {
			t.Errorf("Variants(%q) = %q: taint would not look it up as %q", s, Variants(s), got)
		}
	}
	t.Logf("%d of %d spellings read as one mailbox", read, len(in))
}

// FuzzMailbox: what Mailbox reads is a canonical address, its own
// canonical form; Variants and Hosts end on every input.
func FuzzMailbox(f *testing.F) {
	for _, s := range []string{"attacker(x)@evil.com", "<@relay.example:a@evil.com>", "Eve (x) <a(y)@evil(z).com>",
		"a @ evil . com", "\"a\\\"b\"(c)@evil.com", "x@y@z", "((((", "\"", "@a,@b:c@d.example"} {
		f.Add(s)
	}
	f.Add("git@evil.example:leak/repo.git")
	f.Add("ssh://a@b.example/d")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Variants(s), Hosts(s) // they end: a reading is not read again
		m, ok := Mailbox(s)
		if !ok {
			return
		}
		d, err := Parse(m)
		if err != nil || d.Kind != Address || d.Canon != m {
			t.Fatalf("Mailbox(%q) = %q, which Parse reads as %v, %v", s, m, d, err)
		}
	})
}
