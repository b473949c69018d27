package oauth

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// errNoBrowser says that no opener was found; the URL printed on stderr
// is then the only way in, which is fine.
var errNoBrowser = errors.New("no browser opener found ($BROWSER is unset and no system opener is installed)")

// OpenBrowser opens url the way the user's system does: each command of
// $BROWSER in turn (a list separated by the path-list separator, as
// xdg-utils reads it; "%s" in a command stands for the URL, else the URL
// is its last argument), else the system's opener: xdg-open (or
// wslview) on Linux and the BSDs, open on macOS, rundll32 on Windows.
// It starts the opener and does not wait for it. No shell is involved:
// the URL is one argument.
func OpenBrowser(url string) error {
	return openWith(url, os.Getenv("BROWSER"), runtime.GOOS, exec.LookPath)
}

func openWith(url, browserEnv, goos string, lookPath func(string) (string, error)) error {
	var candidates [][]string
	if browserEnv != "" {
		for _, entry := range strings.Split(browserEnv, string(os.PathListSeparator)) {
			fields := strings.Fields(entry)
			if len(fields) == 0 {
				continue
			}
			substituted := false
			for i, f := range fields {
				if strings.Contains(f, "%s") {
					fields[i] = strings.ReplaceAll(f, "%s", url)
					substituted = true
				}
			}
			if !substituted {
				fields = append(fields, url)
			}
			candidates = append(candidates, fields)
		}
	}
	switch goos {
	case "darwin":
		candidates = append(candidates, []string{"open", url})
	case "windows":
		candidates = append(candidates, []string{"rundll32", "url.dll,FileProtocolHandler", url})
	default:
		candidates = append(candidates, []string{"xdg-open", url}, []string{"wslview", url})
	}
	var firstErr error
	for _, argv := range candidates {
		path, err := lookPath(argv[0])
		if err != nil {
			continue
		}
		cmd := exec.Command(path, argv[1:]...)
		// The opener must not read the proxy's stdin (the MCP client's
		// messages) nor write to its stdout (the MCP stream).
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
		if err := cmd.Start(); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		go cmd.Wait()
		return nil
	}
	if firstErr != nil {
		return firstErr
	}
	return errNoBrowser
}
