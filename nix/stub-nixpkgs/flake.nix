# A stand-in for nixpkgs, for checking this repository's flake offline:
#
#   nix flake check --no-build --override-input nixpkgs path:./nix/stub-nixpkgs
#
# It offers the few functions and packages flake.nix and nix/*.nix use, with
# the same names and calling conventions, so evaluation walks every output.
# Its derivations are tiny shell builds (they need `sandbox = false`): the
# Go build is a fake bouncer that prints its arguments, which is enough to
# build and run the wrapMcpServer launcher and see the command it execs. It
# is not nixpkgs and proves nothing about a real build (docs/install.md).
{
  description = "Offline stand-in for the parts of nixpkgs that bouncer's flake uses";

  outputs =
    { self }:
    let
      lib = rec {
        genAttrs = names: f: builtins.listToAttrs (map (n: { name = n; value = f n; }) names);
        optionalAttrs = cond: as: if cond then as else { };
        optionals = cond: xs: if cond then xs else [ ];
        optional = cond: x: if cond then [ x ] else [ ];
        assertMsg = pred: msg: pred || builtins.throw msg;
        versionAtLeast = a: b: builtins.compareVersions a b >= 0;
        isString = builtins.isString;
        concatMap = builtins.concatMap;
        concatStringsSep = builtins.concatStringsSep;
        concatMapStringsSep = sep: f: xs: builtins.concatStringsSep sep (map f xs);
        escapeShellArg = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] (toString s) + "'";
        makeOverridable =
          f: args:
          (f args)
          // {
            override = more: makeOverridable f (args // more);
          };
        licenses.mit = {
          spdxId = "MIT";
          shortName = "mit";
        };
        platforms = {
          linux = [
            "x86_64-linux"
            "aarch64-linux"
          ];
          darwin = [
            "x86_64-darwin"
            "aarch64-darwin"
          ];
        };
      };

      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "x86_64-darwin"
        "aarch64-darwin"
      ];

      pkgsFor =
        system:
        let
          # sh DERIVATION-NAME SCRIPT: a derivation built by a host shell script.
          sh =
            name: script: extra:
            derivation (
              {
                inherit name system;
                builder = "/bin/sh";
                args = [
                  "-c"
                  script
                ];
                PATH = "/usr/bin:/bin";
              }
              // extra
            );
          tool = name: version: (sh "${name}-${version}" "mkdir -p $out/bin" { }) // { inherit version; };

          mkBuildGoModule =
            go:
            {
              inherit go;
              override = o: mkBuildGoModule (o.go or go);
              __functor =
                _: args:
                let
                  drv = sh "${args.pname}-${args.version}" ''
                    mkdir -p $out/bin
                    printf '#!/bin/sh\necho "stub-bouncer $*"\n' > $out/bin/${args.meta.mainProgram or args.pname}
                    chmod +x $out/bin/*
                  '' { };
                in
                drv
                // {
                  inherit (args) pname version vendorHash;
                  ldflags = args.ldflags or [ ];
                  meta = args.meta or { };
                  inherit go;
                };
            };

          pkgs = rec {
            inherit lib;
            stdenv.hostPlatform = {
              inherit system;
              isLinux = builtins.elem system lib.platforms.linux;
              isDarwin = builtins.elem system lib.platforms.darwin;
            };
            callPackage =
              f: overrides:
              let
                fn = if builtins.isFunction f then f else import f;
                wanted = builtins.functionArgs fn;
                auto = builtins.intersectAttrs wanted pkgs;
              in
              fn (auto // overrides);

            go = tool "go" "1.24.5";
            go_1_26 = tool "go" "1.26.8";
            buildGoModule = mkBuildGoModule go;
            buildGo126Module = mkBuildGoModule go_1_26;

            writeText =
              name: text:
              sh name "cp \"$textPath\" $out" {
                inherit text;
                passAsFile = [ "text" ];
              };
            writeShellScriptBin =
              name: text:
              sh name ''
                mkdir -p $out/bin
                { echo '#!/bin/sh'; cat "$textPath"; } > $out/bin/${name}
                chmod +x $out/bin/${name}
              '' {
                inherit text;
                passAsFile = [ "text" ];
              };
            mkShell = args: sh "nix-shell" "mkdir -p $out" { };
            dockerTools.buildLayeredImage = args: sh "${args.name}.tar.gz" "touch $out" { };

            cacert = tool "cacert" "3.0";
            coreutils = tool "coreutils" "9.7";
            gopls = tool "gopls" "0.0";
            gotools = tool "gotools" "0.0";
            go-tools = tool "go-tools" "0.0";
            goreleaser = tool "goreleaser" "2.17.0";
            cosign = tool "cosign" "3.1.3";
            go-containerregistry = tool "go-containerregistry" "0.22.1";
            nodejs = tool "nodejs" "22.0.0";
            nixfmt = tool "nixfmt" "1.0";
          };
        in
        pkgs;
    in
    {
      inherit lib;
      legacyPackages = lib.genAttrs systems pkgsFor;
    };
}
