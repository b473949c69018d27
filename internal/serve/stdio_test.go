package serve

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestKind(t *testing.T) {
	tests := []struct {
		line          string
		request, resp bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true, false},
		{`{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}`, true, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false, false},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, false, true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, false, true},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, false, false},
		{`not json`, false, false},
	}
	for _, tc := range tests {
		req, resp := kind([]byte(tc.line))
		if req != tc.request || resp != tc.resp {
			t.Errorf("kind(%s) = %v, %v; want %v, %v", tc.line, req, resp, tc.request, tc.resp)
		}
	}
}

// TestStdioHoldsEOF: the end of stdin reaches the SDK only once every
// request read has been answered, so piped requests all get replies.
func TestStdioHoldsEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` // no final newline
	var out bytes.Buffer
	s := newStdio(strings.NewReader(in), &out)

	// Small reads still pass every byte through, in order.
	var got []byte
	buf := make([]byte, 7)
	for len(got) < len(in) {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != in {
		t.Fatalf("passed through %q", got)
	}

	eof := make(chan error, 1)
	go func() { _, err := s.Read(buf); eof <- err }()
	answer := func(id string) {
		// Written in two pieces, as a writer may split a line.
		s.Write([]byte(`{"jsonrpc":"2.0","id":` + id))
		s.Write([]byte(`,"result":{}}` + "\n"))
	}
	answer("1")
	select {
	case err := <-eof:
		t.Fatalf("EOF (%v) with request 2 unanswered", err)
	case <-time.After(100 * time.Millisecond):
	}
	// A request from the server to the client is not an answer.
	s.Write([]byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n"))
	select {
	case err := <-eof:
		t.Fatalf("EOF (%v) after a server request, with request 2 unanswered", err)
	case <-time.After(100 * time.Millisecond):
	}
	answer("2")
	if err := <-eof; err != io.EOF {
		t.Fatalf("after both answers: %v, want EOF", err)
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) {
		t.Errorf("output %q", out.String())
	}
}
