package ship

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
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
	if err := d.Send(ctx, lines); err != nil {
		t.Fatalf("a 2xx partial success is accepted: %v", err)
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
