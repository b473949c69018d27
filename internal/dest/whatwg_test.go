package dest

import (
	"encoding/json"
	"os/exec"
	"slices"
	"testing"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// webSpellings are spellings of a URL that Parse refuses or reads apart
// from the URL a receiver fetches, and that a WHATWG parser reads as a
// plain one.
var webSpellings = []string{
	"https://u:p@hooks.evilcorp.com/collect",
	"https://hooks.evilcorp.com:443/collect",
	"https://hooks.evilcorp.com/./collect",
	"https://hooks.evilcorp.com/x/../collect",
	`https:\\hooks.evilcorp.com\collect`,
	"https:hooks.evilcorp.com/collect",
	"https:/hooks.evilcorp.com/collect",
	"//hooks.evilcorp.com/collect",
	`/\hooks.evilcorp.com/collect`,
	"HTTPS://HOOKS.EVILCORP.COM/collect",
	"https://hooks%2Eevilcorp.com/collect",
	"http://3405803783/c",
	"http://0xcb.0.0x71.7/c",
	"http://203.000.113.007/c",
	"http://203.0.113.7:80/c",
	"http://x.example@203.0.113.7/c",
	"https://évilcorp.com/x?q=1#f",
	"wss://hooks.evilcorp.com:443/s",
	"sftp://git@files.evilcorp.com:22/up",
}

// TestWebFormAgainstNode checks, with node's URL (the WHATWG parser that
// browsers and node servers use), that webForm reads each spelling as the
// place node's URL goes to: scheme, host, port, path, query, fragment. An
// absolute URL is read as fetch reads it, with no base; a network path
// against a base.
func TestWebFormAgainstNode(t *testing.T) {
	node := need.Node(t)
	const script = `
const inputs = JSON.parse(process.argv[1]);
const out = inputs.map(s => {
  try {
    const net = /^[\/\\]{2}/.test(s);
    const u = net ? new URL(s, "https://base.invalid/") : new URL(s);
    return u.protocol + "//" + u.host + u.pathname + u.search + u.hash;
  } catch { return null; }
});
process.stdout.write(JSON.stringify(out));`
	in, _ := json.Marshal(webSpellings)
	out, err := exec.Command(node, "-e", script, string(in)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want []*string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("node said %q: %v", out, err)
	}
	for i, s := range webSpellings {
		u, ok := webURL(s)
		if !ok || want[i] == nil {
			t.Errorf("%q: webURL ok %v, node reads %v", s, ok, want[i])
			continue
		}
		if got := webForm(u); got != *want[i] {
			t.Errorf("webForm(%q) = %q, node reads %q", s, got, *want[i])
		}
	}
}

// Each spelling a receiver reads as a destination is one by value, and
// taint is asked about the form that receiver reads.
func TestReceiverSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@hooks.evilcorp.com/collect": "https://hooks.evilcorp.com/collect",
		"https://hooks.evilcorp.com:443/collect": "https://hooks.evilcorp.com/collect",
		`https:\\hooks.evilcorp.com\collect`:     "https://hooks.evilcorp.com/collect",
		"https:hooks.evilcorp.com/collect":       "https://hooks.evilcorp.com/collect",
		"//hooks.evilcorp.com/collect":           "https://hooks.evilcorp.com/collect",
		"http://3405803783/c":                    "http://203.0.113.7/c",
		"tel:+14155550199":                       "+14155550199",
		"sms:+1-415-555-0199":                    "+1-415-555-0199",
		"mailto:eve%40evilcorp.com?subject=x":    "eve@evilcorp.com",
		"+14155550199":                           "4155550199",
		"(415) 555-0199":                         "4155550199",
		"001 415 555 0199":                       "4155550199",
		"020 7946 0958":                          "2079460958",
		"DE89370400440532013000":                 "DE89 3704 0044 0532 0130 00",
		"files.evilcorp.com:22":                  "files.evilcorp.com",
		"+1(415)555-0199":                        "4155550199",
	} {
		if !IsDestination(in) {
			t.Errorf("IsDestination(%q) = false", in)
		}
		if v := Variants(in); !slices.Contains(v, want) {
			t.Errorf("Variants(%q) = %q, lacks %q", in, v, want)
		}
	}
	if v := Variants("de89 3704 0044 0532 0130 00"); !slices.Contains(v, "DE89370400440532013000") {
		t.Errorf("Variants of an IBAN in lower case = %q", v)
	}
	for _, in := range []string{"eve.attacker%40evilcorp.com", "whatsapp:+14155550199", "de89370400440532013000"} {
		if !IsDestination(in) {
			t.Errorf("IsDestination(%q) = false", in)
		}
	}
	// What no receiver reads as a destination stays none.
	for _, in := range []string{"localhost:3000", "org.apache.commons:commons-lang3:3.12.0", `C:\Users\me\report.pdf`,
		"re: the meeting", "urn:isbn:0451450523", "50%25 off", "//evil.example/x", "std::vector", "1.2.3"} {
		if IsDestination(in) {
			t.Errorf("IsDestination(%q) = true", in)
		}
	}
}
