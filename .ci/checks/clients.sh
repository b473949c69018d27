#!/usr/bin/env bash
# The real MCP clients against what `bouncer init` wrote, in a scratch HOME,
# offline: Claude Code, Gemini CLI and Codex CLI from npm, at the versions
# testdata/clients/package-lock.json pins.
#
# - Each lists every server init wrapped (stdio and remote, project and user
#   scope, Claude Code's local scope too) as connected: `claude mcp list`,
#   `gemini mcp list`.
# - Gemini CLI prints no configuration error: it refuses a server entry with
#   a key it doesn't know, so init keeps its originals in the state
#   directory.
# - Gemini CLI runs the BeforeAgent prompt hook init wrote: a scripted
#   `gemini -p` turn, from a loopback stand-in for the Gemini API, has the
#   wrapped helpdesk send to the address the prompt typed, and Bouncer
#   allows it as typed by the user; the same call after a prompt without
#   the address is denied.
# - Codex CLI reads the config.toml init spliced (`codex mcp get --json`):
#   each server launches bouncer run, with BOUNCER_HOME and its bearer
#   token's variable handed on (env_vars). It starts servers only in a
#   session, which needs its API, so the check stops there.
# - Claude Code's own file tools are refused on Bouncer's files by the
#   permissions.deny rules init wrote: Claude Code runs a scripted turn from
#   a loopback stand-in for its model API (no network, no account), and
#   its Write to the policy, the config, the state directory and its own
#   settings is refused while one to src/ goes through.
#
# The npm install is kept in testdata/clients/node_modules, like the
# tests' testdata/npm, and done again only when the lock file changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
step() { echo "-- clients: $* (${SECONDS}s)"; }
fail() { echo "clients: FAIL: $*" >&2; exit 1; }

command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are missing"
command -v python3 >/dev/null || fail "python3 is missing"
clients=$root/testdata/clients
if ! cmp -s "$clients/package-lock.json" "$clients/node_modules/.ci-clients-installed"; then
  step "npm ci in testdata/clients"
  (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in testdata/clients failed (it needs the npm registry)"
  cp "$clients/package-lock.json" "$clients/node_modules/.ci-clients-installed"
fi
claude=$clients/node_modules/.bin/claude
gemini=$clients/node_modules/.bin/gemini
codex=$clients/node_modules/.bin/codex
step "$("$claude" --version), Gemini CLI $("$gemini" --version), $("$codex" --version 2>/dev/null)"

work=$(mktemp -d /tmp/bouncer-clients.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE) GOPATH=$(go env GOPATH)
export GOCACHE GOMODCACHE GOPATH

step "building bouncer and the helpdesk server"
mkdir -p "$work/bin"
CGO_ENABLED=0 go build -o "$work/bin/bouncer" ./cmd/bouncer
go build -o "$work/bin/helpdesk" ./examples/demo/helpdesk
bouncer=$work/bin/bouncer

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() {
  for _ in $(seq 100); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

home=$work/home proj=$work/home/proj data=$work/data
mkdir -p "$proj/src" "$home/.gemini" "$proj/.gemini" "$home/.codex" "$data"
echo '[]' >"$data/tickets.json"
echo '[]' >"$data/customers.json"
hport=$(port)
"$work/bin/helpdesk" --data "$data" --root "$work" --http "127.0.0.1:$hport" 2>"$work/remote.err" &
pids+=($!)
listening "$hport" || fail "the remote helpdesk did not listen"

desk="\"command\": \"$work/bin/helpdesk\", \"args\": [\"--data\", \"$data\", \"--root\", \"$work\"]"
cat >"$proj/.mcp.json" <<EOF
{
  "mcpServers": {
    "desk": {$desk},
    "remote-desk": {"type": "http", "url": "http://127.0.0.1:$hport/mcp"}
  }
}
EOF
# Claude Code's user file: a user-scope server, a local-scope one of this
# project, and the project's servers approved, as \`claude\` asks the user to.
cat >"$home/.claude.json" <<EOF
{
  "mcpServers": {"user-desk": {$desk}},
  "projects": {"$proj": {
    "mcpServers": {"local-desk": {$desk}},
    "enabledMcpjsonServers": ["desk", "remote-desk"],
    "hasTrustDialogAccepted": true
  }}
}
EOF
cat >"$proj/.gemini/settings.json" <<EOF
{
  // Gemini CLI's settings take comments.
  "mcpServers": {
    "gdesk": {$desk, "trust": false, "timeout": 30000},
    "gremote": {"httpUrl": "http://127.0.0.1:$hport/mcp"}
  }
}
EOF
cat >"$home/.gemini/settings.json" <<EOF
{"mcpServers": {"user-gdesk": {$desk}}, "security": {"auth": {"selectedType": "gemini-api-key"}}}
EOF
cat >"$home/.codex/config.toml" <<EOF
# Codex CLI's settings: comments, and keys of its own.
model = "gpt-5-codex"

[mcp_servers.cdesk]
command = "$work/bin/helpdesk"
args = ["--data", "$data", "--root", "$work"]
startup_timeout_sec = 20

[mcp_servers.cremote]
url = "http://127.0.0.1:$hport/mcp"
bearer_token_env_var = "CDESK_TOKEN"
EOF
# Gemini CLI starts no server of a folder the user has not trusted.
echo "{\"$proj\": \"TRUST_FOLDER\"}" >"$home/.gemini/trustedFolders.json"

export HOME=$home XDG_CONFIG_HOME=$home/.config
unset BOUNCER_HOME
cd "$proj"

step "bouncer init --yes"
"$bouncer" init --yes >"$work/init.out" 2>&1 || { cat "$work/init.out"; fail "init failed"; }
grep -q 'Every server init went through is wrapped\.' "$work/init.out" || { cat "$work/init.out"; fail "init left a server unwrapped"; }
for f in .gemini/settings.json "$home/.gemini/settings.json"; do
  ! grep -q x-bouncer-upstream "$f" || fail "$f holds x-bouncer-upstream, which Gemini CLI refuses"
done

step "claude mcp list"
"$claude" mcp list </dev/null >"$work/claude.out" 2>&1 || { cat "$work/claude.out"; fail "claude mcp list failed"; }
sed 's/^/     /' "$work/claude.out"
for s in desk remote-desk user-desk local-desk; do
  grep -q "^$s: $bouncer run .* - ✔ Connected\$" "$work/claude.out" || fail "Claude Code does not list $s, wrapped, as connected"
done

step "gemini mcp list"
"$gemini" mcp list </dev/null >"$work/gemini.out" 2>&1 || { cat "$work/gemini.out"; fail "gemini mcp list failed"; }
sed 's/^/     /' "$work/gemini.out"
for s in gdesk gremote user-gdesk; do
  grep -q "^✓ $s: $bouncer run .* - Connected\$" "$work/gemini.out" || fail "Gemini CLI does not list $s, wrapped, as connected"
done
if grep -qi 'invalid configuration\|unrecognized key\|fix the configuration' "$work/gemini.out"; then
  fail "Gemini CLI reports a configuration error"
fi

step "Gemini CLI's prompt hook, from a loopback stand-in for its API"
grep -q '"BeforeAgent": \[{"hooks": \[{"type": "command", "command": ".*bouncer hook prompt"}\]}\]' .gemini/settings.json \
  || { cat .gemini/settings.json; fail "init did not add Gemini CLI's BeforeAgent hook"; }
# The stand-in answers the main model's first request of a turn with a call
# of FAKE_CALL, then (and every other request) with text.
cat >"$work/fakegemini.py" <<'EOF'
import http.server, json, os, sys
CALL = json.loads(os.environ["FAKE_CALL"])
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, body, ctype):
        b = body.encode()
        self.send_response(200); self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if ":countTokens" in self.path:
            return self.send(json.dumps({"totalTokens": 1}), "application/json")
        done = any("functionResponse" in p for c in body.get("contents", []) for p in c.get("parts", []))
        names = [d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]
        part = {"text": "done"}
        if ":streamGenerateContent" in self.path and not done and CALL[0] in names:
            part = {"functionCall": {"name": CALL[0], "args": CALL[1]}}
        resp = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}
        if ":streamGenerateContent" in self.path:
            return self.send("data: " + json.dumps(resp) + "\r\n\r\n", "text/event-stream")
        self.send(json.dumps(resp), "application/json")
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
gport=$(port)
FAKE_CALL='["mcp_gdesk_send_email", {"to": "bob@corp.example", "subject": "hi", "body": "hello"}]' python3 "$work/fakegemini.py" "$gport" &
pids+=($!)
listening "$gport" || fail "the Gemini API stand-in did not listen"
gturn() {
  GEMINI_API_KEY=not-a-key GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$gport \
    "$gemini" -p "$1" --yolo -m gemini-2.5-pro -o json </dev/null >"$work/gturn.json" 2>"$work/gturn.err" \
    || { cat "$work/gturn.err"; fail "the scripted Gemini CLI turn failed"; }
  if grep -qi 'invalid hook\|hook.*error\|fix the configuration' "$work/gturn.err"; then cat "$work/gturn.err"; fail "Gemini CLI reports a problem with the hook"; fi
  tail -n 1 "$home/.bouncer/audit.jsonl"
}
last=$(gturn "mail bob@corp.example a hello")
echo "     typed: $last" | cut -c1-240
grep -q '"tool":"send_email".*"verdict":"allow","reason":"destination to=.bob@corp.example. was typed by the user"' <<<"$last" \
  || fail "the address the prompt typed, through Gemini CLI's BeforeAgent hook, was not allowed as typed"
last=$(gturn "say hello to the team")
echo "     not typed: $last" | cut -c1-240
grep -q '"tool":"send_email".*"verdict":"deny","reason":"destination to=.bob@corp.example. is not a vouched recipient' <<<"$last" \
  || fail "a send to an address no prompt typed was not denied: the allow above proves nothing"

step "codex mcp get"
for s in cdesk cremote; do
  "$codex" mcp get "$s" --json </dev/null >"$work/codex-$s.json" 2>"$work/codex.err" || { cat "$work/codex.err"; fail "codex mcp get $s failed"; }
  python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["transport"]
assert t["type"] == "stdio" and t["command"] == sys.argv[2], t
assert t["args"][:2] == ["run", "--config"] and t["args"][3:5] == ["--server", sys.argv[3]], t
assert "BOUNCER_HOME" in t["env_vars"], t
assert sys.argv[3] != "cremote" or "CDESK_TOKEN" in t["env_vars"], t
' "$work/codex-$s.json" "$bouncer" "$s" || { cat "$work/codex-$s.json"; fail "Codex CLI does not read $s as init wrapped it"; }
done
echo "     cdesk, cremote: $bouncer run --config ~/.codex/config.toml --server NAME, env_vars handed on"

step "Claude Code's own Write tool on Bouncer's files, from a loopback stand-in for its API"
# The stand-in answers each request of the turn with the next tool call of
# FAKE_STEPS, then with text; it logs every request, tool results included.
cat >"$work/fakeapi.py" <<'EOF'
import http.server, json, os, sys
STEPS = json.loads(os.environ["FAKE_STEPS"])
LOG = os.environ["FAKE_LOG"]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, d):
        b = json.dumps(d).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def do_GET(self): self.reply({})
    def do_HEAD(self): self.send_response(200); self.end_headers()
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with open(LOG, "a") as f: f.write(json.dumps(body) + "\n")
        if "count_tokens" in self.path: return self.reply({"input_tokens": 1})
        done = sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                   for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result")
        if done >= len(STEPS) or body.get("max_tokens", 0) < 100:
            block, stop = {"type": "text", "text": "done"}, "end_turn"
        else:
            block, stop = {"type": "tool_use", "id": "toolu_%02d" % done, "name": STEPS[done][0], "input": STEPS[done][1]}, "tool_use"
        msg = {"id": "msg_%d" % done, "type": "message", "role": "assistant", "model": body.get("model"),
               "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            msg.update(content=[block], stop_reason=stop); return self.reply(msg)
        self.send_response(200); self.send_header("content-type", "text/event-stream"); self.end_headers()
        def ev(t, d): self.wfile.write(("event: %s\ndata: %s\n\n" % (t, json.dumps(d))).encode())
        ev("message_start", {"type": "message_start", "message": msg})
        if block["type"] == "text":
            ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": dict(block, input={})})
            ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        ev("content_block_stop", {"type": "content_block_stop", "index": 0})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}})
        ev("message_stop", {"type": "message_stop"})
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
write() { printf '["Write", {"file_path": "%s", "content": "written by the agent"}]' "$1"; }
targets=("$proj/bouncer.yaml" "$proj/.mcp.json" "$home/.bouncer/policy.yaml" "$proj/.claude/settings.json" "$home/.claude.json" "$proj/.gemini/settings.json")
# Two controls: a write into the project, and one elsewhere in HOME (which
# --add-dir opens), go through; else the refusals prove nothing.
controls=("$proj/src/ok.txt" "$home/notes.txt")
steps=
for t in "${targets[@]}" "${controls[@]}"; do steps+="${steps:+, }$(write "$t")"; done
aport=$(port)
FAKE_STEPS="[$steps]" FAKE_LOG=$work/api.jsonl python3 "$work/fakeapi.py" "$aport" &
pids+=($!)
listening "$aport" || fail "the API stand-in did not listen"
cp -r "$home" "$work/home.before"
ANTHROPIC_BASE_URL=http://127.0.0.1:$aport ANTHROPIC_API_KEY=sk-ant-not-a-key \
  "$claude" -p "write the files" --permission-mode acceptEdits --add-dir "$home" --output-format json \
  </dev/null >"$work/turn.json" 2>"$work/turn.err" || { cat "$work/turn.err"; fail "the scripted Claude Code turn failed"; }
python3 - "$work/api.jsonl" >"$work/results.txt" <<'EOF'
import json, sys
last = [json.loads(l) for l in open(sys.argv[1])][-1]
for m in last.get("messages", []):
    for c in (m["content"] if isinstance(m.get("content"), list) else []):
        if isinstance(c, dict) and c.get("type") == "tool_result":
            print(json.dumps(c.get("content")))
EOF
sed 's/^/     /' "$work/results.txt"
[ "$(wc -l <"$work/results.txt")" = $((${#targets[@]} + ${#controls[@]})) ] || fail "the turn did not make every write"
# (Here-strings, not pipes: grep -q may stop reading early, and pipefail
# would then turn a match into a failure of the pipe.)
if grep -qv 'denied by your permission settings' <<<"$(head -n "${#targets[@]}" "$work/results.txt")"; then
  fail "a write to one of Bouncer's files was not refused by the rules init wrote"
fi
if grep -qv 'created successfully' <<<"$(tail -n "${#controls[@]}" "$work/results.txt")"; then
  fail "a control write did not go through: the refusals prove nothing"
fi
for t in "${targets[@]}"; do
  before=$work/home.before/${t#"$home"/}
  if [ -e "$t" ] || [ -e "$before" ]; then
    cmp -s "$t" "$before" || fail "$t changed"
  fi
done
for t in "${controls[@]}"; do grep -q 'written by the agent' "$t" || fail "$t was not written"; done
step "ok"
