package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are the testscript commands of our own: a loopback OCI
// registry for policy push/pull, and an MCP server over HTTP for run --url.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"registry":       scriptRegistry,
	"snapshot":       scriptSnapshot,
	"serve-helpdesk": serveHelpdesk,
}

// scriptRegistry starts an OCI registry (go-containerregistry's) on
// loopback for the rest of the script and sets $REGISTRY to its host:port.
//
//	registry                  anonymous access
//	registry -auth USER:PASS  every request needs HTTP basic auth
//	registry -closed          $REGISTRY names a port nobody listens on
func scriptRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! registry")
	}
	var user, pass string
	switch {
	case len(args) == 0:
	case len(args) == 1 && args[0] == "-closed":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv("REGISTRY", l.Addr().String())
		l.Close()
		return
	case len(args) == 2 && args[0] == "-auth" && strings.Contains(args[1], ":"):
		user, pass, _ = strings.Cut(args[1], ":")
	default:
		ts.Fatalf("usage: registry [-auth USER:PASS | -closed]")
	}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if user != "" {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="script"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	ts.Defer(srv.Close)
	ts.Setenv("REGISTRY", strings.TrimPrefix(srv.URL, "http://"))
}

// scriptSnapshot prints a directory tree (names, modes, link targets and a
// hash of each file) so a script can show that a command changed nothing.
func scriptSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: snapshot DIR")
	}
	root := ts.MkAbs(args[0])
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(ts.Stdout(), "%s -> %s\n", rel, target)
		case fi.IsDir():
			fmt.Fprintf(ts.Stdout(), "%s/ %v\n", rel, fi.Mode().Perm())
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(ts.Stdout(), "%s %v %x\n", rel, fi.Mode().Perm(), sha256.Sum256(data))
		}
		return nil
	})
	ts.Check(err)
}
