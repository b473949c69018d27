package session

// PublishOwn makes paths known to the client's other proxies as Bouncer's
// own files, which their guard then protects too: a server of one proxy
// can't rewrite the policy another proxy of the same client loads. A
// proxy publishes once, after it joined. A session in memory only has no
// one to tell.
func (s *Session) PublishOwn(paths []string) error {
	if s.disk == nil {
		return nil
	}
	return s.disk.publishOwn(paths)
}

// OwnFiles returns the paths the client's other proxies published
// (PublishOwn), and a version that changes whenever they do. Like every
// look at the session, it reads the session directory only when another
// process wrote something since the last look.
func (s *Session) OwnFiles() ([]string, uint64) {
	if s == nil || s.disk == nil {
		return nil, 0
	}
	s.sync()
	return s.disk.ownFiles()
}
