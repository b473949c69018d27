package filepos

import "testing"

// The one text: what each file's errors printed before they shared the
// type (policy "FILE:LINE: KEY: msg", client config "FILE:LINE:COL: msg",
// trust "FILE: KEY: msg" for a problem with no line).
func TestErrorText(t *testing.T) {
	cases := []struct {
		e    Error
		want string
	}{
		{Error{File: "p.yaml", Line: 3, Key: "send_email.sink_params", Msg: "must be a list"}, "p.yaml:3: send_email.sink_params: must be a list"},
		{Error{File: "p.yaml", Line: 2, Msg: "invalid YAML: x"}, "p.yaml:2: invalid YAML: x"},
		{Error{File: "p.yaml", Msg: "permission denied"}, "p.yaml: permission denied"},
		{Error{File: ".mcp.json", Line: 5, Col: 7, Msg: `"command" appears twice`}, `.mcp.json:5:7: "command" appears twice`},
		{Error{File: "trust.yaml", Key: "keys", Msg: "k.pub: missing"}, "trust.yaml: keys: k.pub: missing"},
		{Error{File: "a.json", Col: 4, Msg: "no line, so no column"}, "a.json: no line, so no column"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
