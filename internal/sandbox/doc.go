// Package sandbox confines Bouncer with the kernel's own mechanisms, so a
// bug or a hostile input that took over the proxy could not use it to
// reach the network, run programs or write outside its state directory.
//
// Two layers: Landlock (unprivileged file-system and TCP access control)
// and a seccomp filter (which system calls may be made at all). Restrict
// applies both to the running proxy once its upstream server has been
// started; the proxy keeps only what a stdio pump needs. The launcher
// (LauncherArgs, RunLauncher) confines the upstream server itself: it runs
// as a re-executed Bouncer that applies the server's own, wider Landlock
// domain and a denylist filter, then execs the server.
//
// Nothing here imports the rest of Bouncer; cmd/bouncer converts the
// policy's sandbox key into a Confinement.
package sandbox
