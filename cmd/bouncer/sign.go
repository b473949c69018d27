package main

import (
	"fmt"
	"os"

	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/statefile"
)

// maxKeyFile bounds a private key file (a PEM key is a few hundred bytes).
const maxKeyFile = 64 << 10

const signSynopsis = `bouncer sign --key PRIVATE.pem FILE...

Writes FILE.sigstore.json beside each FILE: a Sigstore bundle over its bytes, which
bouncer verify (with the public key in the trust file) and cosign verify-blob --key accept.`

// cmdSign writes FILE.sigstore.json beside each FILE, signed with a local
// unencrypted PKCS#8 key (ECDSA P-256 or Ed25519).
func cmdSign(args []string) error {
	fs, _ := newFlags("sign", signSynopsis)
	keyFile := fs.String("key", "", "unencrypted PKCS#8 PEM private `KEY` (ECDSA P-256 or Ed25519)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *keyFile == "" {
		return usageErr("%s", "sign: --key PRIVATE.pem is required")
	}
	files := fs.Args()
	if len(files) == 0 {
		return usageErr("%s", "sign: give at least one FILE")
	}
	pemData, err := statefile.ReadFile(*keyFile, maxKeyFile)
	if err != nil {
		return badInput(fmt.Errorf("sign: key: %v", err))
	}
	s, err := bundle.ParsePrivateKey(pemData)
	if err != nil {
		return badInput(fmt.Errorf("sign: key: %v", err))
	}
	status := exitOK
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
			if err == nil {
				err = fmt.Errorf("not a regular file")
			}
			errorf("sign: %s: %v", f, err)
			status = exitUsage
			continue
		}
		bp, err := s.SignFile(f)
		if err != nil {
			errorf("sign: %v", err)
			if status == exitOK {
				status = exitFail
			}
			continue
		}
		fmt.Fprintf(os.Stdout, "signed %s -> %s\n", f, bp)
	}
	if status != exitOK {
		return silently(status) // each file's problem was said
	}
	return nil
}
