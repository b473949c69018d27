package redirect

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSame(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:4318/v1/logs", "http://127.0.0.1:4318/other?x=1", true},
		{"https://Collector.Example.com/v1", "https://collector.example.com:443/", true},
		{"http://example.com", "http://example.com:80/x", true},
		{"http://127.0.0.1:4318", "http://127.0.0.1:4319", false},
		{"http://127.0.0.1:4318", "http://localhost:4318", false},
		{"https://example.com", "http://example.com", false},
		{"https://example.com", "https://example.com:8443", false},
		{"https://example.com", "https://example.com.evil.test", false},
		{"https://example.com", "https://evil.test/example.com", false},
		{"https://example.com", "https://example.com@evil.test/", false},
	} {
		a, _ := url.Parse(c.a)
		b, _ := url.Parse(c.b)
		if got := Same(a, b); got != c.want {
			t.Errorf("Same(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if Same(nil, &url.URL{}) {
		t.Error("a nil URL has no origin")
	}
}

// A client with SameOrigin follows a redirect on the origin, and refuses
// one elsewhere without sending it there; and it stops after Max.
func TestSameOriginClient(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here":
			http.Redirect(w, r, "/there", http.StatusTemporaryRedirect)
		case "/there":
			w.Write([]byte("ok"))
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		default: // a loop
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		}
	}))
	defer srv.Close()
	origin, _ := url.Parse(srv.URL)
	refused := errors.New("refused")
	client := &http.Client{CheckRedirect: SameOrigin(origin, func(to *url.URL) error {
		if to.Host != strings.TrimPrefix(other.URL, "http://") {
			t.Errorf("refuse got %s", to)
		}
		return refused
	})}

	resp, err := client.Get(srv.URL + "/here")
	if err != nil || resp.Request.URL.Path != "/there" {
		t.Fatalf("a redirect on the origin: %v", err)
	}
	resp.Body.Close()

	resp, err = client.Get(srv.URL + "/away")
	if !errors.Is(err, refused) {
		t.Fatalf("a redirect to another origin: %v", err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}

	if _, err := client.Get(srv.URL + "/loop"); err == nil || !strings.Contains(err.Error(), "more than 5 redirects") {
		t.Fatalf("a redirect loop: %v", err)
	}
}

// A redirect that would turn a POST into a GET (301, 302, 303) is refused
// before the GET is sent, even on the origin: the body would reach nobody.
// 307 and 308 keep the method and the body, and are followed.
func TestSameOriginKeepsTheMethod(t *testing.T) {
	var gets atomic.Int32
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		switch r.URL.Path {
		case "/301", "/302", "/303", "/307", "/308":
			code := map[string]int{"/301": 301, "/302": 302, "/303": 303, "/307": 307, "/308": 308}[r.URL.Path]
			http.Redirect(w, r, "/there", code)
		case "/there":
			b := make([]byte, 64)
			n, _ := r.Body.Read(b)
			got.Store(string(b[:n]))
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	origin, _ := url.Parse(srv.URL)
	client := &http.Client{CheckRedirect: SameOrigin(origin, func(to *url.URL) error { return errors.New("elsewhere") })}
	for _, p := range []string{"/301", "/302", "/303"} {
		resp, err := client.Post(srv.URL+p, "text/plain", strings.NewReader("the batch"))
		if err == nil || !strings.Contains(err.Error(), "without the request's body") || !strings.Contains(err.Error(), "POST") {
			t.Errorf("POST %s: %v", p, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if n := gets.Load(); n != 0 {
		t.Fatalf("the server got %d GETs", n)
	}
	for _, p := range []string{"/307", "/308"} {
		got.Store("")
		resp, err := client.Post(srv.URL+p, "text/plain", strings.NewReader("the batch"))
		if err != nil {
			t.Fatalf("POST %s: %v", p, err)
		}
		resp.Body.Close()
		if got.Load() != "the batch" {
			t.Errorf("POST %s arrived with %q", p, got.Load())
		}
	}
}
