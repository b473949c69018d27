{
  description = "Bouncer: a hardened stdio MCP proxy that denies sends to destinations taken from untrusted tool output";

  # flake.lock pins this to a nixos-unstable revision that has Go 1.26
  # (go_1_26, buildGo126Module), which go.mod needs; see docs/install.md, "Nix".
  # Whoever moves the lock (`nix flake update`) must keep a nixpkgs that has
  # buildGo126Module: nix/package.nix stops at evaluation otherwise.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "x86_64-darwin"
        "aarch64-darwin"
      ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      version = "0.1.0-dev";
      commit = self.rev or "dirty";
      # lastModifiedDate is YYYYMMDDHHMMSS (UTC) of the commit; the release
      # build prints RFC 3339, so this does too.
      date =
        let
          d = self.lastModifiedDate or "19700101000000";
          s = start: len: builtins.substring start len d;
        in
        "${s 0 4}-${s 4 2}-${s 6 2}T${s 8 2}:${s 10 2}:${s 12 2}Z";

      bouncerFor =
        pkgs:
        pkgs.callPackage ./nix/package.nix {
          src = self;
          inherit version commit date;
        };

      wrapMcpServerFor =
        pkgs:
        pkgs.callPackage ./nix/wrap-mcp-server.nix {
          bouncer = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
        };
    in
    {
      packages = forAllSystems (
        pkgs:
        {
          default = bouncerFor pkgs;
        }
        // lib.optionalAttrs pkgs.stdenv.hostPlatform.isLinux {
          image = pkgs.callPackage ./nix/image.nix {
            bouncer = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
          };
        }
      );

      # nix run github:bouncer-mcp/bouncer -- run -- npx -y @modelcontextprotocol/server-everything
      apps = forAllSystems (pkgs: {
        default = {
          type = "app";
          program = "${self.packages.${pkgs.stdenv.hostPlatform.system}.default}/bin/bouncer";
        };
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = with pkgs; [
            go_1_26
            gopls
            gotools
            go-tools # staticcheck
            goreleaser
            cosign
            go-containerregistry # crane
            nodejs
          ];
          env.GOTOOLCHAIN = "local";
        };
      });

      # bouncer.lib.wrapMcpServer pkgs { name; command; args; policy; ... }:
      # see nix/wrap-mcp-server.nix.
      lib.wrapMcpServer = pkgs: wrapMcpServerFor pkgs;

      # Evaluated by `nix flake check`: the package, and a server wrapped with
      # a policy written inline.
      checks = forAllSystems (pkgs: {
        bouncer = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
        wrapped-server = wrapMcpServerFor pkgs {
          name = "example";
          command = "${pkgs.coreutils}/bin/cat";
          policy = {
            send_email = {
              exfiltrating = true;
              sink_params = [ "to" ];
              trusted_destinations = [ "alice@example.com" ];
            };
          };
        };
      });

      # nixfmt is the RFC 166 formatter (nixpkgs dropped the nixfmt-rfc-style
      # alias in 2026).
      formatter = forAllSystems (pkgs: pkgs.nixfmt);
    };
}
