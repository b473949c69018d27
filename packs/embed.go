// Package packs holds Bouncer's built-in policy packs as data: one YAML file
// per MCP server, embedded in the binary so they need no signature.
package packs

import "embed"

// FS holds every *.yaml pack at its root.
//
//go:embed *.yaml
var FS embed.FS
