package envexpand_test

import (
	"fmt"

	"github.com/bouncer-mcp/bouncer/internal/envexpand"
)

// ${NAME} is read from the environment; $NAME is literal; an unset
// variable or a malformed reference is an error that says where it was
// written and never quotes the value.
func ExampleExpand() {
	env := map[string]string{"TOKEN": "t0k"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, v := range []string{"Bearer ${TOKEN}", "$TOKEN", "Bearer ${NOPE}", "Bearer ${TOKEN:-s3cr3t}"} {
		out, err := envexpand.Expand("--header #1 (Authorization)", v, lookup)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(out)
	}
	// Output:
	// Bearer t0k
	// $TOKEN
	// --header #1 (Authorization): ${NOPE} is not set in the environment; set it where bouncer is started
	// --header #1 (Authorization): the "${...}" at byte 7 is not a variable reference; write ${NAME} (letters, digits and _, not starting with a digit; there are no defaults or other forms)
}
