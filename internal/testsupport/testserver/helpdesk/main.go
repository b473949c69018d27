// Command helpdesk runs the test helpdesk (testserver.Helpdesk) over stdio
// as a binary of its own, for benchmarks whose figure would otherwise be
// the start-up of the test binary that re-executes itself.
package main

import (
	"fmt"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/testserver"
)

func main() {
	if err := testserver.Helpdesk(os.Getenv(testserver.EnvDir)); err != nil {
		fmt.Fprintln(os.Stderr, "helpdesk:", err)
		os.Exit(1)
	}
}
