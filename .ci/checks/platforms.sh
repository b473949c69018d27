#!/usr/bin/env bash
# The systems CI does not run on:
#   - windows/amd64: everything builds (go build ./...), and the bouncer
#     built there has the refusal wired in: run and the commands that serve
#     it say "Windows is not supported: ..." (cmd/bouncer/platform*.go; the
#     message itself is tested by TestRefuseUnsupported on Linux);
#   - darwin/arm64: every package builds (go build -trimpath ./..., which
#     shares its build cache with goreleaser.sh's darwin build, run before
#     it); the tests run on Linux only, so their darwin build is not
#     checked.
# Needs only go; a cold build cache makes it take about a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
step() { echo "-- platforms: $*"; }
fail() { echo "platforms: FAIL: $*" >&2; exit 1; }
work=$(mktemp -d /tmp/bouncer-platforms.XXXXXX)
trap 'rm -rf "$work"' EXIT

step "windows/amd64: go build ./..."
GOOS=windows GOARCH=amd64 go build ./... || fail "the windows build broke (docs/install.md#windows: it must build, and run must refuse)"
GOOS=windows GOARCH=amd64 go build -o "$work/bouncer.exe" ./cmd/bouncer
files=$(GOOS=windows GOARCH=amd64 go list -f '{{join .GoFiles " "}}' ./cmd/bouncer)
case " $files " in *" platform_other.go "*) ;; *) fail "cmd/bouncer for windows lacks platform_other.go (the refusal): $files" ;; esac
grep -aqF 'is not supported: %s. Run Bouncer under WSL 2' "$work/bouncer.exe" || fail "bouncer.exe lacks the refusal message"
echo "   bouncer.exe: $(stat -c %s "$work/bouncer.exe") bytes, refuses run"

step "darwin/arm64: go build ./..."
GOOS=darwin GOARCH=arm64 go build -trimpath ./...
GOOS=darwin GOARCH=arm64 go build -trimpath -o "$work/bouncer-darwin-arm64" ./cmd/bouncer
step "ok"
