# The bouncer package: the one static binary, built from this repository.
#
# vendorHash is the NAR hash of `go mod vendor` for the current go.mod and
# go.sum. .ci/checks/nix.sh recomputes it on every CI run and fails when this
# line is stale; nix/update-vendor-hash.sh rewrites it.
{
  lib,
  buildGoModule,
  go,
  src,
  version,
  commit,
  date,
}:

# go.mod says `go 1.26`, and Nix builds with GOTOOLCHAIN=local: an older Go
# would stop with "go.mod requires go >= 1.26". Say so at evaluation time,
# with the way out, instead of failing deep in the build.
assert lib.assertMsg (lib.versionAtLeast go.version "1.26") ''
  bouncer needs Go 1.26 or newer; this nixpkgs has Go ${go.version}.
  Build against a newer nixpkgs, e.g.
    nix build --override-input nixpkgs github:NixOS/nixpkgs/nixos-unstable
'';

(buildGoModule.override { inherit go; }) {
  pname = "bouncer";
  inherit version src;

  vendorHash = "sha256-K5sR0GPqm8Wtm5oO5gSA6fksx/GEOgKDrvdHRILkEy0=";

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
