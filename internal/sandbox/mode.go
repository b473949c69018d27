package sandbox

import "fmt"

// Mode is how hard Restrict tries.
type Mode int

const (
	// Auto applies whatever the kernel offers and reports what it skipped.
	Auto Mode = iota
	// Strict fails unless both Landlock (ABI 4 or later: files and TCP)
	// and seccomp can be applied.
	Strict
	// Off applies nothing.
	Off
)

// ParseMode reads "auto", "strict" or "off".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "auto":
		return Auto, nil
	case "strict":
		return Strict, nil
	case "off":
		return Off, nil
	}
	return Auto, fmt.Errorf("sandbox mode %q: must be auto, strict or off", s)
}

// String is the mode's flag spelling.
func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case Strict:
		return "strict"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}
