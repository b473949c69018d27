package listen

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/jsonc"
)

// ConfigKey is the member of the client config file that configures the
// listener.
const ConfigKey = "x-bouncer-listen"

// FileConfig is the x-bouncer-listen object of the config file:
//
//	"x-bouncer-listen": {
//	  "auth": "none" | "token" | "oauth",
//	  "tokens": {"alice": "tokens/alice"},            // auth: token; paths relative to the file
//	  "oauth": {"issuer": "https://idp.example", "jwks_uri": "...", "scopes": ["mcp"], "user_claim": "sub"},
//	  "resource": "https://mcp.example.com",          // this listener's public URL (oauth's audience)
//	  "hosts": ["mcp.example.com"], "origins": ["https://app.example.com"],
//	  "replica": "bouncer-0",
//	  "limits": {"sessions": 1000, "sessions_per_user": 20, "processes_per_user": 20,
//	             "spawn_rate": 25, "spawn_burst": 50, "idle": "30m", "respawns": 3,
//	             "budget_window": "24h", "warm": 0, "max_body": 4194304,
//	             "header_timeout": "10s", "read_timeout": "60s"}
//	}
//
// Every key is optional; an unknown key is an error naming its line.
type FileConfig struct {
	Auth     string
	Tokens   map[string]string // user → token file (absolute)
	OAuth    *OAuthConfig
	Resource string
	Hosts    []string
	Origins  []string
	Replica  string
	Limits   Limits
	MaxBody  int64
	// HeaderTimeout and ReadTimeout are Edge's.
	HeaderTimeout, ReadTimeout time.Duration
}

// OAuthConfig is x-bouncer-listen.oauth.
type OAuthConfig struct {
	// Issuer is the authorization server (its iss claim, and where its
	// metadata is found).
	Issuer string
	// JWKSURI is where its signing keys are; empty: from the issuer's
	// metadata.
	JWKSURI string
	// Scopes every token must carry.
	Scopes []string
	// UserClaim names the claim that is the user (default "sub").
	UserClaim string
}

// ParseConfig reads the x-bouncer-listen object of a config file's text
// (JSONC, as the clients' files are). A file without one gives the zero
// FileConfig.
func ParseConfig(file string, data []byte) (*FileConfig, error) {
	root, err := jsonc.Parse(file, data)
	if err != nil {
		return nil, err
	}
	fc := &FileConfig{}
	// Two x-bouncer-listen objects: which one is meant (the laxer auth of
	// the two?) is not for the listener to guess.
	var first *jsonc.Member
	for i := range root.Members {
		if m := &root.Members[i]; m.Key == ConfigKey {
			if first != nil {
				return nil, jsonc.Repeated(file, data, "the file's top-level object", first, m)
			}
			first = m
		}
	}
	n, ok := root.Get(ConfigKey)
	if !ok {
		return fc, nil
	}
	r := reader{file: file, data: data}
	if err := jsonc.CheckUnique(file, data, n, ConfigKey); err != nil {
		return nil, err
	}
	if n.Kind != jsonc.Object {
		return nil, r.at(n, "%s must be an object", ConfigKey)
	}
	dir := filepath.Dir(file)
	for _, m := range n.Members {
		key := ConfigKey + "." + m.Key
		v := m.Val
		switch m.Key {
		case "auth":
			if fc.Auth, err = r.str(v, key); err == nil {
				switch fc.Auth {
				case "none", "token", "oauth":
				default:
					err = r.at(v, "%s: %q is not none, token or oauth", key, fc.Auth)
				}
			}
		case "tokens":
			if v.Kind != jsonc.Object {
				return nil, r.at(v, "%s must be an object of user: token file", key)
			}
			fc.Tokens = map[string]string{}
			for _, t := range v.Members {
				p, err := r.str(t.Val, key+"."+t.Key)
				if err != nil {
					return nil, err
				}
				if !filepath.IsAbs(p) {
					p = filepath.Join(dir, p)
				}
				fc.Tokens[t.Key] = p
			}
		case "oauth":
			fc.OAuth, err = r.oauth(v, key)
		case "resource":
			fc.Resource, err = r.str(v, key)
		case "hosts":
			fc.Hosts, err = r.strs(v, key)
		case "origins":
			fc.Origins, err = r.strs(v, key)
		case "replica":
			if fc.Replica, err = r.str(v, key); err == nil {
				if verr := ValidReplica(fc.Replica); verr != nil {
					err = r.at(v, "%s: %v", key, verr)
				}
			}
		case "limits":
			err = r.limits(v, key, fc)
		default:
			return nil, r.atKey(m, "%s: unknown key (auth, tokens, oauth, resource, hosts, origins, replica, limits)", key)
		}
		if err != nil {
			return nil, err
		}
	}
	return fc, nil
}

type reader struct {
	file string
	data []byte
}

func (r reader) at(n *jsonc.Node, format string, a ...any) error {
	return jsonc.ErrorAt(r.file, r.data, n.Start, fmt.Sprintf(format, a...))
}

func (r reader) atKey(m jsonc.Member, format string, a ...any) error {
	return jsonc.ErrorAt(r.file, r.data, m.KeyStart, fmt.Sprintf(format, a...))
}

func (r reader) str(n *jsonc.Node, key string) (string, error) {
	if n.Kind != jsonc.String || n.Str == "" {
		return "", r.at(n, "%s must be a non-empty string", key)
	}
	return n.Str, nil
}

func (r reader) strs(n *jsonc.Node, key string) ([]string, error) {
	if n.Kind != jsonc.Array {
		return nil, r.at(n, "%s must be a list of strings", key)
	}
	out := make([]string, 0, len(n.Elems))
	for i, e := range n.Elems {
		s, err := r.str(e, fmt.Sprintf("%s[%d]", key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (r reader) num(n *jsonc.Node, key string) (float64, error) {
	if n.Kind != jsonc.Number {
		return 0, r.at(n, "%s must be a number", key)
	}
	f, err := strconv.ParseFloat(string(r.data[n.Start:n.End]), 64)
	if err != nil || f < 0 {
		return 0, r.at(n, "%s must be a number, not negative", key)
	}
	return f, nil
}

func (r reader) count(n *jsonc.Node, key string) (int, error) {
	f, err := r.num(n, key)
	if err != nil {
		return 0, err
	}
	if f != float64(int(f)) || f > 1<<30 {
		return 0, r.at(n, "%s must be a whole number", key)
	}
	return int(f), nil
}

func (r reader) duration(n *jsonc.Node, key string) (time.Duration, error) {
	s, err := r.str(n, key)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, r.at(n, "%s: %q is not a duration such as \"30m\" or \"24h\"", key, s)
	}
	return d, nil
}

func (r reader) oauth(n *jsonc.Node, key string) (*OAuthConfig, error) {
	if n.Kind != jsonc.Object {
		return nil, r.at(n, "%s must be an object", key)
	}
	o := &OAuthConfig{UserClaim: "sub"}
	var err error
	for _, m := range n.Members {
		k := key + "." + m.Key
		switch m.Key {
		case "issuer":
			o.Issuer, err = r.str(m.Val, k)
		case "jwks_uri":
			o.JWKSURI, err = r.str(m.Val, k)
		case "scopes":
			o.Scopes, err = r.strs(m.Val, k)
		case "user_claim":
			o.UserClaim, err = r.str(m.Val, k)
		default:
			return nil, r.atKey(m, "%s: unknown key (issuer, jwks_uri, scopes, user_claim)", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if o.Issuer == "" {
		return nil, r.at(n, "%s.issuer is required", key)
	}
	return o, nil
}

func (r reader) limits(n *jsonc.Node, key string, fc *FileConfig) error {
	if n.Kind != jsonc.Object {
		return r.at(n, "%s must be an object", key)
	}
	l := &fc.Limits
	var err error
	for _, m := range n.Members {
		k := key + "." + m.Key
		v := m.Val
		switch m.Key {
		case "sessions":
			l.Sessions, err = r.count(v, k)
		case "sessions_per_user":
			l.SessionsPerUser, err = r.count(v, k)
		case "processes_per_user":
			l.ProcessesPerUser, err = r.count(v, k)
		case "spawn_rate":
			l.SpawnRate, err = r.num(v, k)
		case "spawn_burst":
			l.SpawnBurst, err = r.count(v, k)
		case "idle":
			l.Idle, err = r.duration(v, k)
		case "respawns":
			l.Respawns, err = r.count(v, k)
			if err == nil && l.Respawns == 0 {
				l.Respawns = -1 // none, as written
			}
		case "budget_window":
			l.BudgetWindow, err = r.duration(v, k)
		case "warm":
			l.Warm, err = r.count(v, k)
		case "header_timeout":
			fc.HeaderTimeout, err = r.duration(v, k)
		case "read_timeout":
			fc.ReadTimeout, err = r.duration(v, k)
		case "max_body":
			var b int
			b, err = r.count(v, k)
			fc.MaxBody = int64(b)
		default:
			return r.atKey(m, "%s: unknown key (sessions, sessions_per_user, processes_per_user, spawn_rate, spawn_burst, idle, respawns, budget_window, warm, max_body, header_timeout, read_timeout)", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
