#!/usr/bin/env bash
# Interop of policy as an OCI artifact with the reference tools, which the
# ordinary test run skips when they are not on PATH:
#   - crane reads the artifact bouncer policy push writes (crane digest,
#     manifest, and each file by its layer's digest);
#   - oras pull writes the files under their title annotations;
#   - a file signed with cosign sign-blob --key goes through push and pull,
#     and cosign verifies what pull installed; cosign and bouncer accept each
#     other's bundles (internal/bundle).
# Takes the tools at the versions .ci/testdeps pins (built once per machine
# into its cache when missing), and fails if any of these tests was skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
step() { echo "-- oci: $*"; }

# shellcheck source=.ci/testdeps
source .ci/testdeps
testdeps_builds

log=$(mktemp)
trap 'rm -f "$log"' EXIT
step "interop tests"
{
  go test -count=1 -v -run '^(TestCraneReadsTheArtifact|TestOrasPullsTheFiles)$' ./internal/distribute
  go test -count=1 -v -run '^TestScripts$/^policy_cosign$' ./cmd/bouncer
  go test -count=1 -v -run '^TestCosignInterop$' ./internal/bundle
} 2>&1 | tee "$log" | grep -E '^(--- |ok|FAIL|PASS)' || true
if grep -q -- '--- FAIL' "$log" || grep -q '^FAIL' "$log"; then
  cat "$log"
  echo "oci: interop failed"
  exit 1
fi
if grep -q -- '--- SKIP' "$log"; then
  grep -B2 -A2 -- '--- SKIP' "$log"
  echo "oci: an interop test was skipped although the tools were installed"
  exit 1
fi
for t in TestCraneReadsTheArtifact TestOrasPullsTheFiles 'TestScripts/policy_cosign' TestCosignInterop; do
  grep -q -- "--- PASS: $t" "$log" || { cat "$log"; echo "oci: $t did not run"; exit 1; }
done
step "crane, oras and cosign agree"
