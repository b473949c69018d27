package ship

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// A redirect on the collector's own origin that turns the export's POST
// into a GET (301, 302, 303: Go's client then drops the body) delivers
// nothing: the 200 that answers the GET is not the collector taking the
// batch. It must not count as shipped, and the cursor must not move.
func TestOTLPRedirectThatDropsTheBody(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var home string
			col := newCollectorStub(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				if strings.HasPrefix(r.URL.Path, "/base/") {
					w.Header().Set("Location", home+"/login")
					w.WriteHeader(code)
					return
				}
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte("<html>sign in</html>"))
			})
			home = col.srv.URL
			dir := t.TempDir()
			l := newTestLog(t, dir)
			l.add(3)
			res := Run(context.Background(), Config{Log: l.path, StateDir: dir, Dests: secretDests(t, home+"/base"), Once: true,
				MinBackoff: time.Millisecond})
			col.mu.Lock()
			for _, r := range col.got {
				if r.Method != http.MethodPost {
					t.Errorf("the shipper sent a %s %s", r.Method, r.URL.Path)
				}
			}
			col.mu.Unlock()
			if res[0].Err == nil || res[0].Shipped != 0 {
				t.Fatalf("a %d to a GET page was taken as delivered: %+v", code, res[0])
			}
			if !strings.Contains(res[0].Err.Error(), "POST") {
				t.Errorf("the error does not say why: %v", res[0].Err)
			}
			if _, err := os.Stat(cursorPath(dir, res[0].Dest)); !os.IsNotExist(err) {
				t.Fatalf("the cursor moved: %v", err)
			}
		})
	}
}
