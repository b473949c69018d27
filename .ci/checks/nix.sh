#!/usr/bin/env bash
# Checks the flake offline. nixpkgs cannot be fetched here, so every command
# runs with --override-input nixpkgs path:./nix/stub-nixpkgs (a stand-in
# with the same calling conventions; see its header):
#   - flake.nix, nix/*.nix and flake.lock parse, flake.lock pins nixpkgs;
#   - `nix flake show` and `nix flake check --no-build` evaluate every output;
#   - packages.default is bouncer-VERSION with the ldflags the release uses;
#   - flake.lock's nixpkgs entry is the input flake.nix names (else Nix
#     would re-lock, and `nix run github:...` would fetch another nixpkgs);
#   - packages.default is built with Go 1.26 (buildGo126Module), and with
#     a nixpkgs that has no Go 1.26, package.nix stops at evaluation and
#     says why;
#   - vendorHash in nix/package.nix matches `go mod vendor` for the current
#     go.mod (a stale hash fails here, with the command that fixes it);
#   - the wrapMcpServer check builds, and its launcher execs
#     `bouncer run --policy STORE-FILE --name ... -- SERVER ARGS`, and the
#     policy it bakes in loads in the real bouncer.
# What it cannot do: build against real nixpkgs (docs/install.md).
# Installs nix-bin from apt when nix is missing; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
step() { echo "-- nix: $*"; }
fail() { echo "nix: FAIL: $*" >&2; exit 1; }

if ! command -v nix >/dev/null; then
  step "installing nix-bin"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nix-bin >/dev/null
fi
# No binary cache (it would be retried until it times out offline), no
# build sandbox (the stub's derivations are built by the host's /bin/sh).
export NIX_CONFIG="experimental-features = nix-command flakes
substituters =
sandbox = false
warn-dirty = false"
stub=(--override-input nixpkgs path:./nix/stub-nixpkgs)
sys=x86_64-linux

# Flakes only see files git knows about. In CI everything is committed; in a
# working tree, say which of ours are not.
untracked=$(git ls-files --others --exclude-standard -- flake.nix flake.lock nix)
[ -z "$untracked" ] || fail "not known to git, so invisible to the flake (git add them): $untracked"

step "parse"
for f in flake.nix nix/*.nix nix/stub-nixpkgs/flake.nix; do
  nix-instantiate --parse "$f" >/dev/null || fail "$f does not parse"
done
node -e '
  const l = JSON.parse(require("fs").readFileSync("flake.lock", "utf8"));
  const n = l.nodes && l.nodes[l.nodes[l.root].inputs.nixpkgs];
  const k = n && n.locked;
  if (l.version !== 7 || !k || k.type !== "github" || !/^[0-9a-f]{40}$/.test(k.rev) ||
      !/^sha256-[A-Za-z0-9+/]{43}=$/.test(k.narHash || "") || !Number.isInteger(k.lastModified))
    { console.error("flake.lock does not pin nixpkgs to a github rev with a narHash and lastModified"); process.exit(1); }
  // The lock entry must be for the input flake.nix declares, or Nix would
  // throw the lock away and resolve the branch anew.
  const m = require("fs").readFileSync("flake.nix", "utf8").match(/inputs\.nixpkgs\.url = "github:([^/"]+)\/([^/"]+)\/([^"]+)";/);
  const o = n.original || {};
  if (!m || o.type !== "github" || o.owner !== m[1] || o.repo !== m[2] || o.ref !== m[3] || k.owner !== m[1] || k.repo !== m[2])
    { console.error(`the nixpkgs entry of flake.lock (${JSON.stringify(o)}) is not the input flake.nix names (${m && m[0]})`); process.exit(1); }
  const when = new Date(k.lastModified * 1000).toISOString().slice(0, 10);
  console.log(`   flake.lock: nixpkgs ${o.ref} at ${k.rev} (${when}), ${k.narHash}`);
' || fail "flake.lock"

step "flake show / check --no-build (stub nixpkgs)"
nix flake show "${stub[@]}" >/dev/null 2>"${TMPDIR:-/tmp}/nix-show.err" || { cat "${TMPDIR:-/tmp}/nix-show.err" >&2; fail "nix flake show"; }
nix flake check --no-build "${stub[@]}" 2>"${TMPDIR:-/tmp}/nix-check.err" || { cat "${TMPDIR:-/tmp}/nix-check.err" >&2; fail "nix flake check"; }

step "eval"
ev() { nix eval --raw "$1" "${stub[@]}" 2>/dev/null; }
name=$(ev ".#packages.$sys.default.name")
version=$(ev ".#packages.$sys.default.version")
echo "   packages.$sys.default: $name (version $version)"
[ "$name" = "bouncer-$version" ] || fail "package name $name is not bouncer-$version"
ldflags=$(nix eval --json ".#packages.$sys.default.ldflags" "${stub[@]}" 2>/dev/null)
for want in "-X main.version=$version" "-X main.commit=" "-X main.date=" '"-s"' '"-w"'; do
  case $ldflags in *"$want"*) ;; *) fail "ldflags lack $want: $ldflags" ;; esac
done
[ "$(ev ".#apps.$sys.default.type")" = app ] || fail "apps.default is not an app"
case $(ev ".#apps.$sys.default.program") in */bin/bouncer) ;; *) fail "apps.default does not run bin/bouncer" ;; esac
nix eval ".#packages.$sys.image.drvPath" "${stub[@]}" >/dev/null 2>&1 || fail "packages.image does not evaluate"
nix eval ".#devShells.$sys.default.drvPath" "${stub[@]}" >/dev/null 2>&1 || fail "devShells.default does not evaluate"

# The package is built with Go 1.26 whatever the nixpkgs's default Go is
# (the stub's default is 1.24, as an older nixpkgs's would be).
gov=$(ev ".#packages.$sys.default.go.version")
case $gov in 1.26.*) echo "   built with Go $gov (buildGo126Module)" ;; *) fail "packages.default is built with Go $gov, not 1.26" ;; esac
# With a nixpkgs that has no Go 1.26, evaluation stops with a message that
# says so and how to get a newer nixpkgs, instead of failing deep in a build.
old_go=$(nix eval --raw --impure --expr '
  let pkgs = (builtins.getFlake (toString ./nix/stub-nixpkgs)).legacyPackages.x86_64-linux;
  in (pkgs.callPackage ./nix/package.nix { buildGo126Module = null; src = null; version = "0"; commit = "x"; date = "d"; }).name' 2>&1 || true)
case $old_go in
  *"bouncer needs Go 1.26 (buildGo126Module); this nixpkgs has none (its default Go is 1.24"*) echo "   a nixpkgs without Go 1.26 is refused at evaluation" ;;
  *) fail "package.nix without buildGo126Module did not stop with the Go version message: $old_go" ;;
esac

step "vendorHash against go mod vendor"
have=$(ev ".#packages.$sys.default.vendorHash")
want=$(nix/vendor-hash.sh 2>/dev/null) || fail "go mod vendor failed (is go.mod consistent?)"
if [ "$have" != "$want" ]; then
  fail "vendorHash in nix/package.nix is $have, but go.mod/go.sum need $want; run: nix/vendor-hash.sh --write"
fi
echo "   $have"

step "wrapMcpServer launcher"
out=$(nix build --no-link --json ".#checks.$sys.wrapped-server" "${stub[@]}" 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].outputs.out))')
launcher=$out/bin/example
got=$("$launcher" extra 'two words')
echo "   $got"
case $got in
  "stub-bouncer run --policy /nix/store/"*"-example-policy.yaml --name example --sandbox auto -- /nix/store/"*"/bin/cat extra two words") ;;
  *) fail "the launcher ran: $got" ;;
esac
policy=$(sed -n 's/.*--policy \([^ ]*\).*/\1/p' <<<"$got")
bin=$(mktemp -d /tmp/bouncer-nix.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/bouncer" ./cmd/bouncer
"$bin/bouncer" check --policy "$policy" </dev/null || fail "the policy wrapMcpServer baked in ($policy) does not load"
step "ok"
