package ship

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
)

// audit_ship.headers are expanded by envexpand's rule, the one `bouncer run
// --header` follows (cmd/bouncer's TestExpandEnvHeaders and the
// header_env testscript hold the same cases there): what reaches the
// collector is ${NAME}'s value, $NAME as written, and a value that holds
// "${...}" as it is, not expanded again.
func TestDestinationsExpandHeaders(t *testing.T) {
	var mu sync.Mutex
	got := http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	env := map[string]string{"T": "tok-0123456789", "NESTED": "${T}", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ds, err := Destinations([]bundle.AuditShip{{File: "trust.yaml", OTLP: srv.URL, Headers: map[string]string{
		"Authorization": "Bearer ${T}",
		"X-Lit":         "$T {T} pa$$",
		"X-Once":        "${NESTED}",
		"X-Empty":       "a${EMPTY}b",
	}}}, lookup, "h")
	if err != nil {
		t.Fatal(err)
	}
	if err := ds[0].Send(context.Background(), []Line{lineOf(sampleLine)}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for name, want := range map[string]string{"Authorization": "Bearer tok-0123456789", "X-Lit": "$T {T} pa$$", "X-Once": "${T}", "X-Empty": "ab"} {
		if got.Get(name) != want {
			t.Errorf("%s: the collector got %q, want %q", name, got.Get(name), want)
		}
	}
}

// An unset variable or a malformed reference is a *ConfigError (exit 2)
// naming the file, line and header, in the words `run --header` uses after
// its own "--header #N (Name)", and never quoting the value.
func TestDestinationsExpandErrors(t *testing.T) {
	lookup := func(k string) (string, bool) { return "tok-0123456789", k == "T" }
	for _, c := range []struct{ value, want string }{
		{"Bearer ${NOPE}", "trust.yaml:7: audit_ship.headers.Authorization: ${NOPE} is not set in the environment; set it where bouncer is started"},
		{"Bearer ${T}${NOPE}", "trust.yaml:7: audit_ship.headers.Authorization: ${NOPE} is not set in the environment; set it where bouncer is started"},
		{"Bearer ${T:-s3cr3t}", `trust.yaml:7: audit_ship.headers.Authorization: the "${...}" at byte 7 is not a variable reference; write ${NAME}`},
		{"Bearer ${s3cr3t", `trust.yaml:7: audit_ship.headers.Authorization: the "${" at byte 7 has no closing "}"; write a variable as ${NAME}`},
	} {
		_, err := Destinations([]bundle.AuditShip{{File: "trust.yaml", OTLP: "http://127.0.0.1:9",
			Headers: map[string]string{"Authorization": c.value}, HeaderLines: map[string]int{"Authorization": 7}}}, lookup, "h")
		ce, ok := err.(*ConfigError)
		if !ok || !strings.HasPrefix(ce.Error(), c.want) {
			t.Errorf("%q: %v, want a *ConfigError %q", c.value, err, c.want)
			continue
		}
		if strings.Contains(ce.Error(), "s3cr3t") || strings.Contains(ce.Error(), "tok-") {
			t.Errorf("%q: the error quotes the value: %v", c.value, err)
		}
	}
}
