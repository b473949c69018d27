package policy

import "strings"

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
// webhook_url, recipient_email, emailAddress, callback_uri, notify_channel.
//
// to, cc and bcc count only as whole names: in_reply_to and reply_to_id
// carry message ids, and inReplyTo is one in every mail server's schema.
var destLastWords = setOf(
	"email", "emails", "address", "addresses", "recipient", "recipients",
	"url", "urls", "uri", "uris", "webhook", "webhooks", "endpoint", "endpoints",
	"channel", "channels", "destination", "destinations", "invitee", "invitees",
	"attendee", "attendees",
)

// destOwners are words that make a following id or name a destination:
// channel_id, chatId, recipient_ids, room_name. A bare user_id is not one:
// reading a profile by id is the common case, and sending to a user goes
// through a recipient- or channel-shaped argument.
var destOwners = setOf("channel", "recipient", "chat", "room", "conversation", "webhook", "destination", "mailbox", "inbox")
var idWords = setOf("id", "ids", "name", "names")

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

// sendVerbs in a tool's name make it a tool that sends, even when none of
// its arguments names where to: reply_email {messageId, body} mails the
// sender of messageId. A name that starts with a read verb (get_post,
// list_shared) is not one. Names written as one word with no case
// (replyall, SENDMAIL, sendmessage) split into no words, so the usual
// ones are listed whole.
var sendVerbs = setOf("send", "reply", "respond", "answer", "forward", "post", "publish", "share", "invite", "notify", "broadcast", "tweet", "dm",
	"replyall", "sendmail", "sendemail", "sendmessage", "sendmsg", "sendsms", "sendtext", "postmessage", "forwardmessage", "forwardemail", "replyemail")

// replyVerbs in the name of a tool that sends make it send to a
// destination its arguments don't name, whatever they name besides.
var replyVerbs = setOf("reply", "replyall", "replyemail", "respond")

var readVerbs = setOf("get", "list", "read", "search", "fetch", "find", "describe", "show", "view", "query", "count", "check", "lookup", "download", "export")

// sends reports whether a tool's name says it sends: a send verb among its
// words, and no read or delete verb first (delete_post removes one).
func sends(tool string) bool {
	w := Words(tool)
	if len(w) == 0 || readVerbs[w[0]] || deleteVerbs[w[0]] {
		return false
	}
	for _, x := range w {
		if sendVerbs[x] {
			return true
		}
	}
	return false
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
func Words(name string) []string {
	var words []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	isUpper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	isLower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' || c == ':':
			flush()
			continue
		case isUpper(c) && len(cur) > 0:
			prev := cur[len(cur)-1]
			// aB → a|B; ABc → A|Bc (the end of an acronym)
			if !isUpper(prev) || (i+1 < len(name) && isLower(name[i+1])) {
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return words
}

// IsDestinationName reports whether an argument name is destination-shaped
// (to, cc, bcc, recipient, recipients, email, address, url, channel,
// share_with, ...). The comparison is on the whole name, ignoring ASCII case,
// so "confirm" or "channel_topic" are not destinations.
//
// Three rules, on the name's words (see Words): the whole name is one of a
// fixed list (to, cc, recipients, webhook, share_with, reply_to, ...); or its
// last word is an address-like word (webhook_url, recipient_email,
// emailAddress, callback_uri); or it is a channel, recipient, chat or room
// followed by id or name (channel_id, chatId).
func IsDestinationName(name string) bool {
	w := Words(name)
	if len(w) == 0 {
		return false
	}
	if destNames[strings.Join(w, "_")] || destLastWords[w[len(w)-1]] {
		return true
	}
	return len(w) >= 2 && idWords[w[len(w)-1]] && destOwners[w[len(w)-2]]
}

// IsPathName reports whether an argument name is path-shaped (path, file,
// filename, dir, output_path, target_file, save_dir, ...), by the same
// whole-word rules as IsDestinationName.
func IsPathName(name string) bool {
	w := Words(name)
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
	w := Words(name)
	if len(w) == 0 {
		return false
	}
	return commandNames[strings.Join(w, "_")] || commandLastWords[w[len(w)-1]]
}

func hasWord(name string, set map[string]bool) bool {
	for _, w := range Words(name) {
		if set[w] {
			return true
		}
	}
	return false
}

// fallback derives an entry for a tool no pack or file names. On a tool
// whose name has a write verb, a path-shaped argument is a write param
// rather than a destination (copy_file's destination is a path); every
// other destination-shaped argument is a sink. A tool whose name says it
// sends (sends) is gated even with no such argument: it sends to a
// destination its arguments don't name, so every call is asked about.
// nested names the arguments that hold a destination-shaped key inside
// their value: they are sinks too.
func fallback(tool string, params, nested []string) *Tool {
	t := &Tool{Name: tool, Source: "fallback", Fallback: true}
	writer := hasWord(tool, writeVerbs)
	holds := map[string]bool{}
	for _, n := range nested {
		holds[n] = true
	}
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p] {
			continue
		}
		seen[p] = true
		switch {
		case writer && IsPathName(p):
			t.WriteParams = append(t.WriteParams, p)
		case IsDestinationName(p), holds[p]:
			t.SinkParams = append(t.SinkParams, p)
		}
	}
	t.Exfiltrating = len(t.SinkParams) > 0
	if sends(tool) {
		t.Exfiltrating = true
		// A reply goes to the sender of the message it answers, whom no
		// argument names, even when it names a cc: every call is asked
		// about (the gmail pack said so for every server by name, until
		// packs applied to their own server only).
		if len(t.SinkParams) == 0 || hasWord(tool, replyVerbs) {
			t.Implicit = ImplicitYes
		}
	}
	if hasWord(tool, deleteVerbs) {
		n := FallbackDeleteBudget
		t.MaxCalls = &n
	}
	return t
}
