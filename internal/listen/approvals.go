package listen

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/approval"
)

// The approval codes of a user's sessions. A call that needs a human, in a
// session whose client can't ask (no elicitation), is blocked with a
// one-time code bound to its session, server, tool, argument and
// destination; the code lives in its session's own pending file, so no
// other session (of the user or of anyone) can redeem it. Only the user
// signed in to the session sees it here and can approve it:
//
//	GET  /approvals        the user's open codes (JSON)
//	POST /approvals/CODE   approve one (body {"approve": true})
//
// Another user's code is answered as an unknown one: 404.

// pendingCode is an open code as /approvals lists it.
type pendingCode struct {
	Code        string    `json:"code"`
	Session     string    `json:"session"`
	Server      string    `json:"server"`
	Tool        string    `json:"tool"`
	Param       string    `json:"param"`
	Destination string    `json:"destination"`
	Issued      time.Time `json:"issued"`
	Approved    bool      `json:"approved"`
}

func (l *Listener) serveApprovals(w http.ResponseWriter, r *http.Request) {
	user := r.Context().Value(userKey{}).(string)
	code, one := strings.CutPrefix(r.URL.Path, "/approvals/")
	switch {
	case !one && r.Method == http.MethodGet:
		out := []pendingCode{}
		for _, s := range l.userSessions(user) {
			open, _, err := s.approvals.Pending()
			if err != nil {
				continue
			}
			for _, c := range open {
				out = append(out, pendingCode{Code: c.Code, Session: s.id, Server: c.Server, Tool: c.Tool,
					Param: c.Param, Destination: c.Destination, Issued: c.Issued, Approved: c.Approved})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"codes": out})
	case one && r.Method == http.MethodPost:
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			// A form post from a page is not JSON: approving takes a
			// request no page can send without the CORS preflight.
			http.Error(w, "Unsupported Media Type: POST {\"approve\": true} as application/json", http.StatusUnsupportedMediaType)
			return
		}
		var body struct {
			Approve bool `json:"approve"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&body); err != nil || !body.Approve {
			http.Error(w, "Bad Request: POST {\"approve\": true}", http.StatusBadRequest)
			return
		}
		for _, s := range l.userSessions(user) {
			c, err := s.approvals.Lookup(code)
			if errors.Is(err, approval.ErrUnknown) {
				continue
			}
			if err != nil {
				http.Error(w, "Conflict: "+err.Error(), http.StatusConflict)
				return
			}
			if err := s.approvals.ApproveShown(c, false); err != nil {
				http.Error(w, "Conflict: "+err.Error(), http.StatusConflict)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(pendingCode{Code: c.Code, Session: s.id, Server: c.Server, Tool: c.Tool,
				Param: c.Param, Destination: c.Destination, Issued: c.Issued, Approved: true})
			return
		}
		http.Error(w, "Not Found: no such open code among your sessions' (codes expire five minutes after they are issued)", http.StatusNotFound)
	default:
		w.Header().Set("Allow", "GET (/approvals), POST (/approvals/CODE)")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}
