#!/usr/bin/env bash
# Builds the container images of container/ without a container engine and
# runs them, on a machine that can pull no base image:
#   1. fake bases made locally (a distroless-like static base, Node and
#      Python runtimes copied from this machine, and a golang-like build base
#      with this machine's Go toolchain and busybox as its shell), pushed to
#      a local registry (crane registry serve);
#   2. container/Dockerfile (the release binary), container/source/Dockerfile
#      (built from this clone by `go build` inside the build, as a user
#      without a published image does), container/node/Dockerfile (on the
#      from-source image) and container/python/Dockerfile (on the release
#      one) built with buildah (vfs storage, chroot isolation) against those
#      bases and pushed to the local registry. The wrappers take the bouncer
#      image by digest, as BOUNCER_IMAGE, which has no default: a wrapper
#      built without it fails, no Dockerfile here names a :latest image, and
#      each wrapper's label and binary are those of the digest it was given;
#   3. for each image: the config says user 65532:65532 and BOUNCER_HOME, the
#      filesystem holds no shell, and the entrypoint, run from the exported
#      filesystem with chroot --userspec=65532:65532, answers initialize,
#      tools/list and a tools/call through bouncer, whose audit line lands
#      in the image's state directory; the release image also runs as the
#      gateway (bouncer listen, container/test/listen.mjs) in front of its
#      own MCP server, answers a session's call and drains on SIGTERM. The
#      wrappers run with their template policy's sandbox: key under
#      --sandbox strict: bouncer says the server is confined, and the
#      Python server's probe tool finds it can write /data and can neither
#      read nor write bouncer's state.
# Installs what it needs (buildah and busybox-static from apt, crane with go
# install) and can be
# run again: all its state lives in a temporary directory it removes.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$PATH:$(go env GOPATH)/bin"

CRANE_VERSION=v0.22.1
step() { echo "-- images: $*"; }
fail() { echo "images: FAIL: $*" >&2; exit 1; }

# The wrappers' bouncer image is the build's to pin: an ARG with no default
# (a default would be a tag that moves), and no Dockerfile here may name
# a :latest image. The builds below pass it by digest and check the result.
step "checking that the wrappers' bouncer image is pinned by the build"
for f in container/node/Dockerfile container/python/Dockerfile; do
  if ! grep -qx 'ARG BOUNCER_IMAGE' "$f" || grep -qE '^ARG BOUNCER_IMAGE=' "$f"; then
    fail "$f: want a bare 'ARG BOUNCER_IMAGE' (no default): the build passes a version or digest"
  fi
done
if grep -rnE '^[^#]*:latest([^A-Za-z0-9_.-]|$)' --include=Dockerfile container; then
  fail "a Dockerfile under container/ names a :latest image (above); pin a version or digest"
fi

busybox=/bin/busybox # from busybox-static: the golang-like base's /bin/sh
if ! command -v buildah >/dev/null || ! "$busybox" --list 2>/dev/null | grep -qx sh || ldd "$busybox" >/dev/null 2>&1; then
  step "installing buildah and busybox-static"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah busybox-static >/dev/null
fi
if ! command -v crane >/dev/null; then
  step "installing crane $CRANE_VERSION"
  go install "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
fi

work=$(mktemp -d /tmp/bouncer-images.XXXXXX)
reg_pid=
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do [ -z "$m" ] || umount -l "$m" 2>/dev/null || true; done
  if [ -n "$reg_pid" ]; then kill "$reg_pid" 2>/dev/null || true; wait "$reg_pid" 2>/dev/null || true; fi
  # vfs layers are plain directories; buildah's own rm keeps its lock files sane.
  buildah "${BUILDAH_STORE[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
BUILDAH_STORE=(--storage-driver vfs --root "$work/storage" --runroot "$work/run")
BUD_FLAGS=()

# A free port for the registry: ask the kernel, then hand it over.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
reg=127.0.0.1:$port
mkdir -p "$work/registry"
crane registry serve --address "$reg" --disk "$work/registry" >"$work/registry.log" 2>&1 &
reg_pid=$!
for _ in $(seq 50); do crane catalog --insecure "$reg" >/dev/null 2>&1 && break; sleep 0.1; done
crane catalog --insecure "$reg" >/dev/null

# --- fake bases --------------------------------------------------------------

# base_rootfs DIR: what distroless static-debian12:nonroot offers that the
# images rely on: the nonroot user (65532) with a private home, /tmp, and no
# shell.
base_rootfs() {
  local d=$1
  mkdir -p "$d/etc" "$d/tmp" "$d/home/nonroot" "$d/var/lib" "$d/usr/local/bin"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$d/etc/group"
  chmod 1777 "$d/tmp"
  chown 65532:65532 "$d/home/nonroot"
  chmod 0700 "$d/home/nonroot"
}

# copy_prog DIR SRC DEST: a dynamically linked program and the libraries it
# loads, at the paths the loader will look for them.
copy_prog() {
  local d=$1 src=$2 dest=$3
  mkdir -p "$d$(dirname "$dest")"
  cp -L "$src" "$d$dest"
  ldd "$src" | awk '/=>/ {print $3} /^[ \t]*\/.*ld-linux/ {print $1}' | while read -r lib; do
    [ -e "$lib" ] || continue
    mkdir -p "$d$(dirname "$lib")"
    cp -L "$lib" "$d$lib"
  done
}

# push_base DIR REF: the directory as a one-layer image running as nonroot.
push_base() {
  local d=$1 ref=$2
  tar --numeric-owner -C "$d" -cf "$d.tar" .
  crane append --insecure --oci-empty-base -f "$d.tar" -t "$ref" >/dev/null
  crane mutate --insecure --user 65532:65532 "$ref" >/dev/null
}

step "making fake bases"
base_rootfs "$work/static"
push_base "$work/static" "$reg/base/static:nonroot"

base_rootfs "$work/nodejs"
copy_prog "$work/nodejs" "$(command -v node)" /nodejs/bin/node
push_base "$work/nodejs" "$reg/base/nodejs:nonroot"

# Debian 12's own python3 (as distroless python3-debian12 ships), with its
# standard library but without the test suite.
base_rootfs "$work/python"
copy_prog "$work/python" /usr/bin/python3.11 /usr/bin/python3.11
ln -s python3.11 "$work/python/usr/bin/python3"
mkdir -p "$work/python/usr/lib"
tar -C /usr/lib --exclude=python3.11/test --exclude='__pycache__' -cf - python3.11 | tar -C "$work/python/usr/lib" -xf -
push_base "$work/python" "$reg/base/python:nonroot"

# What container/source/Dockerfile needs of golang:1.26-bookworm: Go 1.26 at
# /usr/local/go on PATH, GOPATH=/go, GOTOOLCHAIN=local, a /bin/sh for RUN,
# root. This machine's Go toolchain, without its tests, docs and the sources
# of the go tool itself; busybox-static as the shell.
mkdir -p "$work/golang/bin" "$work/golang/etc" "$work/golang/tmp" "$work/golang/root" "$work/golang/usr/local/go" "$work/golang/go"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$work/golang/etc/passwd"
printf 'root:x:0:\n' >"$work/golang/etc/group"
chmod 1777 "$work/golang/tmp"
cp "$busybox" "$work/golang/bin/busybox"
ln -s busybox "$work/golang/bin/sh"
goroot=$(go env GOROOT)
tool=./pkg/tool/$(go env GOHOSTOS)_$(go env GOHOSTARCH)
tar -C "$goroot" --exclude='*_test.go' --exclude=testdata --exclude=./test --exclude=./api --exclude=./doc \
  --exclude=./misc --exclude=./src/cmd --exclude=./bin/gofmt \
  --exclude="$tool"/{cover,doc,fix,pprof,trace,vet,test2json,objdump,addr2line,nm,covdata,distpack,preprofile} \
  -cf - . | tar -C "$work/golang/usr/local/go" -xf -
tar --numeric-owner -C "$work/golang" -cf "$work/golang.tar" .
crane append --insecure --oci-empty-base -f "$work/golang.tar" -t "$reg/base/golang:1.26" >/dev/null
crane mutate --insecure -t "$reg/base/golang:1.26" --workdir /go \
  -e PATH=/usr/local/go/bin:/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -e GOPATH=/go -e GOTOOLCHAIN=local "$reg/base/golang:1.26" >/dev/null
rm -rf "$work/golang" "$work/golang.tar"

# --- builds ------------------------------------------------------------------

bud() {
  # bud CONTEXT DOCKERFILE REF [BUILD-ARG]...; BUD_FLAGS=(...) adds buildah flags.
  local ctx=$1 file=$2 ref=$3
  shift 3
  local args=("${BUD_FLAGS[@]}")
  for a in "$@"; do args+=(--build-arg "$a"); done
  buildah "${BUILDAH_STORE[@]}" bud --quiet --isolation chroot --tls-verify=false --pull=always \
    --platform linux/amd64 "${args[@]}" -f "$file" -t "$ref" "$ctx" >"$work/bud.log" 2>&1 || {
    cat "$work/bud.log" >&2
    return 1
  }
  buildah "${BUILDAH_STORE[@]}" push --quiet --tls-verify=false "$ref" "docker://$ref" >/dev/null
}

step "building bouncer (static)"
mkdir -p "$work/ctx-bouncer/linux/amd64"
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w -X main.version=image-check" \
  -o "$work/ctx-bouncer/linux/amd64/bouncer" ./cmd/bouncer

step "buildah: container/Dockerfile"
bud "$work/ctx-bouncer" container/Dockerfile "$reg/bouncer:ci" \
  "BASE=$reg/base/static:nonroot" TARGETPLATFORM=linux/amd64

step "buildah: container/source/Dockerfile (go build of this clone inside the build)"
# The repository is the build context, as for a user. Its modules come from
# this machine's module cache, served to the go command as a file:// proxy
# (no network in the build), and its build cache is this machine's (the
# same go build, so the compile is quick); the go build itself runs in the
# image's build stage.
BUD_FLAGS=(-v "$(go env GOMODCACHE)/cache/download:/gomodproxy:ro" -v "$(go env GOCACHE):/root/.cache/go-build")
bud "$root" container/source/Dockerfile "$reg/bouncer-source:ci" \
  "GO_IMAGE=$reg/base/golang:1.26" "BASE=$reg/base/static:nonroot" GOPROXY=file:///gomodproxy \
  VERSION=source-check COMMIT=0000000 DATE=2026-01-01T00:00:00Z
BUD_FLAGS=()

# The wrappers take bouncer by digest, as a deployment should.
source_pin=$reg/bouncer-source@$(crane digest --insecure "$reg/bouncer-source:ci")
release_pin=$reg/bouncer@$(crane digest --insecure "$reg/bouncer:ci")

step "buildah: container/node/Dockerfile on the from-source image by digest (server-everything from container/test/node-server)"
mkdir -p "$work/ctx-node/server"
cp container/test/node-server/package.json container/test/node-server/package-lock.json "$work/ctx-node/server/"
(cd "$work/ctx-node/server" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
# The template policy as shipped (its sandbox: key confines the server), and
# one tool it forbids, to see the gate work inside the image.
{ cat container/node/policy.yaml; printf 'get-sum:\n  max_calls: 0\n'; } >"$work/ctx-node/policy.yaml"
# Without BOUNCER_IMAGE there is nothing to build from: no silent default.
if bud "$work/ctx-node" container/node/Dockerfile "$reg/node-unpinned:ci" "NODE_IMAGE=$reg/base/nodejs:nonroot" 2>"$work/unpinned.err"; then
  fail "container/node/Dockerfile built without BOUNCER_IMAGE"
fi
grep -q 'BOUNCER_IMAGE' "$work/unpinned.err" || { cat "$work/unpinned.err" >&2; fail "the build without BOUNCER_IMAGE failed without naming it"; }
echo "   without BOUNCER_IMAGE: $(grep -m1 'BOUNCER_IMAGE' "$work/unpinned.err" | sed 's/^.*msg=//')"
bud "$work/ctx-node" container/node/Dockerfile "$reg/node-everything:ci" \
  "BOUNCER_IMAGE=$source_pin" "NODE_IMAGE=$reg/base/nodejs:nonroot"

step "buildah: container/python/Dockerfile on the release image by digest (container/test/python-server)"
mkdir -p "$work/ctx-python/server"
cp container/test/python-server/server.py "$work/ctx-python/server/"
cp container/python/policy.yaml "$work/ctx-python/policy.yaml"
# The example policy must load; the check runs against it as shipped.
bud "$work/ctx-python" container/python/Dockerfile "$reg/python-echo:ci" \
  "BOUNCER_IMAGE=$release_pin" "PYTHON_IMAGE=$reg/base/python:nonroot"

# --- checks ------------------------------------------------------------------

# check_image NAME REF: config, filesystem and state directory.
check_image() {
  local name=$1 ref=$2 dir=$work/check-$1
  mkdir -p "$dir/rootfs"
  crane config --insecure "$ref" >"$dir/config.json"
  node -e '
    const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).config || {};
    const env = c.Env || [];
    const bad = [];
    if (c.User !== "65532:65532") bad.push(`User is ${JSON.stringify(c.User)}, want "65532:65532"`);
    if (!env.includes("BOUNCER_HOME=/var/lib/bouncer")) bad.push("BOUNCER_HOME=/var/lib/bouncer not in Env");
    if (!(c.Entrypoint || [])[0] || c.Entrypoint[0] !== "/usr/local/bin/bouncer") bad.push(`Entrypoint ${JSON.stringify(c.Entrypoint)} does not start with /usr/local/bin/bouncer`);
    if (!c.Volumes || !("/var/lib/bouncer" in c.Volumes)) bad.push("/var/lib/bouncer is not a volume");
    if (bad.length) { console.error(bad.join("\n")); process.exit(1); }
  ' "$dir/config.json" || fail "$name: image config"
  crane export --insecure "$ref" - | tar -C "$dir/rootfs" -xf -
  local shells
  shells=$(find "$dir/rootfs" \( -name sh -o -name bash -o -name dash -o -name ash -o -name busybox \) -print)
  [ -z "$shells" ] || fail "$name: the image holds a shell: $shells"
  [ -x "$dir/rootfs/usr/local/bin/bouncer" ] || fail "$name: no /usr/local/bin/bouncer"
  [ "$(stat -c %u:%g "$dir/rootfs/var/lib/bouncer")" = 65532:65532 ] || fail "$name: /var/lib/bouncer is not owned by 65532"
  # BuildKit's COPY --chmod makes it 0700; buildah leaves a directory it
  # creates 0755. Either way no one else may write there, and bouncer's own
  # files in it are 0600.
  local mode
  mode=$(stat -c %a "$dir/rootfs/var/lib/bouncer")
  case $mode in 700 | 755) ;; *) fail "$name: /var/lib/bouncer is mode $mode" ;; esac
  # Nothing above the state directory, and no program, is nonroot's to change.
  for p in / /var /var/lib /usr/local/bin /usr/local/bin/bouncer /etc /etc/passwd /etc/bouncer/policy.yaml /app; do
    [ ! -e "$dir/rootfs$p" ] || [ "$(stat -c %u "$dir/rootfs$p")" = 0 ] || fail "$name: $p is not owned by root"
  done
  echo "   $name: user 65532:65532, no shell, state dir 65532 $mode, system paths root's"
}

# check_wrapper NAME PIN FROM: a wrapper built with BOUNCER_IMAGE=PIN (a
# digest) says so in its label and carries the binary of that image (FROM:
# the name check_image exported it under); the server's data directory
# /data is nonroot's and a volume, apart from bouncer's state.
check_wrapper() {
  local name=$1 pin=$2 from=$3 dir=$work/check-$1
  case $pin in *@sha256:[0-9a-f]*) ;; *) fail "$name: the check must pin by digest, not $pin" ;; esac
  local label
  label=$(node -e '
    const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).config || {};
    console.log((c.Labels || {})["io.github.bouncer-mcp.bouncer-image"] || "");
  ' "$dir/config.json")
  [ "$label" = "$pin" ] || fail "$name: label io.github.bouncer-mcp.bouncer-image is \"$label\", want \"$pin\""
  cmp -s "$dir/rootfs/usr/local/bin/bouncer" "$work/check-$from/rootfs/usr/local/bin/bouncer" ||
    fail "$name: /usr/local/bin/bouncer is not the binary of $pin"
  [ "$(stat -c %u:%g "$dir/rootfs/data")" = 65532:65532 ] || fail "$name: /data is not owned by 65532"
  node -e '
    const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).config || {};
    if (!c.Volumes || !("/data" in c.Volumes)) process.exit(1);
  ' "$dir/config.json" || fail "$name: /data is not a volume"
  echo "   $name: bouncer from $pin (label and binary), /data 65532 and a volume"
}

# run_image NAME TOOL ARGS [noaudit]: the entrypoint end to end, then (for a
# wrapper) its audit line. BLOCK="TOOL ARGS" adds a call the image's policy
# must block.
run_image() {
  local name=$1 tool=$2 args=$3 audited=${4:-audit} dir=$work/check-$1
  local extra=()
  if [ -n "${BLOCK:-}" ]; then extra=(${BLOCK%% *} "${BLOCK#* }"); fi
  if [ -n "${PROBE:-}" ]; then extra+=(probe '{}'); fi
  # What a container runtime adds to the image's filesystem: the usual
  # device nodes and /proc.
  mkdir -p "$dir/rootfs/dev" "$dir/rootfs/proc"
  mknod -m 666 "$dir/rootfs/dev/null" c 1 3
  mknod -m 666 "$dir/rootfs/dev/zero" c 1 5
  mknod -m 666 "$dir/rootfs/dev/random" c 1 8
  mknod -m 666 "$dir/rootfs/dev/urandom" c 1 9
  mount -t proc proc "$dir/rootfs/proc"
  mounted+=("$dir/rootfs/proc")
  local rc=0
  node container/test/drive.mjs "$dir/config.json" "$dir/rootfs" "$tool" "$args" "${extra[@]}" >"$dir/drive.out" 2>"$dir/drive.err" || rc=$?
  umount "$dir/rootfs/proc"
  mounted=("${mounted[@]/"$dir/rootfs/proc"/}")
  if [ "$rc" != 0 ]; then
    cat "$dir/drive.out" "$dir/drive.err" >&2
    fail "$name: driving the entrypoint"
  fi
  cut -c1-200 "$dir/drive.out" | sed 's/^/   /'
  grep -q '^tools: ' "$dir/drive.out" || fail "$name: no tools listed"
  grep -q "^call $tool: " "$dir/drive.out" || fail "$name: $tool was not answered"
  if grep -q "^call $tool: .*\"isError\":true" "$dir/drive.out"; then fail "$name: $tool failed"; fi
  if [ -n "${BLOCK:-}" ]; then
    local b=${BLOCK%% *}
    { grep "^call $b: " "$dir/drive.out" | grep -F '[bouncer blocked] ' | grep -qF '"isError":true'; } ||
      fail "$name: $b was not blocked by the image's policy"
    grep -q "\"tool\":\"$b\".*\"verdict\":\"deny\"" "$dir/rootfs/var/lib/bouncer/audit.jsonl" || fail "$name: no deny line for $b"
    echo "   $name: $b blocked by the baked-in policy, deny line written"
  fi
  [ "$audited" = audit ] || return 0
  local log=$dir/rootfs/var/lib/bouncer/audit.jsonl
  [ -s "$log" ] || fail "$name: no audit line in /var/lib/bouncer/audit.jsonl"
  [ "$(stat -c %u "$log")" = 65532 ] || fail "$name: audit log not owned by 65532"
  grep -q "\"tool\":\"$tool\"" "$log" || fail "$name: audit log does not name $tool"
  echo "   $name: audit line written as 65532"
  # A wrapper runs its server confined by the template's sandbox: key, under
  # --sandbox strict: bouncer's stderr line says what the server got.
  grep -q 'upstream confined (landlock, seccomp denylist): read-write /data /dev/null;' "$dir/drive.err" ||
    { cat "$dir/drive.err" >&2; fail "$name: bouncer did not confine the server to /data"; }
  grep -o 'upstream confined[^;]*;[^;]*;' "$dir/drive.err" | head -1 | sed 's/^/   /'
  [ -n "${PROBE:-}" ] || return 0
  # What the server itself could do: write its data, read its code, and
  # nothing of bouncer's state (the kernel says EACCES), nor the policy, nor
  # anywhere else.
  node -e '
    const fs = require("fs");
    const line = fs.readFileSync(process.argv[1], "utf8").split("\n").find((l) => l.startsWith("call probe: "));
    if (!line) { console.error("no probe answer"); process.exit(1); }
    const res = JSON.parse(line.slice("call probe: ".length));
    const got = (res.content || [])[0]?.text ?? "";
    const want = [
      "write /data/probe.txt: ok",
      "read /app/server.py: ok",
      "list /var/lib/bouncer: EACCES",
      "read /var/lib/bouncer/audit.jsonl: EACCES",
      "append /var/lib/bouncer/audit.jsonl: EACCES",
      "write /var/lib/bouncer/remembered.json: EACCES",
      "write /etc/bouncer/policy.yaml: EACCES",
      "write /tmp/probe.txt: EACCES",
    ].join("\n");
    if (res.isError || got !== want) {
      console.error(`the server probe got:\n${got}\nwant:\n${want}`);
      process.exit(1);
    }
  ' "$dir/drive.out" || fail "$name: the server can reach what the template policy must keep from it"
  [ ! -e "$dir/rootfs/var/lib/bouncer/remembered.json" ] || fail "$name: the server made remembered.json"
  if grep -qx probe "$log"; then fail "$name: the server wrote into the audit log"; fi
  echo "   $name: the server wrote /data; bouncer's state, the policy and /tmp refused it (EACCES)"
}

# run_listen NAME: the entrypoint as the HTTP gateway (bouncer listen), as
# the image's user, in front of the image's own MCP server on stdio: ready
# once that server's tool list is pinned, a session's call answered through
# it and audited with the session's user and replica, and SIGTERM drains it
# to exit 0 (container/test/listen.mjs).
run_listen() {
  local name=$1 dir=$work/check-$1
  local root=$dir/rootfs dev maj min lport rc=0
  mkdir -p "$root/dev" "$root/proc" "$root/etc/bouncer-listen"
  while read -r dev maj min; do
    [ -e "$root/dev/$dev" ] || mknod -m 666 "$root/dev/$dev" c "$maj" "$min"
  done <<'DEVS'
null 1 3
zero 1 5
random 1 8
urandom 1 9
DEVS
  printf '%s\n' '{"mcpServers": {"bouncer": {"command": "/usr/local/bin/bouncer"}}, "x-bouncer-listen": {"replica": "image-check"}}' >"$root/etc/bouncer-listen/mcp.json"
  lport=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  mount -t proc proc "$root/proc"
  mounted+=("$root/proc")
  node container/test/listen.mjs "$dir/config.json" "$root" "$lport" list_packs '{"name":"gmail"}' -- \
    listen --config /etc/bouncer-listen/mcp.json --addr "127.0.0.1:$lport" >"$dir/listen.out" 2>"$dir/listen.err" || rc=$?
  umount "$root/proc"
  mounted=("${mounted[@]/"$root/proc"/}")
  if [ "$rc" != 0 ]; then
    cat "$dir/listen.out" "$dir/listen.err" >&2
    fail "$name: bouncer listen from the image"
  fi
  cut -c1-200 "$dir/listen.out" | sed 's/^/   /'
  { grep -F '"tool":"list_packs"' "$root/var/lib/bouncer/audit.jsonl" | grep -F '"replica":"image-check"' | grep -qF '"user":"local"'; } ||
    fail "$name: no audit line of the call through listen naming its user and replica"
  echo "   $name: bouncer listen as 65532: ready, a session's call answered and audited, drained on SIGTERM"
}

step "checking bouncer:ci"
check_image bouncer "$reg/bouncer:ci"
"$work/check-bouncer/rootfs/usr/local/bin/bouncer" version
# With no arguments the image serves Bouncer's own MCP server; with listen
# it is the gateway in front of servers (here, that one).
run_image bouncer list_packs '{"name":"gmail"}' noaudit
run_listen bouncer

step "checking bouncer-source:ci"
check_image source "$reg/bouncer-source:ci"
got=$("$work/check-source/rootfs/usr/local/bin/bouncer" version)
echo "   $got"
[ "$got" = "bouncer source-check (commit 0000000, built 2026-01-01T00:00:00Z)" ] || fail "source: bouncer version says: $got"
run_image source list_packs '{"name":"gmail"}' noaudit

step "checking node-everything:ci"
check_image node "$reg/node-everything:ci"
check_wrapper node "$source_pin" source
BLOCK='get-sum {"a":1,"b":2}' run_image node echo '{"message":"hello from the image check"}'

step "checking python-echo:ci"
check_image python "$reg/python-echo:ci"
check_wrapper python "$release_pin" bouncer
PROBE=1 run_image python echo '{"message":"hello from the image check"}'

step "ok"
