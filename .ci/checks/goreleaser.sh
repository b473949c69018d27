#!/usr/bin/env bash
# Checks .goreleaser.yaml and makes a snapshot release from it, then runs the
# linux/amd64 binary out of its archive.
#
# goreleaser needs a git remote (`goreleaser check` fails with "no remote
# configured" otherwise), so it runs in a throwaway repository made from this
# tree, never touching this repository's remotes. Publishing, signing, the
# images and the SBOMs are skipped: there is no registry, no OIDC identity
# for keyless cosign, no Docker engine for buildx and no syft here (see
# docs/install.md, "What CI checks and what it cannot"). The images are built
# by images.sh instead.
#
# Installs goreleaser (pinned) with go install when it is missing or another
# version; safe to run again. With --install-only it stops there (.ci/run
# builds it that way in the background while the tests run).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$(go env GOPATH)/bin:$PATH"

GORELEASER_VERSION=v2.17.0
step() { echo "-- goreleaser: $*"; }

have=$(goreleaser --version 2>/dev/null | awk '/^GitVersion:/ {print $2}' || true)
if [ "$have" != "$GORELEASER_VERSION" ]; then
  step "installing goreleaser $GORELEASER_VERSION (found: ${have:-none}); this takes minutes"
  go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
fi
[ "${1:-}" != --install-only ] || exit 0

work=$(mktemp -d /tmp/bouncer-goreleaser.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The tree as git sees it (tracked and untracked, not ignored): in CI that is
# the commit under test.
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$work" -xf -
cd "$work"
git init -q
git -c user.name=ci -c user.email=ci@invalid add -A
git -c user.name=ci -c user.email=ci@invalid commit -q -m snapshot
git remote add origin https://github.com/bouncer-mcp/bouncer.git

step "check"
goreleaser check

step "release --snapshot"
goreleaser release --snapshot --clean --skip=publish,sign,docker,sbom --parallelism 2 >"$work/release.log" 2>&1 || {
  tail -50 "$work/release.log" >&2
  exit 1
}

want=(linux_amd64 linux_arm64 darwin_amd64 darwin_arm64)
for p in "${want[@]}"; do
  ls dist/bouncer_*_"$p".tar.gz >/dev/null 2>&1 || { echo "goreleaser: no archive for $p" >&2; exit 1; }
done
[ -s dist/checksums.txt ] || { echo "goreleaser: no checksums.txt" >&2; exit 1; }
(cd dist && sha256sum --quiet -c checksums.txt)

archive=$(ls dist/bouncer_*_linux_amd64.tar.gz)
mkdir x && tar -C x -xzf "$archive"
for f in bouncer README.md LICENSE; do
  [ -e "x/$f" ] || { echo "goreleaser: $archive lacks $f" >&2; exit 1; }
done
out=$(./x/bouncer version)
echo "   $out"
case $out in
  "bouncer 0."*"-snapshot-"*" (commit "[0-9a-f]*", built "2*")") ;;
  *) echo "goreleaser: bouncer version did not print the injected version, commit and date" >&2; exit 1 ;;
esac
# Static, as the contract says: ldd fails on a binary with no program
# interpreter ("not a dynamic executable").
if ldd x/bouncer >/dev/null 2>&1; then
  echo "goreleaser: the linux binary is dynamically linked" >&2
  exit 1
fi
step "ok: $(cd dist && ls *.tar.gz | tr '\n' ' ')"
