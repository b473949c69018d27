package mcpconfig

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// toAny turns a parsed tree into the values encoding/json would decode
// (numbers as json.Number, the last of duplicate keys winning).
func toAny(n *node, data []byte) any {
	switch n.kind {
	case '{':
		m := map[string]any{}
		for _, kv := range n.members {
			m[kv.key] = toAny(kv.val, data)
		}
		return m
	case '[':
		a := []any{}
		for _, e := range n.elems {
			a = append(a, toAny(e, data))
		}
		return a
	case '"':
		return n.str
	case '0':
		return json.Number(data[n.start:n.end])
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}

func stdDecode(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if v == nil {
		return nil
	}
	return v
}

// stripJSONC is a second, independent reading of JSONC: it blanks comments
// and trailing commas, giving strict JSON with the same value. It returns
// nil for an unclosed block comment.
func stripJSONC(data []byte) []byte {
	out := append([]byte(nil), data...)
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return nil
			}
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i += 2 + end + 1
		}
	}
	// Trailing commas: a comma whose next non-space byte closes.
	for i := 0; i < len(out); i++ {
		if out[i] == '"' {
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			continue
		}
		if out[i] == ',' {
			j := i + 1
			for j < len(out) && isSpace(out[j]) {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// FuzzJSONC checks the reader against encoding/json: in strict mode it
// accepts exactly what json.Valid accepts, with the same values; in JSONC
// mode it accepts all of that too, and whatever else it accepts is, with
// comments and trailing commas blanked, JSON of the same value.
func FuzzJSONC(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-0.5e+10`, `{"a": [1, 2, {"b": null}]}`, `{"a":1,"a":2}`,
		"{\"a\": 1, // c\n}", "[1, /* two */ 2,]", `"\ud800"`, "\"\xff\"", `"\u00e9\n"`,
		"// only a comment\n{}", "{/**/}", `[01]`, `1.`, `{"a" 1}`, `[1,,2]`, "\xef\xbb\xbf{}",
		`{"k": "v"} x`, `tru`, `"a\qb"`, "\"a\x01\"", `[1e]`, `{"":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		strict, _, err := parseJSONC(data, false)
		if (err == nil) != valid {
			t.Fatalf("strict mode accepts=%v, encoding/json accepts=%v: %q (%v)", err == nil, valid, data, err)
		}
		if valid && !reflect.DeepEqual(toAny(strict, data), stdDecode(t, data)) {
			t.Fatalf("strict mode reads another value: %q", data)
		}
		loose, off, err := parseJSONC(data, true)
		if valid && err != nil {
			t.Fatalf("JSONC mode refuses JSON: %q: %v at %d", data, err, off)
		}
		if err != nil {
			if off < 0 || off > len(data) {
				t.Fatalf("error offset %d outside the input", off)
			}
			return
		}
		plain := stripJSONC(data)
		if !json.Valid(plain) {
			t.Fatalf("JSONC mode accepts what is not JSON with comments: %q", data)
		}
		if !reflect.DeepEqual(toAny(loose, data), stdDecode(t, plain)) {
			t.Fatalf("JSONC mode reads another value: %q", data)
		}
	})
}

func TestJSONCDepth(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		doc := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		_, _, err := parseJSONC(doc, false)
		if (err == nil) != json.Valid(doc) {
			t.Errorf("depth %d: accepts=%v, encoding/json accepts=%v", depth, err == nil, json.Valid(doc))
		}
	}
}

const vscodeComments = `// Team servers. Ask #infra before adding one.
{
	"servers": {
		/* the GitHub server runs in Docker */
		"github": {
			"type": "stdio",
			"command": "docker", // pinned below
			"args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server",],
			"env": {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"},
		},
		"remote": {"type": "http", "url": "https://mcp.example/mcp"}, // remote
	},
	"inputs": [],
}
`

func TestWrapKeepsComments(t *testing.T) {
	c, err := Parse("/p/.vscode/mcp.json", []byte(vscodeComments))
	if err != nil {
		t.Fatal(err)
	}
	out, ch, err := c.Wrap(WrapOptions{ConfigArg: "${workspaceFolder}/.vscode/mcp.json", Workspace: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 2 || ch[0].Status != Wrapped || ch[1].Status != Skipped || !ch[1].Remote {
		t.Fatalf("changes %v", ch)
	}
	s := string(out)
	start := strings.Index(vscodeComments, `"github": {`) + len(`"github": `)
	end := strings.Index(vscodeComments, "\n\t\t},") + len("\n\t\t}")
	if !strings.HasPrefix(s, vscodeComments[:start]) || !strings.HasSuffix(s, vscodeComments[end:]) {
		t.Fatalf("bytes outside the entry changed:\n%s", s)
	}
	// The original entry is kept whole, comments and trailing commas
	// included, one tab deeper.
	orig := vscodeComments[start:end]
	if !strings.Contains(s, `"x-bouncer-upstream": `+reindent(orig, "\t")) {
		t.Fatalf("upstream is not the original entry:\n%s", s)
	}
	if !strings.Contains(s, "\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"bouncer\",\n\t\t\t\"args\": [\"run\", \"--config\", \"${workspaceFolder}/.vscode/mcp.json\", \"--server\", \"github\"],\n") {
		t.Errorf("wrapper:\n%s", s)
	}
	c2, err := Parse("/p/.vscode/mcp.json", out)
	if err != nil {
		t.Fatal(err)
	}
	undone, _, err := c2.Undo("", nil)
	if err != nil || string(undone) != vscodeComments {
		t.Errorf("undo is not the original (%v):\n%s", err, undone)
	}
}

const claudeJSON = `{
  "numStartups": 3,
  "mcpServers": {
    "user-fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]}
  },
  "projects": {
    "/home/me/proj": {
      "allowedTools": [],
      "mcpServers": {
        "fs": {
          "type": "stdio",
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/proj"],
          "env": {}
        }
      }
    },
    "/home/me/other": {
      "mcpServers": {
        "secret": {"command": "other-server"}
      }
    }
  }
}
`

func TestClaudeProjects(t *testing.T) {
	c, err := Parse("/home/me/.claude.json", []byte(claudeJSON))
	if err != nil {
		t.Fatal(err)
	}
	if c.Client != ClaudeCode {
		t.Errorf("client %q", c.Client)
	}
	out, ch, err := c.Wrap(WrapOptions{Project: "/home/me/proj", ConfigArg: "/home/me/.claude.json"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ch {
		got = append(got, x.Block+"."+x.String())
	}
	want := []string{"mcpServers.user-fs: wrapped", "projects[/home/me/proj].mcpServers.fs: wrapped"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if !strings.Contains(string(out), `"args": ["run", "--config", "/home/me/.claude.json", "--project", "/home/me/proj", "--server", "fs"]`) {
		t.Errorf("project entry does not name its project:\n%s", out)
	}
	if !strings.Contains(string(out), `"secret": {"command": "other-server"}`) {
		t.Error("another project's server was touched")
	}
	c2, _ := Parse("/home/me/.claude.json", out)
	servers, err := c2.Servers("/home/me/proj")
	if err != nil || len(servers) != 2 || !servers[1].Wrapped || servers[1].Launch.Args[2] != "/home/me/proj" {
		t.Errorf("servers %+v, %v", servers, err)
	}
	undone, _, err := c2.Undo("/home/me/proj", nil)
	if err != nil || string(undone) != claudeJSON {
		t.Errorf("undo (%v):\n%s", err, undone)
	}
}

func TestRemoteSwitch(t *testing.T) {
	text := "{\n  \"mcpServers\": {\n    \"r\": {\n      \"type\": \"http\",\n      \"url\": \"https://mcp.example/mcp\",\n      \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}\n    }\n  }\n}\n"
	c, err := Parse("/p/.mcp.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, ch, _ := c.Wrap(WrapOptions{ConfigArg: ".mcp.json"})
	if string(out) != text || ch[0].Reason != RemoteNotYet {
		t.Fatalf("switch off: %v\n%s", ch, out)
	}
	out, ch, _ = c.Wrap(WrapOptions{ConfigArg: ".mcp.json", Remote: true})
	if ch[0].Status != Wrapped {
		t.Fatalf("switch on: %v", ch)
	}
	want := "{\n  \"mcpServers\": {\n    \"r\": {\n      \"type\": \"stdio\",\n      \"command\": \"bouncer\",\n      \"args\": [\"run\", \"--config\", \".mcp.json\", \"--server\", \"r\"],\n      \"x-bouncer-upstream\": {\n        \"type\": \"http\",\n        \"url\": \"https://mcp.example/mcp\",\n        \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}\n      }\n    }\n  }\n}\n"
	if string(out) != want {
		t.Fatalf("wrapped:\n%s", out)
	}
	c2, _ := Parse("/p/.mcp.json", out)
	undone, ch, _ := c2.Undo("", nil)
	if string(undone) != text || !ch[0].Remote {
		t.Errorf("undo:\n%s", undone)
	}
}

// get reads a repeated key as the clients do (JSON.parse and VS Code's
// jsonc-parser keep the last; so does encoding/json, checked here), for the
// readers off the path that checkUnique guards, such as a hook file.
func TestGetReadsTheLastOfARepeatedKey(t *testing.T) {
	data := []byte(`{"hooks": {"a": "first"}, "x": null, "hooks": {"b": "last"}}`)
	root, _, err := parseJSONC(data, true)
	if err != nil {
		t.Fatal(err)
	}
	var std map[string]any
	if err := json.Unmarshal(data, &std); err != nil {
		t.Fatal(err)
	}
	got, ok := root.get("hooks")
	if !ok || !reflect.DeepEqual(toAny(got, data), std["hooks"]) {
		t.Errorf("get(hooks) = %s, the clients read %v", data[got.start:got.end], std["hooks"])
	}
}
