# wrapMcpServer: give any MCP server a launcher that runs it behind bouncer,
# with the policy baked into the Nix store (read-only, so nothing at run time
# can swap it). Point the MCP client's `command` at the result's bin/NAME.
#
#   bouncer.lib.wrapMcpServer pkgs {
#     name = "filesystem";                       # bin/filesystem, and --name
#     command = "${pkgs.mcp-server-filesystem}/bin/mcp-server-filesystem";
#     args = [ "/srv/shared" ];
#     policy = {                                 # an attrset (written as JSON,
#       write_file.allowed_path_prefixes = [ "/srv/shared/out" ];  # which is YAML)
#     };                                         # or a path to a YAML file
#   }
#
# Arguments given to the launcher are passed on to the server after `args`.
{
  lib,
  writeShellScriptBin,
  writeText,
  bouncer,
}:

{
  name,
  command,
  args ? [ ],
  policy ? null,
  policyFiles ? [ ],
  serverName ? name,
  sandbox ? "auto",
  trust ? null,
  bouncerArgs ? [ ],
}:

assert lib.assertMsg (builtins.elem sandbox [
  "auto"
  "strict"
  "off"
]) "wrapMcpServer ${name}: sandbox must be auto, strict or off, not ${toString sandbox}";
assert lib.assertMsg (lib.isString command && command != "") "wrapMcpServer ${name}: command must be a non-empty string";

let
  inlinePolicy =
    if policy == null then
      [ ]
    else if builtins.isAttrs policy then
      [ (writeText "${name}-policy.yaml" (builtins.toJSON policy)) ]
    else
      [ policy ];
  policies = inlinePolicy ++ policyFiles;
  q = lib.escapeShellArg;
  flags =
    lib.concatMap (p: [
      "--policy"
      "${p}"
    ]) policies
    ++ [
      "--name"
      serverName
      "--sandbox"
      sandbox
    ]
    ++ lib.optionals (trust != null) [
      "--trust"
      "${trust}"
    ]
    ++ bouncerArgs;
in
writeShellScriptBin name ''
  exec ${q "${bouncer}/bin/bouncer"} run ${lib.concatMapStringsSep " " q flags} -- ${q command} ${lib.concatMapStringsSep " " q args} "$@"
''
