// Package procgroup lets a test check that a process group is gone, which
// is what stopping an upstream (transport.Process.Stop) must leave behind.
// The transport's tests check it of Stop alone, and the pump's of a session
// the client hung up on. Process groups are Unix's; elsewhere the package
// is empty, as the tests that use it don't build there either.
package procgroup
