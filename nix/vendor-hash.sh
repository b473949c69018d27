#!/usr/bin/env bash
# Prints the vendorHash that nix/package.nix needs for the current go.mod and
# go.sum: the NAR hash (SRI form) of `go mod vendor`, which is what
# buildGoModule's module derivation produces. With --write it also puts the
# value into nix/package.nix.
#
# Needs go and nix (nix-bin); runs on a copy of the tree, so it never
# changes go.mod or leaves a vendor/ directory behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export NIX_CONFIG="${NIX_CONFIG:-experimental-features = nix-command flakes}"

work=$(mktemp -d /tmp/bouncer-vendor.XXXXXX)
trap 'rm -rf "$work"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$work" -xf -
(cd "$work" && go mod vendor -o "$work/vendor" >&2)
hash=$(nix hash path --type sha256 --sri "$work/vendor" 2>/dev/null || nix hash path "$work/vendor")
case ${1:-} in
  --write)
    sed -i -E "s|^(  vendorHash = )\"[^\"]*\";|\1\"$hash\";|" nix/package.nix
    grep -q "vendorHash = \"$hash\";" nix/package.nix || { echo "vendor-hash: could not update nix/package.nix" >&2; exit 1; }
    echo "nix/package.nix: vendorHash = \"$hash\"" >&2
    ;;
esac
echo "$hash"
