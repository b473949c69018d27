package proxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bouncer-mcp/bouncer/internal/transport"
)

// ElicitVersion is the first MCP protocol version with elicitation
// (client/elicitation, 2025-06-18), and the version a bridged session's
// client is answered.
const ElicitVersion = "2025-06-18"

// Bridging. Elicitation is between Bouncer and the client, but the client
// only uses it in a session whose protocol version has it, and the version
// is the one the server answered. Many servers in use still answer
// 2024-11-05 (the gmail, slack, github and gdrive servers Bouncer has packs
// for among them), so their clients could never be asked.
//
// So when a client that offers form elicitation asks for 2025-06-18 or
// later, and the server answers one of the versions below, Bouncer answers
// the client 2025-06-18 instead and bridges the two: the server is still
// spoken to at its own version, and the client at 2025-06-18. 2025-06-18
// and not the client's own 2025-11-25: 2025-11-25 makes JSON Schema
// 2020-12 the dialect of every schema that names none (SEP-1613), which
// would change what an old server's tool schemas mean, and lets a sampling
// answer be a list of blocks an old server can't read.
//
// What differs between the versions, and how each difference is handled
// (schema/<version>/schema.json of the specification, compared definition
// by definition):
//
//   - From the server: 2025-06-18 only added to what 2024-11-05 and
//     2025-03-26 say (title, _meta, annotations, outputSchema,
//     structuredContent, resource_link and audio content, lastModified,
//     a progress message); nothing was removed, narrowed or made
//     required, so every request, notification and result the server
//     sends is a valid 2025-06-18 one and passes unchanged. A field the
//     server sends that its version lacks passes as it was said.
//   - The initialize result: only protocolVersion changes. The
//     capabilities stay the server's: a 2024-11-05 server can't declare
//     completions (a capability since 2025-03-26), and Bouncer doesn't
//     declare it for it, so a client that follows 2025-06-18 won't ask
//     such a server for completions.
//   - JSON-RPC batches (2025-03-26 only): transport.Conn splits a batch the
//     server sends, so the client gets each message alone, as 2025-06-18
//     wants; the client's answers to it go back to the server as one array.
//   - From the client: the requests and notifications a client may send
//     are the same set in all three versions, and 2025-06-18 only added
//     optional fields to them (_meta members, a completion's context),
//     which the older schemas allow (params are open objects). They pass
//     unchanged.
//   - The client's answers to the server's requests: ping and roots/list
//     answers are the same shape. A sampling/createMessage answer may
//     hold audio content in 2025-06-18, which 2024-11-05 doesn't have:
//     an answer whose content is not a single block of a type the
//     server's version has is not forwarded, and the server gets a
//     JSON-RPC error saying why instead (bridgeAnswer).
//   - Transport: the client side is stdio. To a server over HTTP the
//     MCP-Protocol-Version header carries the server's own version, which
//     transport.Remote learns from the server's answer, not the client's.
//   - Bouncer's own elicitation/create is sent in 2025-06-18's form
//     (no mode).
//
// A session whose versions are anything else is not bridged: the client
// gets the server's answer unchanged, as before.
var bridgeable = map[string][]string{
	// The content types a sampling answer may hold, per version.
	"2024-11-05": {"text", "image"},
	"2025-03-26": {"text", "image", "audio"},
}

// bridges reports whether a session is bridged: the client offers form
// elicitation (and is asked: elicit), it asked for ElicitVersion or
// later, and the server answered a version in bridgeable.
func bridges(requested, answered string, elicit bool) bool {
	_, ok := bridgeable[answered]
	return elicit && ok && requested >= ElicitVersion
}

// bridgeVersions lists the versions a session can be bridged from, for
// messages.
func bridgeVersions() string {
	vs := make([]string, 0, len(bridgeable))
	for v := range bridgeable {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return strings.Join(vs, " and ")
}

// bridgedLocked is the server's version when the session is bridged, else
// "". p.mu is held.
func (p *Proxy) bridgedLocked() string {
	if p.told != p.negotiated {
		return p.negotiated
	}
	return ""
}

// noteServerRequest keeps, in a bridged session, the id of a sampling
// request the server sends the client, so that the client's answer can be
// checked against the server's version (bridgeAnswer).
func (p *Proxy) noteServerRequest(m *jsonrpc.Request) {
	if !m.IsCall() || m.Method != "sampling/createMessage" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bridgedLocked() == "" {
		return
	}
	if p.sampling == nil {
		p.sampling = map[jsonrpc.ID]bool{}
	}
	p.sampling[m.ID] = true
}

// forgetServerRequest drops a request the server cancelled.
func (p *Proxy) forgetServerRequest(id jsonrpc.ID) {
	p.mu.Lock()
	delete(p.sampling, id)
	p.mu.Unlock()
}

// bridgeAnswer checks the client's answer to a server request in a bridged
// session, and returns what the server gets: the answer as it came, or an
// error saying why it could not be passed on.
func (p *Proxy) bridgeAnswer(m *jsonrpc.Response) *jsonrpc.Response {
	p.mu.Lock()
	version := p.bridgedLocked()
	sampling := p.sampling[m.ID]
	delete(p.sampling, m.ID)
	p.mu.Unlock()
	if !sampling || m.Error != nil {
		return m
	}
	why := samplingMismatch(m.Result, bridgeable[version])
	if why == "" {
		return m
	}
	p.logf("the client's answer to the server's sampling request %s was not passed on: %s", transport.IDText(m.ID), why)
	return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{
		Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("bouncer: the client's answer can't be passed on: %s, which MCP %s (the version this server speaks) does not have; "+
			"the client speaks %s to Bouncer so that Bouncer can ask it about calls", why, version, ElicitVersion),
	}}
}

// samplingMismatch says why a sampling answer's content is not a single
// block of one of the types, or "".
func samplingMismatch(result json.RawMessage, types []string) string {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return "the answer is not a JSON object"
	}
	var block struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.Content, &block); err != nil || len(r.Content) == 0 || r.Content[0] != '{' {
		return "its content is not a single content block"
	}
	if !slices.Contains(types, block.Type) {
		return fmt.Sprintf("its content is of type %q", block.Type)
	}
	return ""
}
