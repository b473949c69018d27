{
  description = "Bouncer: a hardened stdio MCP proxy that denies sends to destinations taken from untrusted tool output";

  # flake.lock pins this. Go 1.26 (go.mod) is newer than nixos-25.05 ships:
  # see docs/install.md, "Nix", for building against a newer nixpkgs.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";

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
          go = pkgs.go_1_26 or pkgs.go;
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
            (pkgs.go_1_26 or go)
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

      formatter = forAllSystems (pkgs: pkgs.nixfmt-rfc-style);
    };
}
