#!/usr/bin/env bash
# The Kubernetes manifests of bouncer listen (deploy/kubernetes), checked by
# their own module (deploy/kubernetes/check), so the Kubernetes API types
# stay out of bouncer's go.mod: every document decodes strictly as its API
# object, and the security settings docs/listen.md promises hold. The root
# module's `go vet ./...` and `go test ./...` do not reach a nested module,
# so this runs its vet, staticcheck and tests.
# Needs go and the Go module proxy (k8s.io/api); about a minute on a cold
# build cache, seconds after.
set -euo pipefail
cd "$(dirname "$0")/../../deploy/kubernetes/check"
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$PATH:$(go env GOPATH)/bin"
echo "-- kubernetes: go vet, staticcheck, go test (deploy/kubernetes/check)"
go vet ./...
staticcheck ./...
go test -count=1 ./...
