# The bouncer image built by Nix (`nix build .#image`, then
# `docker load < result`): the same shape as container/Dockerfile, bouncer
# alone and nonroot, with the state directory a volume.
{
  dockerTools,
  cacert,
  bouncer,
}:

dockerTools.buildLayeredImage {
  name = "bouncer";
  tag = bouncer.version;
  contents = [ cacert ];
  # The state directory must exist, owned by nonroot, for a fresh volume to
  # be writable; there is no shell in the image to create it later.
  extraCommands = ''
    mkdir -p var/lib/bouncer tmp
    chmod 1777 tmp
  '';
  fakeRootCommands = ''
    chown 65532:65532 var/lib/bouncer
    chmod 0700 var/lib/bouncer
  '';
  enableFakechroot = false;
  config = {
    Entrypoint = [ "${bouncer}/bin/bouncer" ];
    User = "65532:65532";
    Env = [
      "BOUNCER_HOME=/var/lib/bouncer"
      "SSL_CERT_FILE=${cacert}/etc/ssl/certs/ca-bundle.crt"
    ];
    Volumes = {
      "/var/lib/bouncer" = { };
    };
    Labels = {
      "org.opencontainers.image.title" = "bouncer";
      "org.opencontainers.image.source" = "https://github.com/bouncer-mcp/bouncer";
      "org.opencontainers.image.licenses" = "MIT";
      "org.opencontainers.image.version" = bouncer.version;
    };
  };
}
