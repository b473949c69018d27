# The bouncer package: the one static binary, built from this repository.
#
# vendorHash is the NAR hash of `go mod vendor` for the current go.mod and
# go.sum. .ci/checks/nix.sh recomputes it on every CI run and fails when this
# line is stale; `nix/vendor-hash.sh --write` rewrites it.
#
# Built with Go 1.26 explicitly (buildGo126Module), whatever the nixpkgs's
# default Go is: go.mod says `go 1.26.0`, and Nix builds with
# GOTOOLCHAIN=local.
{
  lib,
  # null when this nixpkgs has no Go 1.26: refused below, with the way out.
  buildGo126Module ? null,
  go ? null,
  src,
  version,
  commit,
  date,
}:

# A nixpkgs without Go 1.26 would otherwise fail deep in the build with
# "go.mod requires go >= 1.26.0". Say so at evaluation time instead.
assert lib.assertMsg (buildGo126Module != null) ''
  bouncer needs Go 1.26 (buildGo126Module); this nixpkgs has none (its default Go is ${
    if go == null then "unknown" else go.version
  }).
  flake.lock pins a nixpkgs that has it; if you overrode nixpkgs, use a newer one, e.g.
    nix build --override-input nixpkgs github:NixOS/nixpkgs/nixos-unstable
'';

buildGo126Module {
  pname = "bouncer";
  inherit version src;

  vendorHash = "sha256-9zqm2oYHDDJ8GznOKbA2nWURSmx47QKUVUAkF/iniU8=";

  subPackages = [ "cmd/bouncer" ];

  # Static, like the release binaries: nothing of the build host's libc ends
  # up in the closure. buildGoModule already passes -trimpath.
  env.CGO_ENABLED = "0";

  ldflags = [
    "-s"
    "-w"
    "-X main.version=${version}"
    "-X main.commit=${commit}"
    "-X main.date=${date}"
  ];

  # The test suite drives real MCP servers from the npm registry, pseudo-
  # terminals and the kernel's Landlock and seccomp, none of which the Nix
  # build sandbox offers; CI runs it (.ci/run). Here: does the binary start?
  doCheck = false;
  doInstallCheck = true;
  installCheckPhase = ''
    runHook preInstallCheck
    $out/bin/bouncer version | grep -F "bouncer ${version}"
    runHook postInstallCheck
  '';

  meta = {
    description = "Hardened stdio MCP proxy that denies sends to destinations taken from untrusted tool output";
    homepage = "https://github.com/bouncer-mcp/bouncer";
    license = lib.licenses.mit;
    mainProgram = "bouncer";
    platforms = lib.platforms.linux ++ lib.platforms.darwin;
  };
}
