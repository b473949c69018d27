#!/usr/bin/env bash
# Runs the shell commands README.md shows, so they cannot drift from what
# bouncer does.
#
# Every line of every ```sh block (and every alternative given in a
# "# or: COMMAND" comment) must be known here: either run, in a scratch
# directory with HOME pointing inside it, or skipped with the reason why it
# cannot run offline. A command this script does not know fails the check,
# with the line it is on: whoever changes the README decides which it is.
# Runs take the README's own words as typed; where the README expects an
# answer or a result (a question answered y, "OK bouncer.yaml (key
# team.pub)", init --undo restoring the file), that is checked too.
#
# Fixtures: `cd your-project` enters a project whose .mcp.json has one
# stdio server; the Hardening block runs beside a bouncer.yaml that is the
# README's own example policy (its ```yaml block), which must load.
#
# Needs go, node and openssl (installed from apt when missing); takes about
# half a minute, most of it the demo.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
# The commands run with HOME in the scratch directory; Go keeps its caches
# where they are.
GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE) GOPATH=$(go env GOPATH)
export GOCACHE GOMODCACHE GOPATH
step() { echo "-- readme: $* (${SECONDS}s)"; }
fail() { echo "readme: FAIL: $*" >&2; exit 1; }

if ! command -v openssl >/dev/null; then
  step "installing openssl"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
fi

work=$(mktemp -d /tmp/bouncer-readme.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/your-project" "$work/policy"

# The project `cd your-project` enters: one stdio server to wrap.
cat >"$work/your-project/.mcp.json" <<'EOF'
{
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]}
  }
}
EOF
cp "$work/your-project/.mcp.json" "$work/mcp.json.orig"
# The README's example policy, beside the signing commands.
awk '/^```yaml/ {f = 1; next} /^```/ {if (f) exit} f' README.md >"$work/policy/bouncer.yaml"
[ -s "$work/policy/bouncer.yaml" ] || fail "README.md has no \`\`\`yaml example policy"

# commands FILE: "LINE<TAB>COMMAND" for every command of its ```sh blocks,
# a block's start marked by a line "LINE<TAB>#block"; continued lines
# (ending in \) are joined, trailing comments dropped, and the command of a
# "# or: COMMAND" comment listed after its line's own.
commands() {
  awk '
    /^```sh[ \t]*$/ { inb = 1; printf "%d\t#block\n", NR; next }
    /^```/ { inb = 0; next }
    !inb { next }
    {
      line = $0
      if (cont != "") { line = cont " " line; n = cn } else { n = NR }
      if (line ~ /\\$/) { cont = substr(line, 1, length(line) - 1); cn = n; next }
      cont = ""
      alt = ""
      if (match(line, /#[ \t]*or:[ \t]*/)) { alt = substr(line, RSTART + RLENGTH) }
      sub(/(^|[ \t]+)#.*$/, "", line)
      sub(/[ \t]+$/, "", line); sub(/^[ \t]+/, "", line)
      sub(/[ \t]+$/, "", alt)
      if (line != "") printf "%d\t%s\n", n, line
      if (alt != "") printf "%d\t%s\n", n, alt
    }' "$1"
}

# Each block becomes one script, run with bash -euo pipefail from its start
# directory, so a `cd` carries on to the next line as it does for a reader.
# What each known command runs as (often exactly itself), and what is
# checked after it.
script=
block=0
flush() {
  [ -n "$script" ] || return 0
  local dir=$1
  printf '%s\n' "$script" >"$work/block$block.sh"
  step "block $block (from $dir)"
  (cd "$dir" && HOME="$work/home" PATH="$root/bin:$PATH" bash -euo pipefail "$work/block$block.sh") ||
    fail "README.md block $block failed (script: the lines above)"
  script=
}
add() { script+="$1"$'\n'; }
startdir=$root
ran=0 skipped=0
while IFS=$'\t' read -r n cmd; do
  if [ "$cmd" = "#block" ]; then
    flush "$startdir"
    block=$((block + 1))
    startdir=$root
    continue
  fi
  shown=$(printf %q "$cmd")
  run() { add "printf '   \$ %s\\n' $shown"; add "$1"; ran=$((ran + 1)); }
  skip() { add "printf '   skipped: %s  (%s)\\n' $shown $(printf %q "$1")"; skipped=$((skipped + 1)); }
  case $cmd in
    'go run ./examples/demo')
      run "$cmd >'$work/demo.out' 2>&1 || { cat '$work/demo.out'; exit 1; }"
      add "tail -n 7 '$work/demo.out' | sed 's/^/     /'" ;;
    '.ci/test')
      skip ".ci/run runs the tests exactly so, before the checks" ;;
    'CGO_ENABLED=0 go install ./cmd/bouncer')
      run "$cmd"
      add "[ -x \"\$(go env GOPATH)/bin/bouncer\" ] || { echo 'go install left no bouncer in GOPATH/bin'; exit 1; }" ;;
    'CGO_ENABLED=0 go build -o bin/bouncer ./cmd/bouncer')
      run "$cmd"
      add "! ldd bin/bouncer >/dev/null 2>&1 || { echo 'bin/bouncer is not static'; exit 1; }"
      add "bin/bouncer version" ;;
    'nix run . -- version')
      skip "Nix fetches nixpkgs, which this machine can't reach; nix.sh evaluates the flake and its app offline" ;;
    'docker build -f container/source/Dockerfile -t bouncer .')
      skip "there is no Docker engine here; images.sh builds the same Dockerfile with buildah and checks the image" ;;
    'cd your-project')
      startdir=$work
      run "$cmd" ;;
    'bouncer init')
      # It asks before each file it changes: the reader answers y.
      run "printf 'y\\ny\\ny\\ny\\n' | $cmd >'$work/init.out' 2>&1 || { cat '$work/init.out'; exit 1; }"
      add "grep -q x-bouncer-upstream .mcp.json || { cat '$work/init.out' .mcp.json; echo 'bouncer init did not wrap .mcp.json'; exit 1; }"
      add "echo '     wrapped .mcp.json'" ;;
    'bouncer status')
      run "$cmd >'$work/status.out' 2>&1 || { cat '$work/status.out'; exit 1; }"
      add "grep -q ': wrapped, launches ' '$work/status.out' || { cat '$work/status.out'; echo 'bouncer status does not show the wrapped server'; exit 1; }" ;;
    'bouncer init --undo')
      run "printf 'y\\ny\\ny\\ny\\n' | $cmd >'$work/undo.out' 2>&1 || { cat '$work/undo.out'; exit 1; }"
      add "cmp -s .mcp.json '$work/mcp.json.orig' || { cat '$work/undo.out'; diff '$work/mcp.json.orig' .mcp.json; echo 'init --undo did not put .mcp.json back'; exit 1; }"
      add "echo '     .mcp.json is byte for byte what it was'" ;;
    'openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out team.pem && openssl pkey -in team.pem -pubout -out team.pub')
      startdir=$work/policy
      add "bouncer check --policy bouncer.yaml </dev/null || { echo \"the README's example policy does not load\"; exit 1; }"
      run "$cmd" ;;
    'bouncer sign --key team.pem bouncer.yaml')
      run "$cmd"
      add "[ -s bouncer.yaml.sigstore.json ] || { echo 'no bouncer.yaml.sigstore.json'; exit 1; }" ;;
    "echo 'keys: [team.pub]' > trust.yaml")
      run "$cmd" ;;
    'bouncer verify --trust trust.yaml bouncer.yaml')
      run "out=\$($cmd); echo \"     \$out\"; [ \"\$out\" = 'OK bouncer.yaml (key team.pub)' ] || { echo 'not what the README says it prints'; exit 1; }" ;;
    'bouncer doctor')
      run "$cmd >'$work/doctor.out' || { cat '$work/doctor.out'; exit 1; }" ;;
    *)
      fail "README.md:$n: \`$cmd\` is a shell command this check does not know; add it to .ci/checks/readme.sh, to run or to skip with the reason" ;;
  esac
done < <(commands README.md)
flush "$startdir"
step "ok: $ran commands ran, $skipped skipped"
