package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An answer to Bouncer's question that is not plainly a yes is a no: the
// action spelled in another case, given twice, or under a key in another
// case. (The pump read the answer with encoding/json, which folds the
// case of keys and keeps the last of two; it reads it strictly now.)
func TestListenAmbiguousAnswerIsNo(t *testing.T) {
	lt := startListenTestPolicy(t, t.TempDir(), "off", nil, "", "send_email:\n  exfiltrating: true\n  sink_params: [to]\n")
	lt.waitPinned()
	for i, answer := range []string{
		`{"Action":"accept"}`,
		`{"ACTION":"accept"}`,
		`{"action":"decline","action":"accept"}`,
		`{"action":"accept ","content":{}}`,
		`{"action":"Accept"}`,
	} {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`
		st, _, h := lt.raw("alice", "POST", init, nil)
		sid := h.Get("Mcp-Session-Id")
		if st != http.StatusOK {
			t.Fatalf("initialize: %d", st)
		}
		hdr := map[string]string{"Mcp-Session-Id": sid}
		lt.raw("alice", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, lt.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"carol@partner.example","subject":"s","body":"b"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := (&http.Client{Transport: bearerTransport{token: lt.tokens["alice"]}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var result string
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal([]byte(data), &m)
			if m.Method == "elicitation/create" {
				lt.raw("alice", "POST", `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+answer+`}`, hdr)
				continue
			}
			if string(m.ID) == "5" {
				result = data
				break
			}
		}
		resp.Body.Close()
		cancel()
		if !strings.Contains(result, "[bouncer blocked]") {
			t.Errorf("answer %d %s: the call got %s; want it denied", i, answer, result)
		}
	}
}
