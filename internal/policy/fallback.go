package policy

import (
	"slices"
	"strings"
	"unicode"
)

// The fallback reads names as words: a tool or argument name is split on
// '_', '-', '.', spaces and camelCase boundaries ("deleteCustomer" →
// delete, customer; "HTMLBody" → html, body) and lowercased (ASCII only).
// Every rule below compares whole words, never substrings, so "confirm"
// holds no "rm" and "get_output" no "put".

// destNames are argument names that are a destination as a whole, written as
// their words joined by '_' ("emailAddress" is "email_address").
var destNames = setOf(
	"to", "cc", "bcc", "recipient", "recipients", "email", "emails", "e_mail",
	"address", "addresses", "email_address", "email_addresses",
	"url", "urls", "uri", "uris", "webhook", "webhooks", "endpoint", "endpoints",
	"channel", "channels", "share_with", "shared_with", "destination", "dest",
	"reply_to", "forward", "forward_to", "send_to", "share_to", "phone", "phone_number", "phone_numbers",
	"invitee", "invitees", "attendee", "attendees",
)

// destLastWords make a name a destination when they are its last word:
// webhook_url, recipient_email, emailAddress, callback_uri, notify_channel,
// event_participants, guest_list.
//
// to, cc and bcc count as a last word only after a word other than reply
// (emailTo, mail_to; not in_reply_to, whose value is a message id, in every
// mail server's schema), and to as a first word (to_number,
// to_account_id).
var destLastWords = setOf(
	"email", "emails", "address", "addresses", "recipient", "recipients",
	"url", "urls", "uri", "uris", "webhook", "webhooks", "endpoint", "endpoints",
	"channel", "channels", "destination", "destinations", "invitee", "invitees",
	"attendee", "attendees", "participant", "participants", "guest", "guests",
	"member", "members", "payee", "payees", "website", "websites",
)

// destOwners are words that make a following id, name, number or list a
// destination: channel_id, chatId, recipient_ids, room_name, payee_id,
// to_account_number, recipientList. A bare user_id is not one: reading a
// profile by id is the common case, and sending to a user goes through a
// recipient- or channel-shaped argument.
var destOwners = setOf("channel", "recipient", "chat", "room", "conversation", "webhook", "destination", "mailbox", "inbox",
	"account", "payee", "guest", "member", "participant", "contact", "phone")
var idWords = setOf("id", "ids", "name", "names", "number", "numbers", "list")

// writeVerbs in a tool's name make its path-shaped arguments write params.
var writeVerbs = setOf(
	"write", "create", "save", "put", "upload", "edit", "move", "copy", "append",
	"rename", "update", "overwrite", "replace", "patch", "insert", "mkdir", "touch",
	"download", "export", "store",
)

// pathNames are path-shaped argument names (whole), and pathLastWords make a
// name path-shaped as its last word (output_path, target_file, save_dir).
var pathNames = setOf("path", "paths", "file", "files", "filename", "filenames", "file_name", "filepath", "dest", "destination", "target", "source", "src", "dst", "output", "out", "outfile", "dir", "directory", "folder")
var pathLastWords = setOf("path", "paths", "file", "filename", "filepath", "dir", "directory", "folder")

// The verbs of a tool's name (and, failing that, of its description) are
// a hint of what it does: the fallback judges a tool by the destinations
// its values are (see package engine), and the verb only says how hard.
// A tainted destination is denied in a tool that sends, pays, shares,
// grants or invites, and asked about in any other; an untainted one that
// nothing vouches for is asked about in a tool that sends.
//
// sendVerbs send data, money or access to someone: messages, payments and
// transfers, grants and invitations, and personal data filled in or
// submitted to a website. Names written as one word with no case
// (replyall, SENDMAIL, sendmessage) split into no words, so the usual ones
// are listed whole.
var sendVerbs = setOf("send", "reply", "respond", "answer", "forward", "post", "publish", "share", "invite", "notify", "broadcast",
	"dm", "announce", "submit", "upload", "dispatch", "ship", "deliver", "redirect", "transmit", "dial", "fax",
	"pay", "transfer", "withdraw", "deposit", "wire", "remit", "refund", "donate", "tip",
	"grant", "authorize", "delegate",
	"fill", "autofill",
	"replyall", "sendmail", "sendemail", "sendmessage", "sendmsg", "sendsms", "sendtext", "postmessage", "forwardmessage", "forwardemail", "replyemail")

// replyVerbs in the name of a tool that sends make it send to a
// destination its arguments don't name, whatever they name besides.
var replyVerbs = setOf("reply", "replyall", "replyemail", "respond")

// sendNouns name a message as often as they say to send one (get_email,
// ReadTweet): they say the tool sends only when its name has no other
// verb (email_contact, message_user, text_customer).
var sendNouns = setOf("email", "mail", "message", "text", "sms", "tweet", "call", "chat")

// readVerbs, first among a name's verbs, say it reads: get_post or
// TwitterManagerReadTweet sends nothing, whatever noun follows.
var readVerbs = setOf("get", "list", "read", "search", "fetch", "find", "describe", "show", "view", "query", "count", "check", "lookup",
	"download", "export", "retrieve", "browse", "look", "scan", "inspect", "preview", "access")

// otherVerbs do something else in place: they stop nothing, but a name
// whose verbs are all of these says it does not send.
var otherVerbs = setOf("create", "update", "set", "manage", "modify", "edit", "change", "schedule", "move", "copy", "rename",
	"write", "save", "make", "generate", "convert", "extract", "parse", "translate", "format", "leave", "join", "cancel",
	"start", "stop", "run", "execute", "go", "place", "enable", "disable", "unlock", "lock", "give", "mark", "label",
	"archive", "add", "install", "configure", "register", "book", "reserve", "open", "close", "play", "turn", "control",
	"subscribe")

// toolkitWords end a toolkit's name inside a tool's (FedExShipManager,
// EmergencyDispatchSystem): the verb before one is the toolkit's, not the
// tool's.
var toolkitWords = setOf("manager", "system")

// verbs lists the verbs of a tool's name, in order, each in its base form
// (sharing → share, sends → send): words of the name that are verbs of
// any list above, but for a toolkit's (see toolkitWords).
func verbs(words []string) []string {
	var out []string
	for i, w := range words {
		b := baseForm(w)
		if b == "" || (i > 0 && i+1 < len(words) && toolkitWords[words[i+1]]) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// baseForm returns the verb a word is a form of (the word itself, or its
// -s, -es or -ing form), or "" when it is none. -ed forms are left out:
// "posted" and "shared" describe what was done, not what the tool does.
func baseForm(w string) string {
	isVerb := func(v string) bool {
		return sendVerbs[v] || readVerbs[v] || deleteVerbs[v] || otherVerbs[v] || writeVerbs[v]
	}
	for _, c := range []string{w, strings.TrimSuffix(w, "s"), strings.TrimSuffix(w, "es"), strings.TrimSuffix(w, "ing"), strings.TrimSuffix(w, "ing") + "e"} {
		if c != "" && (c == w || len(c) < len(w)) && isVerb(c) {
			return c
		}
	}
	return ""
}

// Sends reports whether a tool's name, or its description where the name
// says nothing, says it sends, pays, shares, grants or invites:
//
//   - the name's first verb is a read or a delete: no (get_post,
//     delete_post, TwitterManagerReadTweet);
//   - a verb of the name sends: yes (send_email, create_and_send,
//     AugustSmartLockGrantGuestAccess, BankManagerPayBill);
//   - the name has no verb but a noun that names a message: yes
//     (email_contact, message_user);
//   - otherwise the description's first sentence, read the same way:
//     its first verb a read or a delete, no; a verb that sends, yes
//     ("Manages shipments, including redirecting ...").
func Sends(tool, description string) bool {
	words := Words(tool)
	vs := verbs(words)
	if len(vs) > 0 && (readVerbs[vs[0]] || deleteVerbs[vs[0]]) {
		return false
	}
	for _, v := range vs {
		if sendVerbs[v] {
			return true
		}
	}
	if len(vs) == 0 {
		for _, w := range words {
			if sendNouns[w] {
				return true
			}
		}
	}
	first, _, _ := strings.Cut(description, ". ")
	dv := verbs(proseWords(first))
	if len(dv) == 0 || readVerbs[dv[0]] || deleteVerbs[dv[0]] {
		return false
	}
	for _, v := range dv {
		if sendVerbs[v] {
			return true
		}
	}
	return false
}

// proseWords splits a description into lower-case words at everything
// that is not a letter or a digit ("redirecting," is redirecting).
func proseWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// registerVerbs, first among a name's verbs, set something up that the
// server acts on later: a destination given there registers where it
// will send (a webhook's URL, a profile's new address).
var registerVerbs = setOf("create", "update", "set", "add", "configure", "register", "edit", "modify", "change",
	"save", "put", "patch", "insert", "replace", "store", "subscribe")

// registers reports whether a tool's name says it sets something up
// (its first verb is one of registerVerbs).
func registers(tool string) bool {
	vs := verbs(Words(tool))
	return len(vs) > 0 && registerVerbs[vs[0]]
}

// deleteVerbs in a tool's name give it the fallback budget.
var deleteVerbs = setOf("delete", "remove", "rm", "rmdir", "del", "drop", "destroy", "purge", "erase", "wipe", "truncate", "unlink", "trash", "shred")

// FallbackDeleteBudget is the max_calls a tool gets when no entry names it
// and a word of its name is a delete verb: enough for a legitimate cleanup,
// not for a hijacked agent's mass deletion.
const FallbackDeleteBudget = 2

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Words splits a tool or argument name into lowercase words the way the
// fallback reads it. Exported so reports can show why a rule fired.
func Words(name string) []string { return appendWords(nil, name) }

// nameWords is Words into a buffer on the caller's stack: the name tests
// run on every argument of every call, and most names have a few words.
func nameWords(buf *[8]string, name string) []string { return appendWords(buf[:0], name) }

// appendWords appends name's words (see Words) to words.
func appendWords(words []string, name string) []string {
	// The word being read is name[start:i]: a word already in lower case
	// is taken as it is, without a copy.
	start := 0
	flush := func(i int) {
		if i > start {
			words = append(words, strings.ToLower(name[start:i]))
		}
		start = i
	}
	isUpper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	isLower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' || c == ':':
			flush(i)
			start = i + 1
			continue
		case isUpper(c) && i > start:
			prev := name[i-1]
			// aB → a|B; ABc → A|Bc (the end of an acronym)
			if !isUpper(prev) || (i+1 < len(name) && isLower(name[i+1])) {
				flush(i)
			}
		}
	}
	flush(len(name))
	return words
}

// IsDestinationName reports whether an argument name is destination-shaped
// (to, cc, bcc, recipient, recipients, email, address, url, channel,
// share_with, ...). The comparison is on the whole name, ignoring ASCII case,
// so "confirm" or "channel_topic" are not destinations.
//
// The rules, on the name's words (see Words): the whole name is one of a
// fixed list (to, cc, recipients, webhook, share_with, reply_to, ...); or its
// last word is an address-like word (webhook_url, recipient_email,
// emailAddress, callback_uri, guests, website); or it ends in to, cc or bcc
// after a word other than reply (emailTo), or starts with to (to_number);
// or it is a channel, recipient, chat, room, account, payee, guest, member,
// contact or phone followed by id, name, number or list (channel_id,
// payee_id, recipientList).
//
// Names are a hint only where a tool sends: the fallback judges every
// other tool by the destinations its values are.
func IsDestinationName(name string) bool {
	var buf [8]string
	w := nameWords(&buf, name)
	if len(w) == 0 {
		return false
	}
	last := w[len(w)-1]
	if destNames[strings.Join(w, "_")] || destLastWords[last] {
		return true
	}
	if len(w) >= 2 && (last == "to" || last == "cc" || last == "bcc") && w[len(w)-2] != "reply" {
		return true // emailTo, mail_to; not in_reply_to
	}
	if len(w) >= 2 && w[0] == "to" {
		return true // to_number, to_account_id
	}
	return len(w) >= 2 && idWords[last] && destOwners[w[len(w)-2]]
}

// IsPathName reports whether an argument name is path-shaped (path, file,
// filename, dir, output_path, target_file, save_dir, ...), by the same
// whole-word rules as IsDestinationName.
func IsPathName(name string) bool {
	var buf [8]string
	w := nameWords(&buf, name)
	if len(w) == 0 {
		return false
	}
	return pathNames[strings.Join(w, "_")] || pathLastWords[w[len(w)-1]]
}

// commandNames are argument names whose value is a command line or code
// (command, cmd, script, code, args, ...), judged whole by their words
// joined by '_' or by their last word: a path inside such a value is read
// by a shell or an interpreter.
var commandNames = setOf("command", "commands", "cmd", "cmds", "cmdline", "command_line", "script", "scripts",
	"code", "source_code", "shell", "exec", "args", "argv", "arguments", "program", "statement", "expression")
var commandLastWords = setOf("command", "commands", "cmd", "cmdline", "script", "code", "args", "argv")

// IsCommandName reports whether an argument name holds a command line or
// code (command, shell_command, cmd, script, python_code, args), by the
// same whole-word rules as IsDestinationName.
func IsCommandName(name string) bool {
	var buf [8]string
	w := nameWords(&buf, name)
	if len(w) == 0 {
		return false
	}
	return commandNames[strings.Join(w, "_")] || commandLastWords[w[len(w)-1]]
}

func hasWord(name string, set map[string]bool) bool {
	var buf [8]string
	for _, w := range nameWords(&buf, name) {
		if set[w] {
			return true
		}
	}
	return false
}

// fallback derives an entry for a tool no pack or file names. On a tool
// whose name has a write verb, a path-shaped argument is a write param
// rather than a destination (copy_file's destination is a path).
//
// A tool sends (Exfiltrating) when its name or description says so
// (Sends), or when its name says it sets something up (registers:
// create_webhook, UpdateUserProfile) and a destination-shaped argument, or
// a destination-shaped key inside one (nested: {"hook": {"url": ...}}),
// holds a value that is a destination (holds): the server will send there
// later. Its destination-shaped arguments are its
// sinks; one that sends with none sends to a destination its arguments
// don't name, so every call is asked about. Every other tool is judged by
// the destinations its values are, whatever their keys (see package
// engine): a tainted one is asked about, and nothing else is.
func fallback(tr Traits, params, nested []string, holds bool) *Tool {
	t := &Tool{Name: tr.tool, Source: "fallback", Fallback: true}
	sends := tr.sends || (holds && tr.registers)
	for i, p := range params {
		if slices.Contains(params[:i], p) {
			continue
		}
		switch {
		case tr.writer && IsPathName(p):
			t.WriteParams = append(t.WriteParams, p)
		case sends && (IsDestinationName(p) || slices.Contains(nested, p)):
			t.SinkParams = append(t.SinkParams, p)
		}
	}
	if sends {
		t.Exfiltrating = true
		// A reply goes to the sender of the message it answers, whom no
		// argument names, even when it names a cc: every call is asked
		// about (the gmail pack said so for every server by name, until
		// packs applied to their own server only).
		if len(t.SinkParams) == 0 || tr.reply {
			t.Implicit = ImplicitYes
		}
	}
	if tr.deletes {
		n := FallbackDeleteBudget
		t.MaxCalls = &n
	}
	return t
}

// Traits is what the fallback reads from a tool's name and description,
// which depend on nothing else: the engine works them out once, when it
// pins the tool, rather than on every call.
type Traits struct {
	tool                                     string
	writer, sends, registers, reply, deletes bool
}

// TraitsOf works out the traits of tool, described as description.
func TraitsOf(tool, description string) Traits {
	return Traits{
		tool:      tool,
		writer:    hasWord(tool, writeVerbs),
		sends:     Sends(tool, description),
		registers: registers(tool),
		reply:     hasWord(tool, replyVerbs),
		deletes:   hasWord(tool, deleteVerbs),
	}
}
