package policy

import "testing"

// The engine calls For on every tools/call; for a tool no entry names it
// runs the word rules over every parameter name.
func BenchmarkForFallback(b *testing.B) {
	pol, err := LoadSources()
	if err != nil {
		b.Fatal(err)
	}
	params := []string{"webhook_url", "text", "channel_id", "thread_ts", "emailAddress", "subject", "body", "inReplyTo"}
	b.ReportAllocs()
	for b.Loop() {
		_ = pol.For("notify_team_channel", params)
	}
}

func BenchmarkForNamed(b *testing.B) {
	pol, err := LoadSources()
	if err != nil {
		b.Fatal(err)
	}
	params := []string{"to", "cc", "subject", "body"}
	b.ReportAllocs()
	for b.Loop() {
		_ = pol.For("send_email", params)
	}
}

func BenchmarkLoadExample(b *testing.B) {
	doc := []byte("send_email:\n  exfiltrating: true\n  sink_params: [to, cc, bcc]\n  trusted_destinations: [you@corp.example]\nwrite_file:\n  write_params: [path]\n  allowed_path_prefixes: [/srv/out]\n  arg_patterns:\n    mode: read|write\ndelete_file:\n  max_calls: 2\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadSources(Source{Name: "b.yaml", Data: doc}); err != nil {
			b.Fatal(err)
		}
	}
}
