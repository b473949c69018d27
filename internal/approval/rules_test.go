package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readFile parses the store's file as a fresh reader would.
func readFile(t *testing.T, s *Store) ([]Code, []*EntryError) {
	t.Helper()
	b, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	codes, invalid, err := Parse(b)
	if err != nil {
		t.Fatalf("the store's own file does not parse: %v", err)
	}
	return codes, invalid
}

// lifecycle checks that a code for r is shown as issued, approves it, and
// redeems it with r: the human can act on whatever Issue accepted.
func lifecycle(t *testing.T, s *Store, code string, r Request) {
	t.Helper()
	c, err := s.Lookup(code)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", code, err)
	}
	if c.Request != r {
		t.Fatalf("Lookup(%s) = %+v, want %+v exactly", code, c.Request, r)
	}
	if err := s.ApproveShown(c, false); err != nil {
		t.Fatalf("ApproveShown: %v", err)
	}
	if got, ok, err := take(s, r); !ok || err != nil || got != code {
		t.Fatalf("take = %s, %v, %v", got, ok, err)
	}
}

func TestIssueValidates(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	mk := func(server, tool, param, dest string) Request {
		return Request{Server: server, Tool: tool, Param: param, Destination: dest}
	}
	for _, tc := range []struct {
		name string
		r    Request
		want string // in the error; "" when Issue must succeed
	}{
		{"plain", bob, ""},
		{"no destination", mk("mail", "send_email", "", ""), ""},
		{"control characters", mk("mail", "send_email", "to", "eve@evil.com\x1b[2K\r\x00\nApprove? [y/N] y"), ""},
		{"bidi and invisible", mk("mail", "send_email", "to", "moc.live@\u202ebob\u200b\u2066"), ""},
		{"replacement character", mk("mail", "send_email", "to", "\ufffd@x.com"), ""},
		{"odd names", mk("m\x00ail", "send\u202e_email", "t\no", "bob@x.com"), ""},
		{"longest destination", mk("mail", "send_email", "to", long(MaxDestination)), ""},
		{"longest names", mk(long(MaxName), long(MaxName), long(MaxName), "bob@x.com"), ""},
		{"destination too long", mk("mail", "send_email", "to", long(MaxDestination+1)), "destination is 4097 bytes long"},
		{"megabyte destination", mk("mail", "send_email", "to", long(1<<20)), "more than the 4096"},
		{"argument name too long", mk("mail", "send_email", long(MaxName+1), "bob@x.com"), "argument name is 257 bytes"},
		{"tool name too long", mk("mail", long(MaxName+1), "to", "bob@x.com"), "tool name is 257 bytes"},
		{"server name too long", mk(long(MaxName+1), "send_email", "to", "bob@x.com"), "server name is 257 bytes"},
		{"empty destination", mk("mail", "send_email", "to", ""), "blank destination"},
		{"blank destination", mk("mail", "send_email", "to", " \t "), "blank destination"},
		{"destination without argument", mk("mail", "send_email", "", "bob@x.com"), "without the name of its argument"},
		{"no server", mk("", "send_email", "to", "bob@x.com"), "server name is empty"},
		{"no tool", mk("mail", "", "to", "bob@x.com"), "tool name is empty"},
		{"invalid UTF-8 destination", mk("mail", "send_email", "to", "bob\xff@x.com"), "destination is not valid UTF-8"},
		{"invalid UTF-8 surrogate", mk("mail", "send_email", "to", "bob\xed\xa0\x80@x.com"), "not valid UTF-8"},
		{"invalid UTF-8 tool", mk("mail", "send\xc0", "to", "bob@x.com"), "tool name is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			// A code that was open before must survive whatever comes next.
			before := mustIssue(t, s, Request{Server: "mail", Tool: "send_email", Param: "cc", Destination: "carol@x.com"})
			old, _ := os.ReadFile(s.path)
			code, err := s.Issue(tc.r, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Issue: %v", err)
				}
				if codes, invalid := readFile(t, s); len(codes) != 2 || len(invalid) != 0 {
					t.Fatalf("file has %d codes and %d invalid entries", len(codes), len(invalid))
				}
				lifecycle(t, s, code, tc.r)
			} else {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Issue: %v, want ErrInvalid with %q", err, tc.want)
				}
				if code != "" {
					t.Errorf("a refused Issue returned code %q", code)
				}
				if now, _ := os.ReadFile(s.path); string(now) != string(old) {
					t.Error("a refused Issue changed the file")
				}
			}
			if err := tc.r.Validate(); (err == nil) != (tc.want == "") {
				t.Errorf("Validate: %v, but Issue: %v", err, tc.want)
			}
			lifecycle(t, s, before, Request{Server: "mail", Tool: "send_email", Param: "cc", Destination: "carol@x.com"})
		})
	}
}

// The ask for a call naming no destination (the engine's Asks: [{}]) gets
// a code of its own, bound to the tool, that approves only such a call.
func TestNoDestination(t *testing.T) {
	s, _ := newStore(t)
	none := Request{Server: "mail", Tool: "send_email"}
	if !none.NoDestination() || bob.NoDestination() {
		t.Fatal("NoDestination")
	}
	code := mustIssue(t, s, none)
	if again := mustIssue(t, s, none); again != code {
		t.Errorf("a second ask got %s, want the open %s", again, code)
	}
	if err := s.Approve(code); err != nil {
		t.Fatal(err)
	}
	for _, other := range []Request{
		{Server: "mail", Tool: "send_email", Param: "to", Destination: "bob@x.com"},
		{Server: "mail", Tool: "forward_email"},
		{Server: "mail2", Tool: "send_email"},
	} {
		if c, ok, err := take(s, other); ok || err != nil {
			t.Errorf("take(%+v) = %s, %v, %v: the code approves only a call naming no destination", other, c, ok, err)
		}
	}
	if c, ok, err := take(s, none); !ok || err != nil || c != code {
		t.Fatalf("take = %s, %v, %v", c, ok, err)
	}
}

// A file with entries that break the rules (an older version wrote them, or
// a hand edit) still works for every other code; the bad entry is reported,
// not approvable, and dropped at the next write.
func TestInvalidEntries(t *testing.T) {
	good := `{"code":"GOD-AAA","server":"mail","tool":"send_email","param":"to","destination":"bob@partner.com","issued":"2026-12-02T14:00:00Z","approved":false,"used":false}`
	entry := func(code, param, dest string) string {
		return fmt.Sprintf(`{"code":%q,"server":"mail","tool":"send_email","param":%q,"destination":%q,"issued":"2026-12-02T14:00:00Z","approved":true,"used":false}`, code, param, dest)
	}
	for _, tc := range []struct {
		name, bad, code, want string
	}{
		{"blank destination", entry("BAD-AAA", "to", ""), "BAD-AAA", "blank destination"},
		{"destination without argument", entry("BAD-AAA", "", "eve@evil.com"), "BAD-AAA", "without the name of its argument"},
		{"destination too long", entry("BAD-AAA", "to", strings.Repeat("e", MaxDestination+1)), "BAD-AAA", "4097 bytes"},
		{"empty server", `{"code":"BAD-AAA","server":"","tool":"t","param":"to","destination":"d","issued":"2026-12-02T14:00:00Z"}`, "BAD-AAA", "server name is empty"},
		{"no issue time", `{"code":"BAD-AAA","server":"s","tool":"t","param":"to","destination":"d"}`, "BAD-AAA", "no issued time"},
		{"wrong type", `{"code":"BAD-AAA","server":"s","tool":"t","param":"to","destination":"d","issued":"2026-12-02T14:00:00Z","approved":"yes"}`, "BAD-AAA", "not a valid entry"},
		{"unknown key", `{"code":"BAD-AAA","server":"s","tool":"t","param":"to","destination":"d","issued":"2026-12-02T14:00:00Z","approve_all":true}`, "BAD-AAA", "approve_all"},
		{"lower-case code", entry("bad-aaa", "to", "eve@evil.com"), "", `code "bad-aaa" is not like`},
		{"not an object", `42`, "", "not a valid entry"},
		{"null", `null`, "", "null is not an entry"},
		{"duplicate", entry("GOD-AAA", "to", "eve@evil.com"), "GOD-AAA", "appears 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			os.MkdirAll(filepath.Dir(s.path), 0o700)
			content := `{"version":1,"codes":[` + good + `,` + tc.bad + `]}`
			if err := os.WriteFile(s.path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			codes, invalid, err := Parse([]byte(content))
			if err != nil {
				t.Fatalf("one bad entry made the whole file an error: %v", err)
			}
			if len(invalid) == 0 || invalid[len(invalid)-1].Index != 1 || !strings.Contains(invalid[len(invalid)-1].Error(), tc.want) {
				t.Fatalf("invalid = %v, want entry 1 with %q", invalid, tc.want)
			}
			open, reported, err := s.Pending()
			if err != nil || len(reported) != len(invalid) {
				t.Fatalf("Pending: %v, %v", reported, err)
			}
			if tc.name == "duplicate" {
				// Two entries claim GOD-AAA: neither is trusted.
				if len(codes) != 0 || len(open) != 0 {
					t.Fatalf("a duplicated code was accepted: %v", codes)
				}
				if _, err := s.Lookup("GOD-AAA"); !errors.Is(err, ErrInvalid) {
					t.Errorf("Lookup of a duplicated code: %v, want ErrInvalid", err)
				}
				return
			}
			if len(codes) != 1 || len(open) != 1 || open[0].Code != "GOD-AAA" {
				t.Fatalf("codes %v, open %v; want only GOD-AAA", codes, open)
			}
			if tc.code != "" {
				_, err := s.Lookup(tc.code)
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Lookup(%s): %v, want ErrInvalid saying %q", tc.code, err, tc.want)
				}
				if err := s.Approve(tc.code); !errors.Is(err, ErrInvalid) {
					t.Errorf("Approve(%s): %v, want ErrInvalid", tc.code, err)
				}
			}
			// The bad entry was "approved": it must not let a call through.
			for _, r := range []Request{{Server: "mail", Tool: "send_email", Param: "to", Destination: "eve@evil.com"},
				{Server: "mail", Tool: "send_email", Param: "", Destination: "eve@evil.com"}} {
				if _, ok, err := take(s, r); ok || err != nil {
					t.Fatalf("take(%+v) = %v, %v: a skipped entry was redeemed", r, ok, err)
				}
			}
			// Every other code still works, and the next write drops the entry.
			lifecycle(t, s, "GOD-AAA", Request{Server: "mail", Tool: "send_email", Param: "to", Destination: "bob@partner.com"})
			if codes, invalid := readFile(t, s); len(invalid) != 0 || len(codes) != 1 {
				t.Errorf("after a write: %d codes, invalid %v", len(codes), invalid)
			}
			mustIssue(t, s, bob)
		})
	}
}

// The entry an older Issue wrote for a call naming no destination (empty
// param and destination), which its own Parse then rejected, is a valid
// request now: the file works, and the code can be approved.
func TestOldNoDestinationEntry(t *testing.T) {
	s, _ := newStore(t)
	os.MkdirAll(filepath.Dir(s.path), 0o700)
	os.WriteFile(s.path, []byte(`{"version":1,"codes":[
	  {"code":"K7Q-F2M","server":"mail","tool":"send_email","param":"","destination":"","issued":"2026-12-02T13:58:00Z","approved":false,"used":false}]}`), 0o600)
	lifecycle(t, s, "K7Q-F2M", Request{Server: "mail", Tool: "send_email"})
}

func TestFileTooLarge(t *testing.T) {
	s, _ := newStore(t)
	os.MkdirAll(filepath.Dir(s.path), 0o700)
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(maxFileBytes + 1) // sparse: costs no disk
	f.Close()
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), s.path) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("List: %v", err)
	}
	if _, err := s.Issue(bob, nil); err == nil {
		t.Fatal("Issue wrote over a file it can't read")
	}
	if fi, _ := os.Stat(s.path); fi.Size() != maxFileBytes+1 {
		t.Error("the file was overwritten")
	}
}

// write refuses what Parse would skip, so nothing it writes locks anyone out.
func TestWriteRefusesInvalid(t *testing.T) {
	s, _ := newStore(t)
	mustIssue(t, s, bob)
	old, _ := os.ReadFile(s.path)
	for name, codes := range map[string][]Code{
		"empty param":    {{Code: "K7Q-F2M", Request: Request{Server: "s", Tool: "t", Destination: "d"}, Issued: t0}},
		"zero time":      {{Code: "K7Q-F2M", Request: bob}},
		"duplicate code": {{Code: "K7Q-F2M", Request: bob, Issued: t0}, {Code: "K7Q-F2M", Request: bob, Issued: t0}},
	} {
		if err := s.write(codes); err == nil || !strings.Contains(err.Error(), s.path) {
			t.Errorf("%s: write: %v", name, err)
		}
	}
	if now, _ := os.ReadFile(s.path); string(now) != string(old) {
		t.Error("a refused write changed the file")
	}
}

// writeCodes writes entries directly: issuing a thousand codes one by one
// is slow.
func writeCodes(t *testing.T, s *Store, codes []Code) {
	t.Helper()
	os.MkdirAll(filepath.Dir(s.path), 0o700)
	if err := s.write(codes); err != nil {
		t.Fatal(err)
	}
}

func codeN(i int) string {
	a := Alphabet
	n := len(a)
	return string([]byte{a[i/(n*n*n*n*n)%n], a[i/(n*n*n*n)%n], a[i/(n*n*n)%n], '-', a[i/(n*n)%n], a[i/n%n], a[i%n]})
}

func TestLimits(t *testing.T) {
	req := func(tool string, i int) Request {
		return Request{Server: "s", Tool: tool, Param: "to", Destination: fmt.Sprintf("u%d@x.com", i)}
	}
	t.Run("per tool", func(t *testing.T) {
		s, clk := newStore(t)
		var codes []Code
		for i := range MaxOpenPerTool {
			codes = append(codes, Code{Code: codeN(i), Request: req("flood", i), Issued: t0.Add(-time.Minute)})
		}
		writeCodes(t, s, codes)
		_, err := s.Issue(req("flood", -1), nil)
		if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), `tool "flood"`) || !strings.Contains(err.Error(), "bouncer pending") {
			t.Fatalf("Issue past the per-tool limit: %v", err)
		}
		// The same request still gets its open code back.
		if c, err := s.Issue(codes[7].Request, nil); err != nil || c != codes[7].Code {
			t.Errorf("reuse at the limit: %s, %v", c, err)
		}
		// Other tools are not locked out, and open codes can be approved.
		mustIssue(t, s, req("other", 0))
		lifecycle(t, s, codes[3].Code, codes[3].Request)
		// A used code is closed: it no longer counts.
		mustIssue(t, s, req("flood", -1))
		if _, err := s.Issue(req("flood", -2), nil); !errors.Is(err, ErrFull) {
			t.Fatalf("Issue: %v, want ErrFull again", err)
		}
		// Once the flood's codes expire, the tool gets codes again.
		clk.add(TTL)
		mustIssue(t, s, req("flood", -2))
	})
	t.Run("all tools", func(t *testing.T) {
		s, clk := newStore(t)
		var codes []Code
		for i := range MaxOpen {
			codes = append(codes, Code{Code: codeN(i), Request: req(fmt.Sprint("tool", i%(MaxOpen/MaxOpenPerTool)), i), Issued: t0})
		}
		writeCodes(t, s, codes)
		if _, err := s.Issue(req("new", 0), nil); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "1000 codes are open") {
			t.Fatalf("Issue past the limit: %v", err)
		}
		lifecycle(t, s, codes[500].Code, codes[500].Request)
		mustIssue(t, s, req("new", 0))
		clk.add(TTL)
		mustIssue(t, s, req("new", 1))
	})
	t.Run("closed codes do not count", func(t *testing.T) {
		// The finding: after 1000 expired codes no code could be issued.
		s, _ := newStore(t)
		var codes []Code
		for i := range 2 * MaxOpen {
			c := Code{Code: codeN(i), Request: req(fmt.Sprint("tool", i%7), i), Issued: t0.Add(-TTL - time.Duration(i)*time.Second)}
			if i%2 == 0 {
				c.Issued, c.Approved, c.Used = t0.Add(-time.Duration(i)*time.Second), true, true
			}
			codes = append(codes, c)
		}
		os.MkdirAll(filepath.Dir(s.path), 0o700)
		b, _ := json.Marshal(file{Version: version, Codes: codes})
		os.WriteFile(s.path, b, 0o600)
		code := mustIssue(t, s, bob)
		got, _ := readFile(t, s)
		if len(got) != MaxClosed+1 {
			t.Fatalf("%d entries after a write, want %d closed and the new one", len(got), MaxClosed)
		}
		// The newest closed entries were kept, the oldest pruned.
		if _, err := s.Lookup(codes[0].Code); !errors.Is(err, ErrUsed) {
			t.Errorf("newest used code: %v, want ErrUsed", err)
		}
		if _, err := s.Lookup(codes[1].Code); !errors.Is(err, ErrExpired) {
			t.Errorf("newest expired code: %v, want ErrExpired", err)
		}
		if _, err := s.Lookup(codes[len(codes)-1].Code); !errors.Is(err, ErrUnknown) {
			t.Errorf("oldest closed code: %v, want ErrUnknown (pruned)", err)
		}
		lifecycle(t, s, code, bob)
	})
}

// A hijacked agent asking for codes in a loop, through the real Issue: it
// runs into the per-tool limit, and then the human can still approve the
// code they were about to approve, other tools still get codes, and the
// flooded tool gets them again once the flood's codes expire.
func TestFloodDoesNotLockHumansOut(t *testing.T) {
	s, clk := newStore(t)
	legit := mustIssue(t, s, bob)
	var flood int
	for i := 0; ; i++ {
		if i > MaxOpenPerTool {
			t.Fatal("the flood was never stopped")
		}
		r := bob
		r.Destination = fmt.Sprintf("exfil%d@evil.com", i)
		if _, err := s.Issue(r, nil); err != nil {
			if !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
			break
		}
		flood++
		clk.add(time.Millisecond)
	}
	if flood != MaxOpenPerTool-1 {
		t.Errorf("the flood got %d codes, want %d", flood, MaxOpenPerTool-1)
	}
	lifecycle(t, s, legit, bob)
	mustIssue(t, s, Request{Server: "calendar", Tool: "invite", Param: "attendee", Destination: "carol@x.com"})
	clk.add(TTL)
	mustIssue(t, s, bob)
	if codes, invalid := readFile(t, s); len(invalid) != 0 || len(codes) > MaxOpen+MaxClosed {
		t.Errorf("%d entries, %d invalid", len(codes), len(invalid))
	}
}

// For any request, Issue either refuses it (ErrInvalid, nothing written) or
// writes a file that parses whole, holds the request exactly, and lets the
// code be approved and redeemed; the code open before is never harmed.
func FuzzIssue(f *testing.F) {
	f.Add("mail", "send_email", "to", "bob@partner.com")
	f.Add("mail", "send_email", "", "")
	f.Add("mail", "send_email", "to", "")
	f.Add("mail", "send_email", "", "x")
	f.Add("", "", "", "")
	f.Add("mail", "send_email", "to", "a\x00\x1b[2K\u202e\ufffd\n")
	f.Add("m\xffail", "send_email", "to", "bob\xed\xa0\x80")
	f.Add("mail", "send_email", "to", strings.Repeat("x", MaxDestination+1))
	f.Add("mail", "send_email", "to", "  ")
	// On tmpfs when there is one: every Issue syncs the file and its
	// directory, which costs a disk a millisecond and tmpfs nothing.
	dir := f.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "bouncer-fuzz-issue-"); err == nil {
		dir = shm
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	n := 0
	f.Fuzz(func(t *testing.T, server, tool, param, dest string) {
		n++
		c := &clock{t: t0}
		s := Open(filepath.Join(dir, fmt.Sprint(n), "pending.json"), c.now)
		before := Request{Server: "mail", Tool: "send_email", Param: "cc", Destination: "carol@x.com"}
		first := mustIssue(t, s, before)
		old, _ := os.ReadFile(s.path)
		r := Request{Server: server, Tool: tool, Param: param, Destination: dest}
		code, err := s.Issue(r, nil)
		codes, invalid := readFile(t, s)
		if len(invalid) != 0 {
			t.Fatalf("Issue(%+v) wrote entries Parse skips: %v", r, invalid)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) || r.Validate() == nil {
				t.Fatalf("Issue(%+v): %v", r, err)
			}
			if now, _ := os.ReadFile(s.path); string(now) != string(old) {
				t.Fatal("a refused Issue changed the file")
			}
		} else {
			if r.Validate() != nil {
				t.Fatalf("Issue accepted %+v, which Validate rejects", r)
			}
			if len(codes) != 2 && !SameRequest(r, before) {
				t.Fatalf("%d codes in the file", len(codes))
			}
			if !SameRequest(r, before) {
				lifecycle(t, s, code, r)
			}
		}
		lifecycle(t, s, first, before)
		os.RemoveAll(filepath.Dir(s.path))
	})
}
