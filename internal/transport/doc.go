// Package transport moves MCP messages to and from the two ends of a
// Bouncer session, and judges none of them: that is internal/proxy's, which
// pumps between what this package gives it.
//
//   - Conn is newline-delimited JSON-RPC over a byte stream: the client's
//     side on stdio (Stdio), and a stdio server's. It reads ids exactly,
//     refuses what it can't carry exactly (a request it can't answer
//     once), keeps the ledger of the answers owed to a side, and passes
//     over a stdio server's log lines (TolerateNoise).
//   - Process is a local server started as a child (Start), in its own
//     process group, with a Conn on its stdin and stdout.
//   - Remote is a session with a server over streamable HTTP or the older
//     HTTP+SSE, on the go-sdk's client transports: it keeps the server's
//     event stream open, authorizes requests, hides secrets, and starts a
//     new session in place of one a restarted server forgot.
//   - Pins keeps a sandboxed proxy's dialing to the addresses a name
//     resolved to before the sandbox.
//
// Upstream is what the pump needs of a server end. Where a transport needs
// the pump's judgement (a call judged on a session the server forgot,
// before it goes to the new one), it asks through Repinner, which the pump
// implements; this package imports nothing that judges (engine, approval,
// audit, taint), so the judging can't happen here by accident.
package transport
