package landlock

import (
	"slices"

	gll "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// maxABI is the newest ABI go-landlock v0.11.2 knows; a newer kernel is used at this
// level.
const maxABI = 11

// Rights granted per Ruleset field, before masking with what the ABI handles.
const (
	accessReadExec = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	// Not MakeChar/MakeBlock (no workload needs device nodes), not IoctlDev, not
	// ResolveUnix (sockets bound inside the sandbox need no grant).
	accessReadWrite = accessReadExec | ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeSym | ll.AccessFSRefer
	// No Execute and no IoctlDev: /dev/null and friends are only read and written.
	accessReadWriteFile = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	// A terminal needs its ioctls (termios, window size, controlling tty). No
	// directory right, so that a file may be listed too.
	accessTerminal = ll.AccessFSWriteFile | ll.AccessFSIoctlDev
)

// plan is a Ruleset expressed in the access rights of one ABI.
type plan struct {
	abi     int
	fs      gll.AccessFSSet  // handled filesystem rights
	net     gll.AccessNetSet // handled network rights
	scoped  gll.ScopedSet
	paths   []pathRule
	bind    []uint16 // sorted, unique; only when net is handled
	connect []uint16
}

type pathRule struct {
	path   string
	access gll.AccessFSSet // always within plan.fs
}

// handledFS is every filesystem right the ABI can restrict: all of them are handled,
// so whatever a rule does not grant is denied.
func handledFS(abi int) gll.AccessFSSet {
	var a gll.AccessFSSet
	if abi >= 1 {
		a |= ll.AccessFSMakeSym<<1 - 1 // the 13 rights of ABI 1
	}
	if abi >= 2 {
		a |= ll.AccessFSRefer
	}
	if abi >= 3 {
		a |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		a |= ll.AccessFSIoctlDev
	}
	if abi >= 9 {
		a |= ll.AccessFSResolveUnix
	}
	return a
}

// build converts a validated ruleset to the rules of one ABI. It is pure.
func build(r Ruleset, abi int) plan {
	p := plan{abi: min(max(abi, 0), maxABI)}
	if p.abi == 0 {
		return p
	}
	p.fs = handledFS(p.abi)
	add := func(access gll.AccessFSSet, paths []string) {
		for _, path := range paths {
			p.paths = append(p.paths, pathRule{path: path, access: access & p.fs})
		}
	}
	add(accessReadExec, r.ReadExec)
	add(accessReadWrite, r.ReadWrite)
	add(accessReadWriteFile, r.ReadWriteFiles)
	add(accessTerminal, r.Terminals)

	// UDP (ABI 10) is deliberately not handled: the Ruleset has no UDP allow list,
	// and denying all UDP would break loopback UDP in a private network namespace.
	if p.abi >= 4 && !r.AllowAllTCP {
		p.net = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		p.bind = sortedUnique(r.AllowTCPBind)
		p.connect = sortedUnique(r.AllowTCPConnect)
	}
	if p.abi >= 6 {
		if r.ScopeSignals {
			p.scoped |= ll.ScopeSignal
		}
		if r.ScopeAbstractUnix {
			p.scoped |= ll.ScopeAbstractUnixSocket
		}
	}
	return p
}

func sortedUnique(ports []uint16) []uint16 {
	if len(ports) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(ports)))
}

// config is the go-landlock configuration. It is not BestEffort: build already
// chose the rights, and anything the kernel then refuses must be an error.
func (p plan) config() gll.Config {
	return gll.Config{HandledAccessFS: p.fs, HandledAccessNet: p.net, Scoped: p.scoped}
}

func (p plan) rules() []gll.Rule {
	var rules []gll.Rule
	for _, r := range p.paths {
		rules = append(rules, gll.PathAccess(r.access, r.path))
	}
	for _, port := range p.bind {
		rules = append(rules, gll.BindTCP(port))
	}
	for _, port := range p.connect {
		rules = append(rules, gll.ConnectTCP(port))
	}
	return rules
}

func (p plan) applied() Applied {
	return Applied{
		ABI:               p.abi,
		Refer:             p.fs&ll.AccessFSRefer != 0,
		Truncate:          p.fs&ll.AccessFSTruncate != 0,
		IoctlDev:          p.fs&ll.AccessFSIoctlDev != 0,
		ResolveUnix:       p.fs&ll.AccessFSResolveUnix != 0,
		Net:               p.net != 0,
		ScopeSignals:      p.scoped&ll.ScopeSignal != 0,
		ScopeAbstractUnix: p.scoped&ll.ScopeAbstractUnixSocket != 0,
	}
}
