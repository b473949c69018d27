package listen

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// tableListener is a listener with one session of alice's in its table,
// and nothing started.
func tableListener(t testing.TB) (*Listener, string) {
	l, err := New(Options{
		Backends: []Backend{{Name: "s", Start: func(context.Context) (transport.Upstream, error) { return nil, nil }}},
		NewJudge: func(SessionSpec) (Judge, error) { return nil, nil },
		Auth:     None{User: "alice"},
		Audit:    discard{},
		Replica:  "r1",
		StateDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	id := l.newSessionID()
	l.sessions[l.tableKey("alice", id)] = &Session{id: id, user: "alice", server: "s", conn: newConn(id, 0)}
	return l, id
}

type discard struct{}

func (discard) Append(audit.Entry) error      { return nil }
func (discard) AppendAll([]audit.Entry) error { return nil }

const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// nearMiss is id with one character after the replica changed.
func nearMiss(rnd *rand.Rand, id string) string {
	b := []byte(id)
	j := 3 + rnd.IntN(len(b)-3)
	b[j] = alphabet[(strings.IndexByte(alphabet, b[j])+1+rnd.IntN(31))%32]
	return string(b)
}

func randomID(rnd *rand.Rand) string {
	b := make([]byte, 39)
	for k := range b {
		b[k] = alphabet[rnd.IntN(32)]
	}
	return "r1." + string(b)
}

// A million random, near-miss and foreign ids find no session; the id
// itself, for its user, does.
func TestLookupMillionIDs(t *testing.T) {
	l, id := tableListener(t)
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 1_000_000 {
		user, try := "alice", ""
		switch i % 4 {
		case 0:
			try = nearMiss(rnd, id)
		case 1:
			try = randomID(rnd)
		case 2:
			try = id[:len(id)-1-rnd.IntN(5)]
		default:
			user, try = "bob", id
		}
		if s := l.lookup(user, "s", try); s != nil {
			t.Fatalf("%s's %q found a session", user, try)
		}
	}
	if l.lookup("alice", "s", id) == nil {
		t.Fatal("alice's own id finds nothing")
	}
	if l.lookup("alice", "other", id) != nil {
		t.Fatal("alice's id found her session on another server's endpoint")
	}
}

// BenchmarkLookup times the table for the user's own id, an id of another
// user (known here), an id never minted, and a near miss of a known one:
// compared with benchstat, they take the same time, since each is a keyed
// hash of the user and the id looked up in a map, and a hit adds only a
// comparison and a lock.
func BenchmarkLookup(b *testing.B) {
	l, id := tableListener(b)
	rnd := rand.New(rand.NewPCG(5, 6))
	ids := make([]string, 1024)
	near := make([]string, 1024)
	for i := range ids {
		ids[i] = randomID(rnd)
		near[i] = nearMiss(rnd, id)
	}
	b.Run("foreign", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if l.lookup("bob", "s", id) != nil {
				b.Fatal("found")
			}
		}
	})
	b.Run("unknown", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if l.lookup("bob", "s", ids[i&1023]) != nil {
				b.Fatal("found")
			}
		}
	})
	b.Run("nearmiss", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if l.lookup("bob", "s", near[i&1023]) != nil {
				b.Fatal("found")
			}
		}
	})
	b.Run("known", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if l.lookup("alice", "s", id) == nil {
				b.Fatal("not found")
			}
		}
	})
}
