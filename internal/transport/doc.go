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
//
// # Locks
//
// Each type's locks are its own, and they nest only within the type:
//
//   - Conn: writeMu, then owedMu. writeMu is held over the whole write of a
//     frame, so that frames never interleave, and takes owedMu to settle
//     the answer it writes. owedMu alone guards the ledger; Read releases
//     it before it writes a refusal (which takes writeMu). The noise report
//     (TolerateNoise) is called holding neither.
//   - Remote: startMu, then mu. startMu is held while the first write picks
//     the transport, across that write's HTTP requests, and so across what
//     they call: the RoundTrip (which takes mu), the authorizer
//     (RemoteConfig.Auth) and the dialer (RemoteConfig.Dial, Pins.Dial). mu
//     guards the session's state. It is never held across an HTTP request
//     (RoundTrip takes it: that would deadlock), a wait, a delivery to Read
//     or a call of the Repinner, and nothing that takes it is called with
//     it held; under it only the go-sdk connection's SessionID is asked,
//     whose lock the go-sdk never holds across a request.
//   - Pins: mu, a leaf. Check runs before it is taken.
//
// The pump writes holding at most the lock of the call it forwards or
// answers (see internal/proxy), and Remote calls the pump back (Repinner)
// holding none of these, so no cycle runs through the two packages.
package transport
