package ship

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
)

// What counts as accepted: any 2xx, a partial success included; anything
// else is not, and the cursor stays.
func TestOTLPAnswers(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusOK
	var body []byte
	var gotHeader, gotPath string
	var got collogpb.ExportLogsServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		gotHeader, gotPath = r.Header.Get("Authorization"), r.URL.Path
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/base/v1/logs" {
			proto.Unmarshal(b, &got)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(status)
		w.Write(body)
	}))
	defer srv.Close()
	ds, err := Destinations([]bundle.AuditShip{{OTLP: srv.URL + "/base", Headers: map[string]string{"Authorization": "Bearer ${T}"}}},
		func(k string) (string, bool) { return "s3cret", k == "T" }, "h")
	if err != nil {
		t.Fatal(err)
	}
	d := ds[0]
	lines := []Line{lineOf(sampleLine), lineOf("second")}
	ctx := context.Background()

	if err := d.Send(ctx, lines); err != nil {
		t.Fatalf("200: %v", err)
	}
	if gotHeader != "Bearer s3cret" || gotPath != "/base/v1/logs" {
		t.Fatalf("header %q path %q", gotHeader, gotPath)
	}
	recs := got.ResourceLogs[0].ScopeLogs[0].LogRecords
	if len(recs) != 2 || recs[0].Body.GetStringValue() != sampleLine || recs[1].Body.GetStringValue() != "second" {
		t.Fatalf("records on the wire: %v", recs)
	}

	partial, _ := proto.Marshal(&collogpb.ExportLogsServiceResponse{PartialSuccess: &collogpb.ExportLogsPartialSuccess{RejectedLogRecords: 1, ErrorMessage: "too old"}})
	mu.Lock()
	body = partial
	mu.Unlock()
	var rej *Rejected
	if err := d.Send(ctx, lines); !errors.As(err, &rej) || rej.N != 1 || rej.Of != 2 || rej.Message != "too old" {
		t.Fatalf("a 2xx partial success is accepted, and said: %v", err)
	}

	for _, code := range []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable, http.StatusInternalServerError} {
		mu.Lock()
		status, body = code, nil
		mu.Unlock()
		if err := d.Send(ctx, lines); err == nil {
			t.Fatalf("%d counted as accepted", code)
		}
		if err := d.Flush(ctx); err == nil {
			t.Fatalf("metrics: %d counted as accepted", code)
		}
	}
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if err := d.Flush(ctx); err != nil || gotPath != "/base/v1/metrics" {
		t.Fatalf("metrics: %v, path %q", err, gotPath)
	}
}

// collectorStub is an OTLP/HTTP endpoint on loopback (a real net/http
// server) whose answers a test chooses; it keeps every request it got.
type collectorStub struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	answer func(w http.ResponseWriter, r *http.Request, body []byte)
}

func newCollectorStub(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *collectorStub {
	t.Helper()
	c := &collectorStub{answer: answer}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.got = append(c.got, r)
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
		if c.answer != nil {
			c.answer(w, r, b)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collectorStub) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// The secrets of the tests' audit_ship headers: a bearer token from
// ${BOUNCER_TEST_TOKEN}, and an API key that is a ${VAR} whole.
const (
	testToken  = "tok-0123456789abcdef"
	testAPIKey = "key-fedcba9876543210"
)

func secretDests(t *testing.T, url string) []Destination {
	t.Helper()
	ds, err := Destinations([]bundle.AuditShip{{File: "trust.yaml", OTLP: url,
		Headers: map[string]string{"Authorization": "Bearer ${BOUNCER_TEST_TOKEN}", "X-Api-Key": "${BOUNCER_TEST_KEY}"}}},
		func(k string) (string, bool) {
			switch k {
			case "BOUNCER_TEST_TOKEN":
				return testToken, true
			case "BOUNCER_TEST_KEY":
				return testAPIKey, true
			}
			return "", false
		}, "h")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// A collector that redirects elsewhere gets nothing sent there: not the
// log, and not the headers; the cursor stays. A redirect on the
// collector's own origin is followed.
func TestOTLPRedirects(t *testing.T) {
	elsewhere := newCollectorStub(t, nil)
	for _, c := range []struct {
		name   string
		to     func(home string) string // where the collector sends /base/... (home is its own URL)
		refuse bool
	}{
		{"another port", func(string) string { return elsewhere.srv.URL }, true},
		{"another host name", func(string) string { return strings.Replace(elsewhere.srv.URL, "127.0.0.1", "localhost", 1) }, true},
		{"same origin", func(home string) string { return home + "/moved" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var home string
			col := newCollectorStub(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				if strings.HasPrefix(r.URL.Path, "/base/") {
					w.Header().Set("Location", c.to(home)+strings.TrimPrefix(r.URL.Path, "/base"))
					w.WriteHeader(http.StatusTemporaryRedirect)
				}
			})
			home = col.srv.URL
			before := elsewhere.requests()
			dir := t.TempDir()
			l := newTestLog(t, dir)
			l.add(3)
			var n notes
			res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: secretDests(t, home+"/base"), Once: true,
				MinBackoff: time.Millisecond, Logf: n.logf})
			if got := elsewhere.requests() - before; got != 0 {
				r := elsewhere.got[len(elsewhere.got)-1]
				t.Fatalf("the other origin got %d requests (Authorization %q, X-Api-Key %q)", got, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
			}
			if !c.refuse {
				if res[0].Err != nil || res[0].Shipped != 3 || col.requests() != 4 {
					t.Fatalf("a redirect on the collector's origin: %+v, %d requests", res[0], col.requests())
				}
				if r := col.got[len(col.got)-1]; r.URL.Path != "/moved/v1/metrics" || r.Header.Get("Authorization") != "Bearer "+testToken {
					t.Fatalf("followed to %s with Authorization %q", r.URL.Path, r.Header.Get("Authorization"))
				}
				return
			}
			if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "the collector redirects to http://") ||
				!strings.Contains(res[0].Err.Error(), "another origin than audit_ship.otlp's") {
				t.Fatalf("result %+v", res[0])
			}
			if _, err := os.Stat(cursorPath(dir, res[0].Dest)); !os.IsNotExist(err) {
				t.Fatalf("the cursor moved: %v", err)
			}
		})
	}
}

// A collector's answer that echoes the credentials is shown without them:
// not the header's value, not the token alone, not a ${VAR}'s value.
func TestOTLPAnswerRedacted(t *testing.T) {
	col := newCollectorStub(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "invalid credentials: Authorization: %s\nX-Api-Key: %s\ntoken %s unknown\x1b[2J", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), testToken)
	})
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(2)
	ds := secretDests(t, col.srv.URL)
	var n notes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []Result)
	go func() {
		done <- Run(ctx, Config{Log: l.path, StateDir: dir, Dests: ds, Poll: 10 * time.Millisecond,
			MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Logf: n.logf})
	}()
	waitFor(t, "a retry", 10*time.Second, func() bool { return strings.Contains(n.String(), "trying again") })
	cancel()
	<-done
	res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: ds, Once: true, MinBackoff: time.Millisecond})
	if res[0].Err == nil {
		t.Fatal("a 401 was taken as delivered")
	}
	n.mu.Lock()
	said := append([]string{res[0].Err.Error()}, n.all...)
	n.mu.Unlock()
	for _, said := range said {
		if strings.Contains(said, "tok-") || strings.Contains(said, "key-") || strings.ContainsAny(said, "\x1b\n") {
			t.Fatalf("the collector's answer was shown with its secrets or controls:\n%s", said)
		}
		if !strings.Contains(said, "401 Unauthorized") || !strings.Contains(said, "Authorization: [redacted]") ||
			!strings.Contains(said, "X-Api-Key: [redacted]") || !strings.Contains(said, "token [redacted] unknown") {
			t.Fatalf("the answer is not shown, redacted:\n%s", said)
		}
	}
}

// A partial success that rejects records, in either encoding OTLP/HTTP
// has: the batch counts as delivered (OTLP forbids sending it again), the
// shipper says so naming the count and the collector's message (redacted,
// escaped), and bouncer.ship.rejected counts the records.
func TestOTLPPartialSuccess(t *testing.T) {
	for _, c := range []struct {
		name     string
		ctype    string
		marshal  func(proto.Message) ([]byte, error)
		rejected func(sent int) int64
		want     string
	}{
		{"all rejected, protobuf", "application/x-protobuf", proto.Marshal, func(n int) int64 { return int64(n) },
			`lines 1-3: the collector rejected all 3 records: "too old [redacted] for tenant\"x\"[31m"; the cursor moves past them all the same`},
		{"all rejected, JSON", "application/json", protojson.Marshal, func(n int) int64 { return int64(n) },
			`lines 1-3: the collector rejected all 3 records: "too old [redacted] for tenant\"x\"[31m"`},
		{"some rejected", "application/x-protobuf", proto.Marshal, func(int) int64 { return 1 },
			`lines 1-3: the collector rejected 1 of the 3 records (it does not say which): "too old`},
		{"more than were sent", "application/x-protobuf", proto.Marshal, func(int) int64 { return 1000 },
			`lines 1-3: the collector rejected all 3 records`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var metrics []*colmetricpb.ExportMetricsServiceRequest
			var mu sync.Mutex
			col := newCollectorStub(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				if r.URL.Path == "/v1/metrics" {
					var req colmetricpb.ExportMetricsServiceRequest
					proto.Unmarshal(body, &req)
					mu.Lock()
					metrics = append(metrics, &req)
					mu.Unlock()
					return
				}
				var req collogpb.ExportLogsServiceRequest
				proto.Unmarshal(body, &req)
				sent := len(req.ResourceLogs[0].ScopeLogs[0].LogRecords)
				ans, _ := c.marshal(&collogpb.ExportLogsServiceResponse{PartialSuccess: &collogpb.ExportLogsPartialSuccess{
					RejectedLogRecords: c.rejected(sent), ErrorMessage: "too old\n" + r.Header.Get("Authorization") + " for tenant\"x\"\x1b[31m"}})
				w.Header().Set("Content-Type", c.ctype)
				w.Write(ans)
			})
			dir := t.TempDir()
			l := newTestLog(t, dir)
			l.add(3)
			var n notes
			res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: secretDests(t, col.srv.URL), Once: true, Logf: n.logf})
			wantRejected := min(c.rejected(3), 3)
			if res[0].Err != nil || res[0].Shipped != 3 || res[0].Rejected != wantRejected {
				t.Fatalf("result %+v", res[0])
			}
			if !strings.Contains(n.String(), c.want) || !strings.Contains(n.String(), "bouncer.ship.rejected counts them") || strings.Contains(n.String(), "tok-") {
				t.Fatalf("notes:\n%s\nwant %s", n.String(), c.want)
			}
			if cur, err := loadCursor(cursorPath(dir, res[0].Dest)); err != nil || cur.Line != 3 {
				t.Fatalf("cursor %+v, %v", cur, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(metrics) != 1 {
				t.Fatalf("%d metrics exports", len(metrics))
			}
			if got := rejectedPoints(metrics[0]); got["logs"] != wantRejected || got["metrics"] != 0 || len(got) != 2 {
				t.Fatalf("bouncer.ship.rejected %v, want logs %d", got, wantRejected)
			}
		})
	}
}

// rejectedPoints is bouncer.ship.rejected in an export, by bouncer.signal.
func rejectedPoints(req *colmetricpb.ExportMetricsServiceRequest) map[string]int64 {
	out := map[string]int64{}
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != RejectedMetricName || !m.GetSum().GetIsMonotonic() || m.GetSum().GetAggregationTemporality() != 2 {
					continue
				}
				for _, p := range m.GetSum().DataPoints {
					for _, a := range p.Attributes {
						if a.Key == "bouncer.signal" {
							out[a.Value.GetStringValue()] = p.GetAsInt()
						}
					}
				}
			}
		}
	}
	return out
}

// A partial success of the metrics export is said and counted too, and
// does not make the count due again at once (it would be rejected with
// it, over and over).
func TestOTLPMetricsPartialSuccess(t *testing.T) {
	var metrics []*colmetricpb.ExportMetricsServiceRequest
	col := newCollectorStub(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path != "/v1/metrics" {
			return
		}
		var req colmetricpb.ExportMetricsServiceRequest
		proto.Unmarshal(body, &req)
		metrics = append(metrics, &req)
		ans, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{PartialSuccess: &colmetricpb.ExportMetricsPartialSuccess{
			RejectedDataPoints: 2, ErrorMessage: "unknown metric"}})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(ans)
	})
	d := secretDests(t, col.srv.URL)[0]
	ctx := context.Background()
	if err := d.Send(ctx, []Line{lineOf(sampleLine)}); err != nil {
		t.Fatal(err)
	}
	err := d.Flush(ctx)
	var rej *Rejected
	if !errors.As(err, &rej) || rej.N != 2 || rej.What != "data points" || rej.Message != "unknown metric" {
		t.Fatalf("flush: %v", err)
	}
	if err := d.Flush(ctx); err != nil || len(metrics) != 1 {
		t.Fatalf("flushed again at once: %v, %d exports", err, len(metrics))
	}
	// The next export that is due carries the count.
	d.Send(ctx, []Line{lineOf(sampleLine)})
	d.Flush(ctx)
	if len(metrics) != 2 || rejectedPoints(metrics[1])["metrics"] != 2 {
		t.Fatalf("%d exports; the last counts %v", len(metrics), rejectedPoints(metrics[len(metrics)-1]))
	}
}
