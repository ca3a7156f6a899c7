package gvisor

import "github.com/agentbox/agentbox/internal/sandbox/nsinit"

// The sandbox's /etc is the namespace level's: generated users, groups, hosts and
// resolver, plus the host entries libc, TLS and Debian's alternatives need.
func etcFiles() map[string]string { return nsinit.EtcFiles() }
func etcHost() []string           { return nsinit.EtcHost() }
