package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// notOnServer lists pack entries that are not tools of the recorded
// server, each with the reason it is in the pack anyway. A pack applies to
// its own server only, so there are none: an entry for another server's
// tool would apply to nothing.
var notOnServer = map[string]map[string]string{}

// readOnly lists the recorded tools a pack leaves to the fallback, each with
// the reason it sends and writes nothing.
var readOnly = map[string]map[string]string{
	"filesystem": {
		"read_file":                 "returns a file's text",
		"read_text_file":            "returns a file's text",
		"read_media_file":           "returns a file as base64",
		"read_multiple_files":       "returns several files' text",
		"list_directory":            "lists a directory",
		"list_directory_with_sizes": "lists a directory",
		"directory_tree":            "returns a JSON tree of a directory",
		"search_files":              "lists matching paths",
		"get_file_info":             "returns stat data",
		"list_allowed_directories":  "lists the server's roots",
	},
	"gmail": {
		"read_email":        "returns one message",
		"search_emails":     "returns matching messages",
		"list_email_labels": "returns the labels",
		"list_filters":      "returns the filters",
		"get_filter":        "returns one filter",
	},
	"slack": {
		"slack_list_channels":    "returns channels",
		"slack_get_users":        "returns users",
		"slack_get_user_profile": "returns one profile; user_id is not destination-shaped",
	},
	"github": {
		"search_repositories":       "GitHub search API",
		"get_file_contents":         "returns a file or directory listing",
		"list_commits":              "returns commits",
		"list_issues":               "returns issues",
		"search_code":               "GitHub search API",
		"search_issues":             "GitHub search API",
		"search_users":              "GitHub search API",
		"get_issue":                 "returns one issue",
		"get_pull_request":          "returns one pull request",
		"list_pull_requests":        "returns pull requests",
		"get_pull_request_files":    "returns a pull request's files",
		"get_pull_request_status":   "returns check status",
		"get_pull_request_comments": "returns review comments",
		"get_pull_request_reviews":  "returns reviews",
	},
	"gdrive": {
		"search": "Drive files.list with a query",
	},
}

// notSinks are destination-shaped parameters (top level or nested, as
// "param.field") that a pack deliberately does not treat as sinks.
var notSinks = map[string]map[string]string{
	"gmail": {
		"create_filter.criteria.to":                          "a match criterion (mail sent to this address), not where mail goes",
		"create_filter_from_template.parameters.senderEmail": "a match criterion (mail from this sender)",
	},
	"slack": {
		"slack_get_channel_history.channel_id": "a read: the channel is where messages come from",
		"slack_get_thread_replies.channel_id":  "a read: the channel is where messages come from",
	},
}

// ungated lists pack entries that look like writers but deliberately carry
// no gate (no sink, no write params, no budget), each with the reason.
var ungated = map[string]map[string]string{
	"gmail": {
		"modify_email":        "changes one message's labels; sends nothing",
		"create_label":        "creates a label; sends nothing",
		"get_or_create_label": "creates a label; sends nothing",
		"update_label":        "renames a label; sends nothing",
	},
	"github": {
		"update_pull_request_branch": "merges base into the pull request's branch in the same repository",
	},
}

// writerWords in a tool's name mark a tool that acts rather than reads.
var writerWords = setOf("send", "post", "reply", "forward", "draft", "create", "update", "write", "edit",
	"move", "delete", "remove", "push", "fork", "merge", "add", "modify", "share", "upload", "download",
	"save", "set", "invite", "copy", "rename", "react", "comment")

type recordedTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations *struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

func loadRecorded(t *testing.T, pack string) map[string]recordedTool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tools", pack+".json"))
	if err != nil {
		t.Fatalf("recorded tools for pack %s: %v (BOUNCER_RECORD_TOOLS=1 go test ./internal/policy -run TestRecordTools)", pack, err)
	}
	var list struct {
		Tools []recordedTool `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) == 0 {
		t.Fatalf("pack %s: no tools recorded", pack)
	}
	m := map[string]recordedTool{}
	for _, tl := range list.Tools {
		m[tl.Name] = tl
	}
	return m
}

// schemaParams returns a schema's property names, and nested ones as
// "param.field" (through arrays, objects and anyOf/oneOf alternatives).
func schemaParams(raw json.RawMessage) (top []string, nested []string) {
	var s map[string]any
	if json.Unmarshal(raw, &s) != nil {
		return nil, nil
	}
	props, _ := s["properties"].(map[string]any)
	for name, sub := range props {
		top = append(top, name)
		walkNested(name, sub, &nested, 0)
	}
	sort.Strings(top)
	sort.Strings(nested)
	return top, nested
}

func walkNested(prefix string, v any, out *[]string, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > 8 {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, sub := range props {
			*out = append(*out, prefix+"."+name)
			walkNested(prefix+"."+name, sub, out, depth+1)
		}
	}
	walkNested(prefix, m["items"], out, depth+1)
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := m[k].([]any)
		for _, a := range alts {
			walkNested(prefix, a, out, depth+1)
		}
	}
}

func lastSegment(p string) string { return p[strings.LastIndexByte(p, '.')+1:] }

var packNames = []string{"filesystem", "gdrive", "github", "gmail", "slack"}

func TestPacksListed(t *testing.T) {
	var got []string
	seen := map[string]string{}
	for _, pk := range Packs() {
		got = append(got, pk.Name)
		if len(pk.Tools) == 0 && len(readOnly[pk.Name]) == 0 {
			t.Errorf("pack %s names no tools, and its server has no read-only tool listed", pk.Name)
		}
		if pk.Package == "" || PackFor(pk.Package) != pk.Name {
			t.Errorf("pack %s names no server (%q)", pk.Name, pk.Package)
		}
		if !sort.StringsAreSorted(pk.Tools) {
			t.Errorf("pack %s: tools not sorted: %v", pk.Name, pk.Tools)
		}
		for _, tool := range pk.Tools {
			if other, dup := seen[tool]; dup {
				t.Errorf("tool %s is in packs %s and %s; the later would silently win", tool, other, pk.Name)
			}
			seen[tool] = pk.Name
		}
	}
	if !reflect.DeepEqual(got, packNames) {
		t.Fatalf("packs = %v, want %v", got, packNames)
	}
	pol, err := LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	for tool, pack := range seen {
		// A pack's entry is its server's alone: the policy for that
		// server has it, the policy for another server or for none does
		// not.
		for _, for_ := range append(packNames, "") {
			view, err := pol.ForServer(for_)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := view.Lookup(tool)
			switch {
			case for_ == pack && (!ok || e.Source != "pack "+pack || e.Fallback):
				t.Errorf("ForServer(%s).Lookup(%s) = %+v, %v; want the entry of pack %s", for_, tool, e, ok, pack)
			case for_ != pack && ok:
				t.Errorf("ForServer(%q).Lookup(%s) = the entry of %s; a pack applies to its own server only", for_, tool, e.Source)
			}
		}
	}
}

// Each pack's header names the npm package and version it was checked
// against, and that must be the version testdata/npm pins: bumping a server
// without re-recording and re-reading its tools fails here.
func TestPackHeadersMatchPinnedServers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "npm", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pj); err != nil {
		t.Fatal(err)
	}
	packs := map[string]Pack{}
	for _, pk := range Packs() {
		packs[pk.Name] = pk
	}
	for _, s := range packServers {
		want := "Checked against " + s.pkg + " " + pj.Dependencies[s.pkg]
		if pj.Dependencies[s.pkg] == "" {
			t.Errorf("%s is not pinned in testdata/npm/package.json", s.pkg)
			continue
		}
		if !strings.Contains(string(packs[s.pack].Data), want) {
			t.Errorf("pack %s: header does not say %q", s.pack, want)
		}
	}
}

// The packs against the recorded tools/list of their servers: nothing named
// that the server lacks (unless listed with a reason), every writing or
// sending tool named, every destination-shaped parameter a sink.
func TestPacksCoverRecordedServers(t *testing.T) {
	base, err := LoadSources()
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range Packs() {
		t.Run(pk.Name, func(t *testing.T) {
			pol, err := base.ForServer(pk.Name)
			if err != nil {
				t.Fatal(err)
			}
			rec := loadRecorded(t, pk.Name)
			inPack := map[string]bool{}
			for _, name := range pk.Tools {
				inPack[name] = true
				_, onServer := rec[name]
				reason, extra := notOnServer[pk.Name][name]
				switch {
				case !onServer && !extra:
					t.Errorf("pack names %s, which the server does not have (add it to notOnServer with a reason, or remove it)", name)
				case onServer && extra:
					t.Errorf("%s is listed in notOnServer (%s) but the server has it", name, reason)
				}
			}
			for name := range notOnServer[pk.Name] {
				if !inPack[name] {
					t.Errorf("notOnServer lists %s, which the pack does not name", name)
				}
			}
			for name := range readOnly[pk.Name] {
				if _, ok := rec[name]; !ok {
					t.Errorf("readOnly lists %s, which the server does not have", name)
				}
				if inPack[name] {
					t.Errorf("readOnly lists %s, which the pack names", name)
				}
			}
			for name, tl := range rec {
				top, nested := schemaParams(tl.InputSchema)
				if !inPack[name] {
					if _, ok := readOnly[pk.Name][name]; !ok {
						t.Errorf("server tool %s is neither in the pack nor in readOnly with a reason", name)
						continue
					}
					// A read the pack leaves to the fallback must come out
					// of it ungated, or the server's reads would be denied.
					if hasWord(name, writerWords) {
						t.Errorf("readOnly tool %s has a writer word in its name; name it in the pack", name)
					}
					if tl.Annotations != nil && tl.Annotations.ReadOnlyHint != nil && !*tl.Annotations.ReadOnlyHint {
						t.Errorf("readOnly tool %s is annotated readOnlyHint: false", name)
					}
					fb := pol.For(name, top)
					if fb.Exfiltrating || fb.MaxCalls != nil || len(fb.WriteParams) > 0 {
						t.Errorf("readOnly tool %s gets a gated fallback %+v; give it an entry", name, fb)
					}
					for _, n := range nested {
						if IsDestinationName(lastSegment(n)) {
							t.Errorf("readOnly tool %s has destination-shaped %s", name, n)
						}
					}
					continue
				}
				e, _ := pol.Lookup(name)
				params := map[string]bool{}
				for _, p := range top {
					params[p] = true
				}
				for _, p := range e.SinkParams {
					if !params[p] {
						t.Errorf("%s: sink_params names %s, which its schema does not have %v", name, p, top)
					}
				}
				for _, p := range e.WriteParams {
					if !params[p] {
						t.Errorf("%s: write_params names %s, which its schema does not have %v", name, p, top)
					}
				}
				for _, ca := range e.CountsAs {
					other, ok := pol.Lookup(ca.Tool)
					if !ok || other.MaxCalls == nil {
						t.Errorf("%s: counts_as %s, which the pack gives no max_calls", name, ca.Tool)
					}
					for _, w := range ca.When {
						if !params[w.Arg] && !nestedHas(nested, w.Arg) {
							t.Errorf("%s: counts_as %s reads %s, which its schema does not have", name, ca.Tool, w.Arg)
						}
					}
				}
				sinks := map[string]bool{}
				for _, p := range e.SinkParams {
					sinks[p] = true
				}
				for _, p := range top {
					writes := false
					for _, w := range e.WriteParams {
						writes = writes || w == p
					}
					if IsDestinationName(p) && !(e.Exfiltrating && sinks[p]) && !writes {
						if _, ok := notSinks[pk.Name][name+"."+p]; !ok {
							t.Errorf("%s: destination-shaped parameter %s is not a sink", name, p)
						}
					}
				}
				for _, n := range nested {
					if !IsDestinationName(lastSegment(n)) {
						continue
					}
					root := n[:strings.IndexByte(n, '.')]
					if _, ok := notSinks[pk.Name][name+"."+n]; ok {
						continue
					}
					if !(e.Exfiltrating && sinks[root]) {
						t.Errorf("%s: nested destination-shaped %s, and %s is not a sink", name, n, root)
					}
				}
				gated := e.Exfiltrating || len(e.WriteParams) > 0 || e.MaxCalls != nil || len(e.CountsAs) > 0
				_, exempt := ungated[pk.Name][name]
				if !gated && !exempt && (hasWord(name, writerWords) || hasWord(name, deleteVerbs)) {
					t.Errorf("%s looks like a writer but its entry gates nothing (add a gate, or list it in ungated with a reason)", name)
				}
				if hasWord(name, deleteVerbs) && e.MaxCalls == nil {
					t.Errorf("%s deletes but has no max_calls", name)
				}
			}
			for key := range notSinks[pk.Name] {
				if !strings.Contains(key, ".") {
					continue
				}
				if _, ok := rec[key[:strings.IndexByte(key, '.')]]; !ok {
					t.Errorf("notSinks lists %s for a tool the server does not have", key)
				}
			}
		})
	}
}

// nestedHas reports whether a dotted argument path is among the nested
// schema properties.
func nestedHas(nested []string, path string) bool {
	for _, n := range nested {
		if n == path {
			return true
		}
	}
	return false
}

// The record must be what the pinned servers list today. This starts each
// server, so it needs the npm packages (skipped without them unless CI).
func TestRecordedToolsCurrent(t *testing.T) {
	need.Long(t, "starts the npm servers")
	npmDir(t)
	for _, s := range packServers {
		t.Run(s.pack, func(t *testing.T) {
			live := listTools(t, s)
			liveJSON, _ := json.Marshal(map[string]any{"tools": live})
			recorded, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tools", s.pack+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if err := json.Unmarshal(liveJSON, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(recorded, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s lists other tools than testdata/tools/%s.json; re-record with BOUNCER_RECORD_TOOLS=1 go test ./internal/policy -run TestRecordTools and re-check the pack", s.pkg, s.pack)
			}
		})
	}
}
