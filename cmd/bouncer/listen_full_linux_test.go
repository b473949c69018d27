package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/faultfs"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/smallfs"
)

// A replica whose disk fills up (the kernel's: a small tmpfs holds the
// state directory and its audit log) stops being ready, so its balancer
// sends new sessions elsewhere, and denies the calls its sessions still
// make, forwarding none; once space is freed it is ready again and a call
// goes through, with nothing restarted.
func TestListenFullDisk(t *testing.T) {
	home, ok := smallfs.Dir(t, 8<<20)
	if !ok {
		return
	}
	lt := startListenTestIn(t, home, "off", nil, "")
	lt.waitPinned()
	if st, body := lt.get("alice", "/readyz"); st != http.StatusOK {
		t.Fatalf("/readyz with room on the disk: %d %q", st, body)
	}
	cs := lt.client("alice", nil)
	send := map[string]any{"to": "boss@corp.example", "subject": "report", "body": "the numbers"}

	filler := smallfs.Fill(t, home)
	if st, body := lt.get("alice", "/readyz"); st != http.StatusServiceUnavailable || !strings.Contains(body, "audit log") {
		t.Fatalf("/readyz on a full disk: %d %q; want 503 naming the audit log", st, body)
	}
	// A line longer than the slack left in the log's last page.
	send["body"] = strings.Repeat("the numbers ", 8<<10)
	if text, isErr := call(t, cs, "send_email", send); !isErr || !strings.HasPrefix(text, "[bouncer blocked] ") || !strings.Contains(text, "audit") {
		t.Fatalf("a call on a full disk: %q (isError %v); want it denied", text, isErr)
	}
	if mails, _ := os.ReadFile(filepath.Join(lt.dir, "mails.jsonl")); len(mails) > 0 {
		t.Fatalf("a call whose line could not be written went upstream: %s", mails)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if st, body := lt.get("alice", "/readyz"); st != http.StatusOK {
		t.Fatalf("/readyz once space is freed: %d %q", st, body)
	}
	if text, isErr := call(t, cs, "send_email", send); isErr || text != "sent" {
		t.Fatalf("a call once space is freed: %q (isError %v)", text, isErr)
	}
}

// A replica whose disk fails to flush (fsync returns EIO, through a real
// FUSE mount under the state directory) stops being ready and denies the
// calls its sessions still make, forwarding none; unlike a full disk, it
// stays so when the disk answers again, since lines may have been lost,
// until it is restarted and its log checked.
func TestListenFailingSync(t *testing.T) {
	f := faultfs.Mount(t)
	if f == nil {
		return
	}
	lt := startListenTestIn(t, f.Dir, "off", nil, "")
	lt.waitPinned()
	if st, body := lt.get("alice", "/readyz"); st != http.StatusOK {
		t.Fatalf("/readyz on a good disk: %d %q", st, body)
	}
	cs := lt.client("alice", nil)
	send := map[string]any{"to": "boss@corp.example", "subject": "report", "body": "the numbers"}

	f.FailSync(true)
	if st, body := lt.get("alice", "/readyz"); st != http.StatusServiceUnavailable || !strings.Contains(body, "syncing to disk") {
		t.Fatalf("/readyz while the disk fails to sync: %d %q; want 503 naming the failed sync", st, body)
	}
	if text, isErr := call(t, cs, "send_email", send); !isErr || !strings.HasPrefix(text, "[bouncer blocked] ") || !strings.Contains(text, "audit") {
		t.Fatalf("a call after a failed sync: %q (isError %v); want it denied", text, isErr)
	}
	if mails, _ := os.ReadFile(filepath.Join(lt.dir, "mails.jsonl")); len(mails) > 0 {
		t.Fatalf("a call went upstream after the audit log failed to sync: %s", mails)
	}

	f.FailSync(false)
	if st, _ := lt.get("alice", "/readyz"); st != http.StatusServiceUnavailable {
		t.Fatalf("/readyz once the disk answers again: %d; want 503 until a restart", st)
	}
}
