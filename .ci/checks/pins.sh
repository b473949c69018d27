#!/usr/bin/env bash
# Fails unless every `uses:` in .github/workflows names its action by a full
# commit SHA, with the release tag it was taken from as a trailing comment:
#   - uses: actions/checkout@<40 hex digits> # v4.4.0
# A tag or branch can be moved to other code after review; the release job
# holds contents/packages write and id-token, so what it runs must be the
# exact code that was read. Local actions (./path) are this repository's own
# and pass; a docker:// action must name its image by sha256 digest.
#
# The same holds for the images the Dockerfiles under container/ build on:
# every base (a FROM, a COPY --from that is no stage of the file, or the
# default of the ARG a FROM takes it from) must be named by tag and sha256
# digest, image:TAG@sha256:<64 hex>. An ARG with no default (BOUNCER_IMAGE)
# is the build's to pin; images.sh checks the wrappers are built so.
#
# It first checks itself on small workflows and Dockerfiles, pinned and
# not, so a broken pattern can't pass everything silently.
set -euo pipefail
cd "$(dirname "$0")/../.."

# check_dir DIR: prints one line per unpinned `uses:` (file:line: text) and
# fails if there is any; counts the pinned ones in pinned.
pinned=0
check_dir() {
  local dir=$1 bad=0 f n line ref
  pinned=0
  shopt -s nullglob
  for f in "$dir"/*.yml "$dir"/*.yaml; do
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
      n=$((n + 1))
      # `uses:` as a key, alone or as a list item's first key; quotes
      # around the value are allowed.
      [[ $line =~ ^[[:space:]]*(-[[:space:]]+)?uses:[[:space:]]*(.*)$ ]] || continue
      ref=${BASH_REMATCH[2]}
      ref=${ref//\"/}
      ref=${ref//\'/}
      if [[ $ref == ./* ]] ||
        [[ $ref =~ ^docker://[^[:space:]@]+@sha256:[0-9a-f]{64}([[:space:]]*#.*)?$ ]] ||
        [[ $ref =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}[[:space:]]+#[[:space:]]*v[0-9][^[:space:]]*[[:space:]]*$ ]]; then
        pinned=$((pinned + 1))
        continue
      fi
      echo "$f:$n: not pinned by commit SHA with its tag as a comment (want owner/repo@<40-hex SHA> # vX.Y.Z): $(echo "$line" | sed 's/^[[:space:]]*//')"
      bad=1
    done <"$f"
  done
  return $bad
}

# check_dockerfile FILE: prints one line per base named without a digest
# (file:line: text) and fails if there is any; counts pinned bases in
# pinned_images.
pinned_images=0
check_dockerfile() {
  local f=$1 bad=0 n=0 line ref name
  local -A defaults=() stages=()
  pinned_images=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    ref=
    if [[ $line =~ ^[[:space:]]*ARG[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)(=([^[:space:]]*))?[[:space:]]*$ ]]; then
      name=${BASH_REMATCH[1]}
      defaults[$name]=${BASH_REMATCH[3]}
      continue
    elif [[ $line =~ ^[[:space:]]*FROM[[:space:]]+(--[^[:space:]]+[[:space:]]+)*([^[:space:]]+)([[:space:]]+[Aa][Ss][[:space:]]+([^[:space:]]+))?[[:space:]]*$ ]]; then
      ref=${BASH_REMATCH[2]}
      [ -z "${BASH_REMATCH[4]}" ] || stages[${BASH_REMATCH[4]}]=1
    elif [[ $line =~ ^[[:space:]]*COPY[[:space:]].*--from=([^[:space:]]+) ]]; then
      ref=${BASH_REMATCH[1]}
    else
      continue
    fi
    [ -z "${stages[$ref]:-}" ] || continue
    if [[ $ref =~ ^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$ ]]; then
      name=${BASH_REMATCH[1]}
      ref=${defaults[$name]:-}
      [ -n "$ref" ] || continue # no default: the build passes it
    fi
    [ -z "${stages[$ref]:-}" ] || continue
    if [[ $ref =~ ^[^[:space:]@]+:[^[:space:]@/]+@sha256:[0-9a-f]{64}$ ]]; then
      pinned_images=$((pinned_images + 1))
      continue
    fi
    echo "$f:$n: $ref is not pinned by digest (want image:TAG@sha256:<64 hex>): $(echo "$line" | sed 's/^[[:space:]]*//')"
    bad=1
  done <"$f"
  return $bad
}

# The check on itself.
work=$(mktemp -d /tmp/bouncer-pins.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/good" "$work/bad"
cat >"$work/good/w.yml" <<'YAML'
jobs:
  a:
    steps:
      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0
      - name: x
        uses: "anchore/sbom-action/download-syft@e22c389904149dbc22b58101806040fa8d37a610" # v0.24.0
      - uses: ./.github/actions/local
      - uses: docker://alpine@sha256:0000000000000000000000000000000000000000000000000000000000000000
YAML
for bad in 'actions/checkout@v4' 'actions/checkout@main' 'actions/checkout@11d5960a326750d5838078e36cf38b85af677262' \
  'actions/checkout@11d5960a32 # v4.4.0' 'docker://alpine:3' 'actions/checkout@11d5960a326750d5838078e36cf38b85af677262x # v4'; do
  printf 'jobs:\n  a:\n    steps:\n      - uses: %s\n' "$bad" >"$work/bad/w.yml"
  if check_dir "$work/bad" >/dev/null; then
    echo "pins: FAIL: the check passed an unpinned action: $bad" >&2
    exit 1
  fi
done
check_dir "$work/good" || { echo "pins: FAIL: the check refused pinned actions" >&2; exit 1; }

d=gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
printf 'ARG BASE=%s\nARG GIVEN\nFROM ${BASE} AS base\nFROM ${GIVEN} AS given\nFROM --platform=$BUILDPLATFORM %s AS b\nFROM base\nCOPY --from=b /x /x\nCOPY --from=%s /y /y\n' "$d" "$d" "$d" >"$work/good/Dockerfile"
check_dockerfile "$work/good/Dockerfile" || { echo "pins: FAIL: the check refused pinned bases" >&2; exit 1; }
[ "$pinned_images" = 3 ] || { echo "pins: FAIL: the check counted $pinned_images pinned bases of 3" >&2; exit 1; }
for bad in 'FROM gcr.io/distroless/static-debian12:nonroot' 'ARG BASE=golang:1.26-bookworm\nFROM ${BASE}' 'ARG BASE=golang:1.26\nFROM $BASE AS b' \
  'FROM golang@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d' 'FROM --platform=linux/amd64 golang:1.26' \
  'COPY --from=ghcr.io/bouncer-mcp/bouncer:1.0 /b /b' 'FROM golang:1.26@sha256:a688600ca2' 'FROM scratch AS s\nFROM golang:1.26 AS b'; do
  printf "$bad\n" >"$work/bad/Dockerfile"
  if check_dockerfile "$work/bad/Dockerfile" >/dev/null; then
    echo "pins: FAIL: the check passed an unpinned base: $bad" >&2
    exit 1
  fi
done
bad=0
images=0
for f in container/Dockerfile container/*/Dockerfile; do
  check_dockerfile "$f" || bad=1
  images=$((images + pinned_images))
done
if [ "$bad" != 0 ]; then
  echo "pins: FAIL: pin every base image by digest, keeping its tag (image:TAG@sha256:...; docs/install.md says how to move a pin)" >&2
  exit 1
fi
echo "-- pins: ok: $images base images in container/, all pinned by digest"

[ -d .github/workflows ] || { echo "pins: no .github/workflows" >&2; exit 1; }
if ! check_dir .github/workflows; then
  echo "pins: FAIL: pin every action by the commit its release tag names (see the comment at the top of .github/workflows/release.yml)" >&2
  exit 1
fi
echo "-- pins: ok: $pinned uses in .github/workflows, all pinned by commit"
