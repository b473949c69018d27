// Package policy turns YAML policy files into a validated, layered policy.
//
// A policy maps tool names to rules. A built-in pack (package packs) is
// written for one server, the npm package its header names ("Checked
// against PACKAGE VERSION"), and applies to that server only: a proxy whose
// server Recognize knows by that package (or that the user names with
// --pack) gets the pack's entries, and a tool of the same name on any other
// server does not, since its arguments are another server's (a pack's
// sink_params would leave the other server's recipient argument
// unchecked). ForServer gives the policy as it applies to one server, and
// every command that judges or describes a server's calls (run, check,
// report, serve) looks its tools up through it, so they agree by
// construction. User files come after the pack, in the order given; a
// later entry for a tool replaces the earlier one whole, so an override
// never half-inherits a pack's gate. User files are not keyed by server:
// every server that loads one gets its entries. Parsing
// is strict: unknown keys, wrong types and uncompilable patterns are errors that
// name the file, the line and the key, because a policy that is silently
// misread is worse than one that refuses to load.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bouncer-mcp/bouncer/internal/dest"
	"github.com/bouncer-mcp/bouncer/internal/filepos"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
	"github.com/bouncer-mcp/bouncer/packs"
)

// Tool is the validated rule set for one tool.
type Tool struct {
	// Name is the tool's name as the server lists it.
	Name string
	// Exfiltrating marks a tool that sends data somewhere: the sink gate runs on it.
	Exfiltrating bool
	// SinkParams names the arguments that carry destinations. Empty on an
	// exfiltrating tool means every argument is checked.
	SinkParams []string
	// TrustedDestinations are vouched recipients, allowed even when they also
	// appear in untrusted output. Trusts compares them.
	TrustedDestinations []string
	// trusted holds the canonical keys of TrustedDestinations (dest.Key).
	trusted map[string]bool
	// Implicit says whether the tool sends to a destination its arguments
	// don't name (implicit_destination): a reply goes to the sender of
	// the message it answers, whoever that is.
	Implicit Implicit
	// SinkKinds maps sink arguments to the kind of directory entry they
	// name (sink_kinds: {channel: channel}): a whole entry of a directory
	// of that kind vouches for such an argument's value.
	SinkKinds map[string]string
	// WriteParams names the arguments that carry paths to confine.
	WriteParams []string
	// AllowedPathPrefixes are absolute, cleaned prefixes (relative ones in a
	// file are resolved against that file's directory at load time). Empty
	// means no path confinement.
	AllowedPathPrefixes []string
	// RelativePaths says how a relative path in a write param is read:
	// refused (the default), or resolved against a directory and then
	// judged and forwarded as the absolute path.
	RelativePaths RelativePaths
	// ArgPatterns are checked in file order; each must match a whole value.
	ArgPatterns []ArgPattern
	// MaxCalls is the per-session budget; nil means unlimited, 0 forbids the tool.
	MaxCalls *int
	// CountsAs lists other tools whose budget a call also uses when its
	// arguments match: a relabel to TRASH is a delete.
	CountsAs []CountsAs
	// TrustedOutput marks a tool whose output is the user's own data (a
	// contacts directory, the user's sent mail): a destination found there,
	// and in no untrusted output, is allowed. Its output is not recorded as
	// untrusted.
	TrustedOutput bool
	// Directory names the kind of entry the tool lists (directory:
	// channel): each whole entry of its output vouches for arguments of
	// that kind (SinkKinds), and for nothing else. Its output is still
	// recorded as untrusted.
	Directory string
	// AnchorRecords opts the tool's records in to anchoring
	// (anchor_records: true): a record of its structuredContent that the
	// user named by its title, subject, file name or amount, and that the
	// name picks alone, vouches for a send to the whole set of one of its
	// people fields (see package session).
	AnchorRecords bool
	// AnchorText (anchor_records: text_json) also takes records from a
	// text block of the result when the whole block is one JSON object
	// or array, strictly (no comments, no key twice), for servers that
	// send their data as JSON text instead of structuredContent. The
	// policy declares it: structure is never guessed from text.
	AnchorText bool
	// AlwaysAsk (approval: always) makes every call ask a human, bound to
	// its exact arguments, even when every other check passes: an
	// in-place action no argument check can judge (unlock a door, delete
	// a repository, disable two-factor authentication).
	AlwaysAsk bool
	// Source says where the entry came from, for reasons and reports:
	// "pack gmail", "/abs/bouncer.yaml:12", or "fallback".
	Source string
	// Fallback is true when no pack or user entry named the tool and the
	// entry was derived from argument names.
	Fallback bool
	// Replaced is the entry (a pack's, or an earlier file's) this one
	// replaced whole, if any: Lint warns when the replacement drops a gate.
	Replaced *Tool
}

// Trusts reports whether d is one of the tool's trusted_destinations: the
// same destination in its canonical form (package dest), never a folded
// or partial match.
func (t *Tool) Trusts(d string) bool {
	if len(t.trusted) == 0 {
		return false
	}
	k, ok := dest.Canon(d)
	return ok && t.trusted[k]
}

// Implicit is the implicit_destination key of an exfiltrating tool.
type Implicit int

// The values of implicit_destination.
const (
	// ImplicitUnstated: the key is absent. A call that names none of the
	// tool's destinations may still send to one (the tool's server picks
	// it), so it is asked about, never allowed.
	ImplicitUnstated Implicit = iota
	// ImplicitYes: every call also sends to a destination its arguments
	// don't name (reply_email: the sender of messageId). Every call is
	// asked about, bound to its arguments, even when the destinations it
	// names pass.
	ImplicitYes
	// ImplicitNo: a call that names none of the tool's destinations sends
	// to no one (a calendar event without participants stays in the
	// user's calendar), so it is allowed.
	ImplicitNo
)

// CountsAs is one counts_as entry: a call in which any pattern of When
// matches its argument (the whole value; for a list, any element) takes a
// slot of Tool's budget as well as its own.
type CountsAs struct {
	Tool string
	When []ArgPattern
}

// RelativePaths is the relative_paths key: how the server resolves a
// relative path, so the engine can judge (and forward) the absolute path it
// means. The zero value refuses relative paths.
type RelativePaths struct {
	// Mode is RelativeDeny, RelativeWorkDir or RelativeDir.
	Mode RelativeMode
	// Dir is the absolute, cleaned directory of RelativeDir.
	Dir string
}

// RelativeMode is how relative paths are read.
type RelativeMode int

// The relative_paths modes.
const (
	// RelativeDeny refuses a relative path: servers resolve them against
	// different bases (their working directory, their allowed directories).
	RelativeDeny RelativeMode = iota
	// RelativeWorkDir resolves against the server's working directory.
	RelativeWorkDir
	// RelativeDir resolves against RelativePaths.Dir.
	RelativeDir
)

// Words of the relative_paths key.
const (
	RelativeDenyWord    = "deny"
	RelativeWorkDirWord = "workdir"
)

// String is the key's value as written in a policy: "deny", "workdir" or the
// directory.
func (r RelativePaths) String() string {
	switch r.Mode {
	case RelativeWorkDir:
		return RelativeWorkDirWord
	case RelativeDir:
		return r.Dir
	}
	return RelativeDenyWord
}

// ArgPattern is one arg_patterns entry: Re matches the whole value.
type ArgPattern struct {
	Arg     string
	Pattern string         // as written in the file
	Re      *regexp.Regexp // compiled as ^(?:Pattern)$
}

// Confinement is the reserved top-level `sandbox:` key of a policy file: how
// the upstream server itself is confined by the kernel (package sandbox).
type Confinement struct {
	// ReadWrite are absolute paths the upstream may read and write.
	ReadWrite []string
	// ReadOnly are extra absolute paths the upstream may read (system
	// directories are always readable).
	ReadOnly []string
	// ConnectTCP lists the TCP ports the upstream may connect to; empty means none.
	ConnectTCP []int
	// Source is "FILE:LINE" of the key, for messages.
	Source string
}

// OwnFiles is the own_files key: the strongest form bouncer run may use to
// keep the upstream off Bouncer's own files.
type OwnFiles struct {
	// Form is one of OwnFilesForms.
	Form string
	// Source is "FILE:LINE" of the key, for messages.
	Source string
}

// Policy is the layered result of the user files and, for the server it
// is for (ForServer), that server's pack. It is immutable after Load and
// safe for concurrent use.
type Policy struct {
	tools map[string]*Tool // the user files' entries
	// pack is the built-in pack of the server the policy is for (see
	// ForServer); "" for none. packEntries are its entries by tool name,
	// found once by ForServer, since every call looks a tool up.
	pack        string
	packEntries map[string]*Tool
	// Sandbox is the upstream confinement from the last user file that set
	// one, or nil.
	Sandbox *Confinement
	// Files lists the user files in load order (absolute paths).
	Files []string
	// Isolated is true when the last file that set shared_session set it
	// false: the server keeps its own history, apart from its client's
	// other servers.
	Isolated bool
	// OwnFiles is the own_files key of the last user file that set it, or
	// nil (bouncer run then uses the strongest form the kernel allows).
	OwnFiles *OwnFiles
	// own holds the canonical keys of own_destinations (dest.Key).
	own map[string]bool

	// data holds each source's exact bytes in load order, for Digest.
	data [][]byte
}

// Digest identifies the effective policy set: a SHA-256 over the built-in
// packs, each policy file's exact bytes in load order, and the binary's
// version, as "sha256:HEX". Every audit line carries it, so a security team
// can tell which machines run which policy and which policy made each
// decision; `bouncer policy digest` prints it for the same flags. Each part
// is length-prefixed, so no two different sets share a digest by moving
// bytes from one file to the next.
func (p *Policy) Digest(version string) string {
	h := sha256.New()
	part := func(kind string, b []byte) {
		fmt.Fprintf(h, "%s %d\n", kind, len(b))
		h.Write(b)
	}
	part("bouncer-policy-digest", []byte("1"))
	part("version", []byte(version))
	packs, _ := loadPacks()
	for _, pk := range packs {
		part("pack", []byte(pk.name))
		part("pack-data", pk.data)
	}
	for _, d := range p.data {
		part("file", d)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Error is a problem in a policy file: the one file-position error
// (package filepos), so its text is "FILE:LINE: KEY: problem", the form
// `bouncer run` and `bouncer check` print before exiting 2. File is the
// path as given, or a pack's "packs/NAME.yaml"; Key is the tool and key at
// fault, e.g. "send_email.sink_params".
type Error = filepos.Error

// Source is one user policy document: Name is used in errors, Dir resolves
// relative path prefixes, Data is the YAML.
type Source struct {
	Name string
	Dir  string
	Data []byte

	abs  string // absolute path of a file read by Load, for Tool.Source
	pack string // pack name when the document is a built-in pack
}

// Pack describes one built-in pack.
type Pack struct {
	Name  string   // "gmail"
	Tools []string // tool names it configures, sorted
	Data  []byte   // the YAML as embedded
	// Package is the npm package of the server the pack was written for
	// and checked against, from its header ("# Checked against PACKAGE
	// VERSION"): the server it applies to.
	Package string
}

// Load layers the built-in packs and then each user file in order, with
// no trust check. Any problem in any file is an *Error and no policy is
// returned. It is for tests and examples: a command asks setup.LoadPolicy
// what is in force, which also reads the installed set and checks every
// file's signature as bouncer run does.
func Load(files ...string) (*Policy, error) { return LoadFiles(nil, files) }

// LoadFiles reads each file, calls check (when not nil) on its absolute
// path and exact bytes before they are parsed, so the bytes that were
// checked are the bytes that take effect even if the file is replaced
// meanwhile, and layers the documents in extra after the files. An error
// from check is returned as it is. setup.LoadPolicy is its caller: which
// files are in force and what check they get is decided there, once.
func LoadFiles(check func(file string, data []byte) error, files []string, extra ...Source) (*Policy, error) {
	srcs := make([]Source, 0, len(files)+len(extra))
	for _, f := range files {
		data, err := ReadFile(f)
		if err != nil {
			return nil, &Error{File: f, Msg: err.Error()}
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, &Error{File: f, Msg: err.Error()}
		}
		if check != nil {
			if err := check(abs, data); err != nil {
				return nil, err
			}
		}
		srcs = append(srcs, Source{Name: f, Dir: filepath.Dir(abs), Data: data, abs: abs})
	}
	return LoadSources(append(srcs, extra...)...)
}

// LoadSources is the parser underneath every loader: the packs, then
// documents already in memory, in order. Called directly it judges
// documents, not what is in force (serve's validate_policy and the protect
// guard judge a text someone wrote); what a command enforces or describes
// comes from setup.LoadPolicy, which reads the files through LoadFiles.
func LoadSources(srcs ...Source) (*Policy, error) {
	named := make([]Source, len(srcs))
	for i, s := range srcs {
		if s.Name == "" {
			s.Name = "policy"
		}
		named[i] = s
	}
	return load(named)
}

func load(srcs []Source) (*Policy, error) {
	p := &Policy{tools: map[string]*Tool{}}
	if _, err := loadPacks(); err != nil {
		return nil, err
	}
	for _, s := range srcs {
		doc, err := parse(s, false)
		if err != nil {
			return nil, err
		}
		for _, t := range doc.tools {
			if old, ok := p.tools[t.Name]; ok {
				t.Replaced = old
			}
			p.tools[t.Name] = t
		}
		if doc.sandbox != nil {
			p.Sandbox = doc.sandbox
		}
		if doc.shared != nil {
			p.Isolated = !*doc.shared
		}
		if doc.own != nil {
			p.own = doc.own
		}
		if doc.ownFile != nil {
			p.OwnFiles = doc.ownFile
		}
		if s.abs != "" {
			p.Files = append(p.Files, s.abs)
		} else {
			p.Files = append(p.Files, s.Name)
		}
		p.data = append(p.data, s.Data)
	}
	return p, nil
}

// Own reports whether d is one of the user's own destinations
// (own_destinations), in canonical form.
func (p *Policy) Own(d string) bool {
	if p == nil || len(p.own) == 0 {
		return false
	}
	k, ok := dest.Canon(d)
	return ok && p.own[k]
}

// ForServer returns the policy as it applies to a server that pack was
// written for (one of Packs' names, from Recognize or the user's --pack),
// or to a server no pack was written for (""): the user files' entries
// over that pack's, and no other pack's. An unknown pack is an error.
func (p *Policy) ForServer(pack string) (*Policy, error) {
	if pack != "" {
		if err := CheckPack(pack); err != nil {
			return nil, err
		}
	}
	v := *p
	v.pack, v.packEntries = pack, packTools(pack)
	return &v, nil
}

// Pack is the built-in pack of the server the policy is for, or "".
func (p *Policy) Pack() string {
	if p == nil {
		return ""
	}
	return p.pack
}

// Lookup returns the user entry for tool, else the entry of the pack of
// the server the policy is for, if there is one. It is the one lookup:
// For, ForCall, Names and Lint go through it, and so do the engine, the
// review pack and check.
func (p *Policy) Lookup(tool string) (*Tool, bool) {
	if p == nil {
		return nil, false
	}
	if t, ok := p.tools[tool]; ok {
		return t, ok
	}
	t, ok := p.packEntries[tool]
	return t, ok
}

// replaced is the entry that t, a user entry for tool, replaced whole: an
// earlier file's, else the pack's of the server the policy is for.
func (p *Policy) replaced(tool string, t *Tool) *Tool {
	if t.Replaced != nil {
		return t.Replaced
	}
	return p.packEntries[tool]
}

// For returns the entry for tool, or, for a tool no pack or file names, the
// fallback derived from its name and params (the pinned schema's property
// names): destination-shaped names become sinks of a tool whose name says
// it sends, matched as whole names, never by substring.
func (p *Policy) For(tool string, params []string) *Tool {
	if t, ok := p.Lookup(tool); ok {
		return t
	}
	return fallback(TraitsOf(tool, ""), params, nil, false)
}

// ForCall is For for one call: description is the pinned tool's
// description, schemaParams its schema's property names, args the call's
// arguments. For a tool no pack or file names, an argument is a sink also
// when a key inside its value, at any depth, is destination-shaped
// ({"hook": {"url": ...}}, {"settings": {"forward_to": ...}}): the server
// reads that key as where to send. And a tool whose name says it sets
// something up (create, update, set, add, configure...) sends when such an
// argument or key holds a value that is a destination
// (dest.IsDestination): it registers where the server will send.
func (p *Policy) ForCall(tool, description string, schemaParams []string, args map[string]any) *Tool {
	return p.ForPinned(TraitsOf(tool, description), schemaParams, args)
}

// ForPinned is ForCall with the tool's name and description read
// beforehand (TraitsOf), as the engine does once per pinned tool.
func (p *Policy) ForPinned(tr Traits, schemaParams []string, args map[string]any) *Tool {
	if t, ok := p.Lookup(tr.tool); ok {
		return t
	}
	params := schemaParams
	var nested []string
	holds := false
	for name, v := range args {
		if !slices.Contains(schemaParams, name) {
			if len(params) == len(schemaParams) {
				params = slices.Clip(schemaParams)
			}
			params = append(params, name) // an argument the schema doesn't declare
		}
		if holdsDestinationKey(v) {
			nested = append(nested, name)
		}
		holds = holds || (IsDestinationName(name) && holdsDestination(v)) || registersNested(v)
	}
	sort.Strings(params[len(schemaParams):])
	return fallback(tr, params, nested, holds)
}

// holdsDestinationKey reports whether a key inside v, at any depth, is
// destination-shaped (IsDestinationName).
func holdsDestinationKey(v any) bool {
	return eachDestinationKey(v, func(any) bool { return true })
}

// registersNested reports whether a destination-shaped key inside v, at
// any depth, holds a value that is a destination.
func registersNested(v any) bool { return eachDestinationKey(v, holdsDestination) }

// eachDestinationKey calls fn on the value of each destination-shaped key
// inside v, at any depth, until fn returns true, and reports whether one
// did.
func eachDestinationKey(v any, fn func(any) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if (IsDestinationName(k) && fn(e)) || eachDestinationKey(e, fn) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if eachDestinationKey(e, fn) {
				return true
			}
		}
	}
	return false
}

// holdsDestination reports whether v is, or lists, a value that is a
// destination (dest.IsDestination) and nothing else: a bare name of two
// labels ("README.md", "setup.py") is as often a file or an entity as a
// host (dest.MayBeFileName), and that ambiguity must end in a question (the
// value is still judged, and a tainted one asked about), not in a deny
// because the tool was taken for one that registers where it sends.
func holdsDestination(v any) bool {
	switch x := v.(type) {
	case string:
		return dest.IsDestination(x) && !dest.MayBeFileName(x)
	case []any:
		for _, e := range x {
			if holdsDestination(e) {
				return true
			}
		}
	}
	return false
}

// Names lists the tools the policy configures for its server, sorted: the
// user files' and its pack's.
func (p *Policy) Names() []string {
	if p == nil {
		return nil
	}
	seen := map[string]bool{}
	names := make([]string, 0, len(p.tools))
	for n := range p.tools {
		seen[n] = true
		names = append(names, n)
	}
	for n := range p.packEntries {
		if !seen[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Packs lists the built-in packs, sorted by name. A pack that does not parse
// is a build defect that the package's tests catch; Packs leaves it out, and
// Load reports it.
func Packs() []Pack {
	packs, _ := loadPacks()
	out := make([]Pack, 0, len(packs))
	for _, pk := range packs {
		names := make([]string, 0, len(pk.tools))
		for _, t := range pk.tools {
			names = append(names, t.Name)
		}
		sort.Strings(names)
		out = append(out, Pack{Name: pk.name, Tools: names, Data: pk.data, Package: pk.pkg})
	}
	return out
}

// PackNames lists the built-in packs' names, sorted.
func PackNames() []string {
	var out []string
	for _, pk := range Packs() {
		out = append(out, pk.Name)
	}
	return out
}

// CheckPack reports whether name is one of the built-in packs, with an
// error naming them when it is not.
func CheckPack(name string) error {
	if packTools(name) == nil {
		return fmt.Errorf("there is no built-in pack %q (the packs: %s)", name, strings.Join(PackNames(), ", "))
	}
	return nil
}

// PackFor returns the pack written for the npm package pkg, or "".
func PackFor(pkg string) string {
	for _, pk := range Packs() {
		if pk.Package == pkg {
			return pk.Name
		}
	}
	return ""
}

// Recognize tells which built-in pack was written for the server that
// command and args launch, and returns the arguments that follow the
// server's name (for the filesystem server, its directories). It knows
// the server by the package its pack was checked against, however it is
// started: through npx (or bunx, pnpm dlx), `node .../node_modules/PACKAGE/...`,
// its installed binary (mcp-server-NAME), or Docker's mcp/NAME image. A
// server it does not know gets no pack: its tools get the user's entries
// and the fallback, never another server's pack.
func Recognize(command string, args []string) (pack string, rest []string, ok bool) {
	words := append([]string{command}, args...)
	for _, p := range Packs() {
		pkg := p.Package
		bin := "mcp-" + pkg[strings.LastIndexByte(pkg, '/')+1:]
		image := regexp.MustCompile(`^([^/\s]+/)?mcp/` + regexp.QuoteMeta(p.Name) + `(:[^/\s]*)?$`)
		for i, w := range words {
			if w == pkg || strings.HasPrefix(w, pkg+"@") || strings.Contains(w, "/node_modules/"+pkg+"/") ||
				filepath.Base(w) == bin || image.MatchString(w) {
				return p.Name, words[i+1:], true
			}
		}
	}
	return "", nil, false
}

// packTools is the entries of the pack named pack by tool name; nil for
// "" or a name no pack has.
func packTools(pack string) map[string]*Tool {
	if pack == "" {
		return nil
	}
	packs, _ := loadPacks()
	for _, pk := range packs {
		if pk.name == pack {
			return pk.byName
		}
	}
	return nil
}

var checkedAgainst = regexp.MustCompile(`(?m)^# Checked against (\S+) `)

type loadedPack struct {
	name   string
	pkg    string // the npm package it was written for
	data   []byte
	tools  []*Tool
	byName map[string]*Tool
}

var (
	packsOnce sync.Once
	packsList []loadedPack
	packsErr  error
)

// loadPacks parses the embedded packs once; they are immutable, so every
// Policy shares their *Tool values.
func loadPacks() ([]loadedPack, error) {
	packsOnce.Do(func() {
		entries, err := fs.ReadDir(packs.FS, ".")
		if err != nil {
			packsErr = &Error{File: "packs", Msg: err.Error()}
			return
		}
		// fs.ReadDir sorts by file name, which is the layering order.
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			data, err := fs.ReadFile(packs.FS, e.Name())
			if err != nil {
				packsErr = &Error{File: "packs/" + e.Name(), Msg: err.Error()}
				return
			}
			name := strings.TrimSuffix(e.Name(), ".yaml")
			doc, err := parse(Source{Name: "packs/" + e.Name(), Data: data, pack: name}, true)
			if err != nil {
				packsErr = err
				return
			}
			m := checkedAgainst.FindSubmatch(data)
			if m == nil {
				packsErr = &Error{File: "packs/" + e.Name(), Msg: `the pack names no server ("# Checked against PACKAGE VERSION" in its header), so it could apply to none`}
				return
			}
			byName := map[string]*Tool{}
			for _, t := range doc.tools {
				byName[t.Name] = t
			}
			packsList = append(packsList, loadedPack{name: name, pkg: string(m[1]), data: data, tools: doc.tools, byName: byName})
		}
	})
	return packsList, packsErr
}

// MaxFileSize bounds a policy document: a real one is a few kilobytes, and
// the parser should not be handed a disk image by a typo in --policy.
const MaxFileSize = 4 << 20

const maxPolicyBytes = MaxFileSize

// ReadFile reads a policy file, refusing one larger than MaxFileSize.
func ReadFile(path string) ([]byte, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPolicyBytes {
		return nil, fmt.Errorf("larger than %d bytes; not a policy file", maxPolicyBytes)
	}
	return data, nil
}
