package ship

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// SDID is the structured-data ID of the element every syslog message
// carries: "bouncer" at 32473, the private enterprise number that RFC 5612
// sets aside for documentation and examples, since Bouncer has none of its
// own. Its parameters are line_hash, server, tool, verdict and rule.
const SDID = "bouncer@32473"

// Facility is the syslog facility of every message: 13, "log audit".
const Facility = 13

// syslogDest ships to a syslog receiver over TCP or TLS: RFC 5424 messages
// with octet-counting framing (RFC 6587). Syslog has no acknowledgement, so
// a batch counts as delivered only when the receiver has read all of it:
// each batch goes over its own connection, the shipper closes its writing
// side after the last message and waits for the receiver to close its own,
// which it does only after reading everything before the end of the stream.
// A connection that breaks, or a receiver that does not close in time,
// leaves the cursor where it was, and the batch is sent again.
type syslogDest struct {
	name string
	addr string      // HOST:PORT
	tls  *tls.Config // nil for tcp://
	host string      // HOSTNAME of each message
	// closeWait bounds the wait for the receiver to close its side.
	closeWait time.Duration
}

func newSyslogDest(u string, tlsConf *tls.Config, host string) (*syslogDest, error) {
	scheme, addr, ok := strings.Cut(u, "://")
	if !ok || (scheme != "tcp" && scheme != "tls") {
		return nil, fmt.Errorf("%q is not tcp://HOST:PORT or tls://HOST:PORT", u)
	}
	d := &syslogDest{name: "syslog " + u, addr: addr, host: host, closeWait: exportTimeout}
	if scheme == "tls" {
		d.tls = tlsConf.Clone()
		if d.tls.ServerName == "" {
			h, _, _ := net.SplitHostPort(addr)
			d.tls.ServerName = h
		}
	}
	return d, nil
}

func (d *syslogDest) Name() string { return d.name }

func (d *syslogDest) Send(ctx context.Context, lines []Line) error {
	dialer := &net.Dialer{Timeout: exportTimeout, KeepAlive: 30 * time.Second}
	raw, err := dialer.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return err
	}
	tcp := raw.(*net.TCPConn)
	defer tcp.Close()
	// Cancelling ctx (SIGTERM) ends a send at once; the batch stays unsent.
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	defer stop()
	tcp.SetDeadline(time.Now().Add(exportTimeout + time.Duration(len(lines))*time.Millisecond))
	var conn net.Conn = tcp
	var tconn *tls.Conn
	if d.tls != nil {
		tconn = tls.Client(tcp, d.tls)
		if err := tconn.HandshakeContext(ctx); err != nil {
			return err
		}
		conn = tconn
	}
	w := bufio.NewWriterSize(conn, 64<<10)
	for _, l := range lines {
		if _, err := w.Write(Frame(SyslogMessage(l, d.host))); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return orCtx(ctx, err)
	}
	// The end of the stream: a TLS close_notify, then the TCP FIN.
	if tconn != nil {
		if err := tconn.CloseWrite(); err != nil {
			return err
		}
	}
	if err := tcp.CloseWrite(); err != nil {
		return err
	}
	// Wait for the receiver to close its side: it has then read every
	// byte before our end of stream.
	tcp.SetDeadline(time.Now().Add(d.closeWait))
	_, err = io.Copy(io.Discard, conn)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil, errors.Is(err, io.ErrUnexpectedEOF):
		// EOF (a TLS receiver may close without its own close_notify).
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the receiver did not close the connection within %s after the last message, so it may not have read them all", d.closeWait)
	}
	return err
}

func (d *syslogDest) Flush(context.Context) error { return nil }
func (d *syslogDest) Close()                      {}

// Frame is one octet-counted frame (RFC 6587 3.4.1): the message's length
// in bytes, a space, the message.
func Frame(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+12)
	out = strconv.AppendInt(out, int64(len(msg)), 10)
	out = append(out, ' ')
	return append(out, msg...)
}

// SyslogMessage is one audit line as an RFC 5424 message:
//
//	<PRI>1 TIMESTAMP HOSTNAME bouncer - MSGID [bouncer@32473 line_hash="sha256:…" server="…" tool="…" verdict="…" rule="…"] LINE
//
// PRI is facility 13 (log audit) with severity warning for a deny, notice
// for an ask and informational for an allow; TIMESTAMP is the line's ts
// (RFC 5424 allows six fractional digits, so the nanoseconds are cut to
// microseconds); MSGID is the verdict; MSG is the line's exact bytes, with
// no BOM in front. A line that is not an audit entry gets severity notice,
// no timestamp or MSGID ("-"), and only line_hash.
func SyslogMessage(l Line, host string) []byte {
	f := parseFields(l.Text)
	sev := 5
	switch f.Verdict {
	case "deny":
		sev = 4
	case "allow":
		sev = 6
	}
	ts := "-"
	if !f.time.IsZero() {
		ts = f.time.Format("2006-01-02T15:04:05.000000Z")
	}
	msgid := "-"
	if isPrintASCII(f.Verdict, 32) {
		msgid = f.Verdict
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<%d>1 %s %s bouncer - %s [%s", Facility*8+sev, ts, syslogHost(host), msgid, SDID)
	param := func(name, val string) {
		b.WriteString(" ")
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(sdValue(val))
		b.WriteString(`"`)
	}
	param("line_hash", l.Hash)
	if f.ok {
		param("server", f.Server)
		param("tool", f.Tool)
		param("verdict", f.Verdict)
		param("rule", f.Rule)
	}
	b.WriteString("] ")
	out := make([]byte, 0, b.Len()+len(l.Text))
	out = append(out, b.String()...)
	return append(out, l.Text...)
}

// sdValue is val as a PARAM-VALUE. RFC 5424 (6.3.3) escapes '"', '\'
// and ']' with a backslash; a tool or server name can hold anything else
// too, and a raw newline, carriage return or NUL would reach the wire and
// break the message apart in a receiver that writes lines. So every
// control character (C0, DEL, C1), U+2028, U+2029 and the bidirectional
// controls are written as a visible escape, \n, \r, \t or \uXXXX: text
// that RFC 5424 keeps as it is (a backslash before any other character is
// an ordinary backslash), and that can't be taken for the name's own
// backslash, which is written \\.
func sdValue(val string) string {
	var b strings.Builder
	for _, r := range val {
		switch {
		case r == '"' || r == '\\' || r == ']':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			// Not UTF-8 (which a name decoded from JSON never is) was
			// read as U+FFFD, and is written so.
			b.WriteRune(r)
		}
	}
	return b.String()
}

// syslogHost is HOSTNAME: printable ASCII, at most 255, else "-".
func syslogHost(h string) string {
	if !isPrintASCII(h, 255) {
		return "-"
	}
	return h
}

func isPrintASCII(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 {
			return false
		}
	}
	return true
}
