#!/usr/bin/env bash
# Fails unless every `uses:` in .github/workflows names its action by a full
# commit SHA, with the release tag it was taken from as a trailing comment:
#   - uses: actions/checkout@<40 hex digits> # v4.4.0
# A tag or branch can be moved to other code after review; the release job
# holds contents/packages write and id-token, so what it runs must be the
# exact code that was read. Local actions (./path) are this repository's own
# and pass; a docker:// action must name its image by sha256 digest.
#
# It first checks itself on two small workflows, one pinned and one not, so
# a broken pattern can't pass everything silently.
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

[ -d .github/workflows ] || { echo "pins: no .github/workflows" >&2; exit 1; }
if ! check_dir .github/workflows; then
  echo "pins: FAIL: pin every action by the commit its release tag names (see the comment at the top of .github/workflows/release.yml)" >&2
  exit 1
fi
echo "-- pins: ok: $pinned uses in .github/workflows, all pinned by commit"
