package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func newStore(t *testing.T) (*Store, *clock) {
	t.Helper()
	c := &clock{t: t0}
	return Open(filepath.Join(t.TempDir(), "state", "pending.json"), c.now), c
}

var bob = Request{Server: "mail", Tool: "send_email", Param: "to", Destination: "bob@partner.com"}

func mustIssue(t *testing.T, s *Store, r Request) string {
	t.Helper()
	code, err := s.Issue(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestIssue(t *testing.T) {
	s, _ := newStore(t)
	code := mustIssue(t, s, bob)
	if !ValidCode(code) {
		t.Fatalf("code %q has the wrong shape", code)
	}
	for _, ch := range strings.ReplaceAll(code, "-", "") {
		if !strings.ContainsRune(Alphabet, ch) {
			t.Errorf("code %q has %q, outside the alphabet", code, ch)
		}
	}
	again := bob
	again.Destination = "  bob@Partner.COM "
	if c := mustIssue(t, s, again); c != code {
		t.Errorf("Issue for the same request gave %s, want the open %s", c, code)
	}
	others := map[string]Request{}
	for name, r := range variants(bob) {
		c := mustIssue(t, s, r)
		if c == code {
			t.Errorf("%s: a different request reused %s", name, code)
		}
		others[c] = r
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1+len(others) {
		t.Errorf("List has %d codes, want %d", len(list), 1+len(others))
	}
	// The file and its lock are private; the directory was created 0700.
	for p, mode := range map[string]os.FileMode{s.path: 0o600, s.path + ".lock": 0o600, filepath.Dir(s.path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %o, want %o", p, fi.Mode().Perm(), mode)
		}
	}
}

// variants differ from r in exactly one bound field, or in a way the
// destination comparison must not ignore.
func variants(r Request) map[string]Request {
	m := map[string]Request{}
	v := r
	v.Server = "mail2"
	m["server"] = v
	v = r
	v.Tool = "forward_email"
	m["tool"] = v
	v = r
	v.Param = "cc"
	m["param"] = v
	v = r
	v.Destination = "bob@partner.co"
	m["destination"] = v
	v = r
	v.Destination = "bob@partner.com."
	m["trailing dot"] = v
	v = r
	v.Destination = "bob@partner.\u212aom" // Kelvin sign: folds to k only under Unicode rules
	m["unicode fold"] = v
	v = r
	v.Destination = "bob@partner.com\u200b" // zero-width space is not "surrounding whitespace"
	m["zero width"] = v
	v = r
	v.Destination = "bob@partner.com\u00a0" // no-break space either
	m["nbsp"] = v
	return m
}

// take redeems the code for a call with one destination, r.
func take(s *Store, r Request) (code string, ok bool, err error) {
	used, missing, err := s.Redeem([]Request{r})
	if err != nil || len(missing) > 0 {
		return "", false, err
	}
	return used[0].Code, true, nil
}

// codesOf lists the codes Redeem used.
func codesOf(used []Code) []string {
	var out []string
	for _, c := range used {
		out = append(out, c.Code)
	}
	return out
}

// Redeem takes a call's codes all at once or not at all: whatever keeps one
// request from being approved, no code of the call is used, and each one
// approved stays approved for the retry.
func TestRedeem(t *testing.T) {
	alice := bob
	alice.Destination = "alice@partner.com"
	cc := bob
	cc.Param = "cc"
	for _, tc := range []struct {
		name string
		// prepare issues and approves codes at t0 (each request in order),
		// moving the clock as it likes, and returns them by destination.
		prepare func(t *testing.T, s *Store, clk *clock) map[Request]string
		reqs    []Request
		after   time.Duration // the clock moves on before Redeem
		missing []int         // nil: redeemed
	}{
		{
			name: "all approved",
			prepare: func(t *testing.T, s *Store, _ *clock) map[Request]string {
				return approveAll(t, s, bob, alice, cc)
			},
			reqs: []Request{bob, alice, cc},
		},
		{
			name: "one not approved",
			prepare: func(t *testing.T, s *Store, _ *clock) map[Request]string {
				codes := approveAll(t, s, bob, cc)
				codes[alice] = mustIssue(t, s, alice)
				return codes
			},
			reqs:    []Request{bob, alice, cc},
			missing: []int{1},
		},
		{
			name: "one never issued",
			prepare: func(t *testing.T, s *Store, _ *clock) map[Request]string {
				return approveAll(t, s, bob)
			},
			reqs:    []Request{bob, alice},
			missing: []int{1},
		},
		{
			name: "one expired",
			prepare: func(t *testing.T, s *Store, clk *clock) map[Request]string {
				codes := approveAll(t, s, alice)
				clk.add(2 * time.Minute)
				for r, c := range approveAll(t, s, bob) {
					codes[r] = c
				}
				return codes
			},
			reqs:    []Request{bob, alice},
			after:   TTL - time.Minute, // alice's is TTL+1m old, bob's TTL-1m
			missing: []int{1},
		},
		{
			name: "one used by another call",
			prepare: func(t *testing.T, s *Store, _ *clock) map[Request]string {
				codes := approveAll(t, s, bob, alice)
				if _, ok, err := take(s, alice); !ok || err != nil {
					t.Fatal(ok, err)
				}
				return codes
			},
			reqs:    []Request{bob, alice},
			missing: []int{1},
		},
		{
			name: "none approved, one twice",
			prepare: func(t *testing.T, s *Store, _ *clock) map[Request]string {
				return map[Request]string{bob: mustIssue(t, s, bob)}
			},
			reqs:    []Request{bob, alice, bob},
			missing: []int{0, 1},
		},
		{
			name: "the same request twice takes one code",
			prepare: func(t *testing.T, s *Store, _ *clock) map[Request]string {
				return approveAll(t, s, bob)
			},
			reqs: []Request{bob, bob},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newStore(t)
			codes := tc.prepare(t, s, clk)
			before, err := s.List()
			if err != nil {
				t.Fatal(err)
			}
			clk.add(tc.after)
			used, missing, err := s.Redeem(tc.reqs)
			if err != nil {
				t.Fatal(err)
			}
			got := codesOf(used)
			if fmt.Sprint(missing) != fmt.Sprint(tc.missing) {
				t.Fatalf("missing = %v, want %v", missing, tc.missing)
			}
			if tc.missing != nil {
				if got != nil {
					t.Errorf("codes = %v with requests missing", got)
				}
				// Nothing was used: every code open before is as it was.
				for _, c := range before {
					now, err := s.Lookup(c.Code)
					if c.open(clk.now()) && (err != nil || now.Used || now.Approved != c.Approved) {
						t.Errorf("code %s for %s: %+v, %v after a failed Redeem; want it as it was (%+v)", c.Code, c.Destination, now, err, c)
					}
				}
				return
			}
			var want []string
			seen := map[string]bool{}
			for _, r := range tc.reqs {
				if c := codes[r]; !seen[c] {
					seen[c] = true
					want = append(want, c)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("codes = %v, want %v", got, want)
			}
			for _, c := range want {
				if _, err := s.Lookup(c); !errors.Is(err, ErrUsed) {
					t.Errorf("code %s after Redeem: %v, want ErrUsed", c, err)
				}
			}
			if _, missing, _ := s.Redeem(tc.reqs); missing == nil {
				t.Error("the same codes were redeemed twice")
			}
		})
	}
	t.Run("no requests", func(t *testing.T) {
		s, _ := newStore(t)
		if codes, missing, err := s.Redeem(nil); err == nil {
			t.Fatalf("Redeem(nil) = %v, %v, nil; want an error: nothing was approved", codes, missing)
		}
	})
}

// approveAll issues and approves a code for each request, and returns them.
func approveAll(t *testing.T, s *Store, reqs ...Request) map[Request]string {
	t.Helper()
	codes := map[Request]string{}
	for _, r := range reqs {
		codes[r] = mustIssue(t, s, r)
		if err := s.Approve(codes[r]); err != nil {
			t.Fatal(err)
		}
	}
	return codes
}

func TestRedeemBinding(t *testing.T) {
	for name, r := range variants(bob) {
		t.Run(name, func(t *testing.T) {
			s, _ := newStore(t)
			code := mustIssue(t, s, bob)
			if err := s.Approve(code); err != nil {
				t.Fatal(err)
			}
			if c, ok, err := take(s, r); ok || err != nil {
				t.Fatalf("take(%+v) = %s, %v, %v; the code is bound to %+v", r, c, ok, err, bob)
			}
			if c, ok, err := take(s, bob); !ok || err != nil || c != code {
				t.Fatalf("take(bob) = %s, %v, %v after a mismatched take", c, ok, err)
			}
		})
	}
}

func TestRedeemOnce(t *testing.T) {
	s, _ := newStore(t)
	code := mustIssue(t, s, bob)
	if _, ok, _ := take(s, bob); ok {
		t.Fatal("take redeemed a code nobody approved")
	}
	if err := s.Approve(strings.ToLower(code)); err != nil {
		t.Fatal(err)
	}
	r := bob
	r.Destination = " bob@PARTNER.com "
	if c, ok, err := take(s, r); !ok || err != nil || c != code {
		t.Fatalf("take = %s, %v, %v", c, ok, err)
	}
	if _, ok, _ := take(s, bob); ok {
		t.Fatal("a code was redeemed twice")
	}
	if _, err := s.Lookup(code); !errors.Is(err, ErrUsed) {
		t.Errorf("Lookup after take: %v, want ErrUsed", err)
	}
	if err := s.Approve(code); !errors.Is(err, ErrUsed) {
		t.Errorf("Approve after take: %v, want ErrUsed", err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("List shows used codes: %v", list)
	}
	if c := mustIssue(t, s, bob); c == code {
		t.Error("Issue reused a used code")
	}
}

func TestExpiry(t *testing.T) {
	s, clk := newStore(t)
	code := mustIssue(t, s, bob)
	clk.add(TTL - time.Nanosecond)
	if _, err := s.Lookup(code); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	if err := s.Approve(code); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Nanosecond)
	if c, err := s.Lookup(code); !errors.Is(err, ErrExpired) || c.Code != code {
		t.Errorf("at expiry: %v, want ErrExpired with the code", err)
	}
	if _, ok, _ := take(s, bob); ok {
		t.Error("an expired approved code was redeemed")
	}
	if err := s.Approve(code); !errors.Is(err, ErrExpired) {
		t.Errorf("Approve: %v, want ErrExpired", err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("List shows an expired code: %v", list)
	}
	if c := mustIssue(t, s, bob); c == code {
		t.Error("Issue reused an expired code")
	}
	// Expired codes are remembered for a while, then pruned on a write.
	clk.add(Keep)
	mustIssue(t, s, Request{Server: "a", Tool: "b", Param: "c", Destination: "d"})
	if _, err := s.Lookup(code); !errors.Is(err, ErrUnknown) {
		t.Errorf("after Keep: %v, want ErrUnknown (pruned)", err)
	}
}

// An issue time in the future can't come from this clock: not valid.
func TestFutureIssue(t *testing.T) {
	s, clk := newStore(t)
	code := mustIssue(t, s, bob)
	clk.add(-skew - time.Second)
	if _, err := s.Lookup(code); !errors.Is(err, ErrExpired) {
		t.Errorf("code issued in the future: %v, want ErrExpired", err)
	}
}

func TestApproveShown(t *testing.T) {
	s, _ := newStore(t)
	code := mustIssue(t, s, bob)
	shown, err := s.Lookup(code)
	if err != nil {
		t.Fatal(err)
	}
	// Someone rewrites the code's destination while the prompt is up.
	b, _ := os.ReadFile(s.path)
	os.WriteFile(s.path, []byte(strings.Replace(string(b), "bob@partner.com", "eve@evil.com", 1)), 0o600)
	if err := s.ApproveShown(shown, false); !errors.Is(err, ErrChanged) {
		t.Fatalf("ApproveShown: %v, want ErrChanged", err)
	}
	if c, _ := s.Lookup(code); c.Approved {
		t.Error("the changed code was approved")
	}
}

func TestLookupUnknown(t *testing.T) {
	s, _ := newStore(t)
	for _, c := range []string{"K7Q-F2M", "", "K7QF2M", "K7Q-F2M-X", "../../x", "k7q–f2m"} {
		if _, err := s.Lookup(c); !errors.Is(err, ErrUnknown) {
			t.Errorf("Lookup(%q): %v, want ErrUnknown", c, err)
		}
		if err := s.Approve(c); !errors.Is(err, ErrUnknown) {
			t.Errorf("Approve(%q): %v, want ErrUnknown", c, err)
		}
	}
	if _, err := os.Stat(s.path); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed Approve wrote the file")
	}
}

func TestCorruptFile(t *testing.T) {
	cases := map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"syntax":        {"{\"version\":1,\n \"codes\": [\n  {\"code\": \"K7Q-F2M\",,}]}", 0o600, "line 3, column 22"},
		"truncated":     {"{\"version\":1,\"codes\":[", 0o600, "ends early"},
		"trailing":      {"{\"version\":1,\"codes\":[]} {}", 0o600, "after the JSON"},
		"not an object": {"[]", 0o600, "line 1, column 1"},
		"codes a map":   {"{\"version\":1,\"codes\":{}}", 0o600, "line 1, column"},
		"no version":    {"{\"codes\":[]}", 0o600, "version 0"},
		"world writable": {"{\"version\":1,\"codes\":[{\"code\":\"K7Q-F2M\",\"server\":\"mail\",\"tool\":\"send_email\",\"param\":\"to\"," +
			"\"destination\":\"bob@partner.com\",\"issued\":\"2026-12-02T14:00:00Z\",\"approved\":true}]}", 0o666, "other users write it"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := newStore(t)
			os.MkdirAll(filepath.Dir(s.path), 0o700)
			os.WriteFile(s.path, []byte(tc.content), 0o600)
			os.Chmod(s.path, tc.mode)
			check := func(op string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s: no error", op)
					return
				}
				if !strings.Contains(err.Error(), s.path) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want the path and %q", op, err, tc.want)
				}
			}
			_, err := s.Issue(bob, nil)
			check("Issue", err)
			_, ok, err := take(s, bob)
			check("Redeem", err)
			if ok {
				t.Error("take redeemed a code from a corrupt file")
			}
			_, err = s.List()
			check("List", err)
			_, err = s.Lookup("K7Q-F2M")
			check("Lookup", err)
			check("Approve", s.Approve("K7Q-F2M"))
			if b, _ := os.ReadFile(s.path); string(b) != tc.content {
				t.Error("the corrupt file was overwritten")
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	s, _ := newStore(t)
	os.MkdirAll(filepath.Dir(s.path), 0o700)
	os.WriteFile(s.path, nil, 0o600)
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("List on an empty file: %v, %v", list, err)
	}
	mustIssue(t, s, bob)
}

func TestConcurrentGoroutines(t *testing.T) {
	s, _ := newStore(t)
	shared := mustIssue(t, s, bob)
	if err := s.Approve(shared); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	takes := 0
	codes := map[string]bool{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bob
			r.Destination = fmt.Sprintf("u%d@x.com", i)
			c, err := s.Issue(r, nil)
			if err != nil {
				t.Error(err)
			}
			_, ok, err := take(s, bob)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			codes[c] = true
			if ok {
				takes++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if takes != 1 {
		t.Errorf("the approved code was redeemed %d times", takes)
	}
	list, _ := s.List()
	if len(codes) != n || len(list) != n {
		t.Errorf("%d distinct codes, %d listed; want %d", len(codes), len(list), n)
	}
}

const helperEnv = "BOUNCER_APPROVAL_TEST_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(helper(path))
	}
	os.Exit(m.Run())
}

// helper issues codes and tries to redeem the shared one; it prints how
// many times it succeeded.
func helper(path string) int {
	s := Open(path, nil)
	id := os.Getenv("ID")
	took := 0
	for i := 0; i < 10; i++ {
		r := bob
		r.Destination = fmt.Sprintf("p%s-%d@x.com", id, i)
		if _, err := s.Issue(r, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, ok, err := take(s, bob)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if ok {
			took++
		}
	}
	fmt.Print(took)
	return 0
}

func TestConcurrentProcesses(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "pending.json"), nil)
	if err := s.Approve(mustIssue(t, s, bob)); err != nil {
		t.Fatal(err)
	}
	const procs = 4
	outs := make([]strings.Builder, procs)
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+s.path, "ID="+strconv.Itoa(p))
		cmd.Stdout, cmd.Stderr = &outs[p], os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	took := 0
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(outs[p].String())
		took += n
	}
	if took != 1 {
		t.Errorf("the approved code was redeemed %d times across processes", took)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != procs*10 {
		t.Errorf("%d open codes, want %d (lost updates?)", len(list), procs*10)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"codes":[{"code":"K7Q-F2M","server":"a","tool":"b","param":"c","destination":"d","issued":"2026-12-02T14:00:00Z","approved":false,"used":false}]}`))
	f.Add([]byte(`{"version":1,"codes":[{"code":"K7Q-F2M","server":"a","tool":"b","param":"","destination":"","issued":"2026-12-02T14:00:00Z"},{"code":"K7Q-F2M"},null,1]}`))
	f.Add([]byte(`{"version":1,"codes":null}`))
	f.Add([]byte("{\n\"version\":"))
	f.Fuzz(func(t *testing.T, data []byte) {
		codes, invalid, err := Parse(data)
		if err != nil {
			if codes != nil || invalid != nil {
				t.Fatal("Parse returned entries with an error")
			}
			return
		}
		// What Parse accepts keeps the rules, so it can be written again
		// and reads back the same.
		for _, c := range codes {
			if err := validEntry(c); err != nil {
				t.Fatalf("Parse accepted %+v: %v", c, err)
			}
		}
		for _, e := range invalid {
			if !errors.Is(e, ErrInvalid) {
				t.Fatalf("skipped entry error %v does not match ErrInvalid", e)
			}
		}
		b, err := json.Marshal(file{Version: version, Codes: codes})
		if err != nil {
			t.Fatal(err)
		}
		again, bad, err := Parse(b)
		if err != nil || len(bad) != 0 || len(again) != len(codes) {
			t.Fatalf("accepted entries do not read back: %v, %v", bad, err)
		}
		for i := range again {
			if again[i].Request != codes[i].Request || !again[i].Issued.Equal(codes[i].Issued) {
				t.Fatalf("entry %d changed: %+v, was %+v", i, again[i], codes[i])
			}
		}
	})
}

// BenchmarkIssueApproveRedeem is one code's whole life: three locked,
// synced rewrites of pending.json.
func BenchmarkIssueApproveRedeem(b *testing.B) {
	s := Open(filepath.Join(b.TempDir(), "pending.json"), nil)
	i := 0
	for b.Loop() {
		r := bob
		r.Destination = strconv.Itoa(i)
		i++
		code, err := s.Issue(r, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Approve(code); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := take(s, r); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// A yes for the session is kept with the code and handed to the proxy
// that redeems it; a plain yes is for one call. Either way the code is
// used once.
func TestApproveForSession(t *testing.T) {
	for _, session := range []bool{false, true} {
		t.Run(fmt.Sprint("session=", session), func(t *testing.T) {
			s, _ := newStore(t)
			code := mustIssue(t, s, bob)
			shown, err := s.Lookup(code)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.ApproveShown(shown, session); err != nil {
				t.Fatal(err)
			}
			used, missing, err := s.Redeem([]Request{bob})
			if err != nil || missing != nil || len(used) != 1 {
				t.Fatalf("Redeem = %v, %v, %v", used, missing, err)
			}
			if used[0].Code != code || !used[0].Approved || used[0].Session != session {
				t.Fatalf("used %+v, want code %s approved, session %v", used[0], code, session)
			}
			if _, err := s.Lookup(code); !errors.Is(err, ErrUsed) {
				t.Fatalf("after Redeem: %v, want ErrUsed", err)
			}
		})
	}
}

// Where the destination's domain was seen goes with the code the proxy
// issues; a note that could not be read back is dropped, not the code.
func TestIssueSeen(t *testing.T) {
	s, _ := newStore(t)
	code, err := s.Issue(bob, &Seen{Domain: "partner.com", Server: "inbox"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Lookup(code)
	if err != nil || c.Seen == nil || *c.Seen != (Seen{Domain: "partner.com", Server: "inbox"}) {
		t.Fatalf("Lookup = %+v, %v", c, err)
	}
	carol := Request{Server: "mail", Tool: "send_email", Param: "to", Destination: "carol@partner.com"}
	code, err = s.Issue(carol, &Seen{Domain: "partner.com", Server: strings.Repeat("x", MaxName+1)})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Lookup(code); err != nil || c.Seen != nil {
		t.Fatalf("Lookup = %+v, %v; want the code without its note", c, err)
	}
}

// An entry that says "session" without "approved", or a note with an
// empty field, breaks the rules: skipped, approving nothing.
func TestParseSessionAndSeen(t *testing.T) {
	for _, entry := range []string{
		`{"code":"ABC-DEF","server":"mail","tool":"send_email","param":"to","destination":"bob@partner.com","issued":"2026-12-02T14:00:00Z","approved":false,"session":true,"used":false}`,
		`{"code":"ABC-DEF","server":"mail","tool":"send_email","param":"to","destination":"bob@partner.com","issued":"2026-12-02T14:00:00Z","approved":false,"used":false,"seen":{"domain":"","server":"inbox"}}`,
	} {
		codes, invalid, err := Parse([]byte(`{"version":1,"codes":[` + entry + `]}`))
		if err != nil || len(codes) != 0 || len(invalid) != 1 {
			t.Errorf("Parse(%s) = %v, %v, %v; want one invalid entry", entry, codes, invalid, err)
		}
	}
}
