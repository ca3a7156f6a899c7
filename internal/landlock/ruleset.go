package landlock

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Ruleset is the whole Landlock policy of a sandbox. Everything not granted here is
// denied, as far as the kernel's ABI allows (see the package comment). The zero value is
// rejected: it grants nothing to execute.
type Ruleset struct {
	// ReadExec are directories whose files may be read and executed and whose
	// entries may be listed, for example "/".
	ReadExec []string
	// ReadWrite are directories with full access beneath them: create, write,
	// truncate, remove, rename and link within and between them. Device nodes
	// cannot be created there, and ioctl on devices is not granted.
	ReadWrite []string
	// ReadWriteFiles are single files that must stay readable and writable, for
	// example /dev/null, /dev/zero, /dev/full. No ioctl is granted on them.
	ReadWriteFiles []string
	// Terminals are terminal devices, or directories of them, that may be
	// written and ioctl'd (read too, where ReadExec grants it): a sandbox's own
	// devpts instance, whose ptys lead nowhere outside it, and /dev/tty, which
	// names a process's own controlling terminal. Nothing can be created or
	// removed there.
	Terminals []string

	// AllowTCPBind and AllowTCPConnect list the TCP ports that may be bound or
	// connected to. Empty lists deny all TCP bind and connect (ABI >= 4). Binding
	// to port 0 (an ephemeral port) needs 0 in AllowTCPBind.
	AllowTCPBind, AllowTCPConnect []uint16
	// AllowAllTCP leaves TCP unrestricted, for a sandbox in a private network
	// namespace where a test's loopback server listens on an ephemeral port that a
	// connect allow list cannot name. It may not be combined with the lists.
	AllowAllTCP bool

	// ScopeSignals stops signals to processes outside the sandbox's Landlock
	// domain (ABI >= 6). Signals within it still work.
	ScopeSignals bool
	// ScopeAbstractUnix stops connecting to abstract unix sockets bound outside
	// the domain (ABI >= 6).
	ScopeAbstractUnix bool

	// BestEffort lets Restrict succeed without enforcing anything when the kernel
	// has no Landlock (ABI 0). Without it Restrict returns ErrUnsupported there.
	BestEffort bool
}

// Applied reports what Restrict enforced. A zero Applied means nothing was enforced.
type Applied struct {
	ABI         int  // ABI the ruleset was built for; 0: nothing enforced
	Refer       bool // cross-directory rename/link limited to ReadWrite (ABI >= 2)
	Truncate    bool // truncate limited to ReadWrite and ReadWriteFiles (ABI >= 3)
	IoctlDev    bool // ioctl on newly opened device files denied (ABI >= 5)
	ResolveUnix bool // connect to pathname unix sockets bound outside denied (ABI >= 9)
	Net         bool // TCP bind/connect limited to the allow lists (ABI >= 4, !AllowAllTCP)

	ScopeSignals      bool // requested and enforced (ABI >= 6)
	ScopeAbstractUnix bool // requested and enforced (ABI >= 6)
}

// String gives a compact form for logs, such as "abi=7 refer truncate ioctl_dev net
// scope_signals".
func (a Applied) String() string {
	parts := []string{fmt.Sprintf("abi=%d", a.ABI)}
	for _, f := range []struct {
		on   bool
		name string
	}{
		{a.Refer, "refer"}, {a.Truncate, "truncate"}, {a.IoctlDev, "ioctl_dev"},
		{a.ResolveUnix, "resolve_unix"}, {a.Net, "net"},
		{a.ScopeSignals, "scope_signals"}, {a.ScopeAbstractUnix, "scope_abstract_unix"},
	} {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, " ")
}

var (
	// ErrUnsupported is returned by Restrict when the kernel offers no Landlock and
	// the ruleset does not set BestEffort, and on platforms other than Linux.
	ErrUnsupported = errors.New("landlock: not supported by this kernel")
	// ErrInvalid is matched by every error about the ruleset itself.
	ErrInvalid = errors.New("landlock: invalid ruleset")
)

// PathError is a ruleset path that cannot be used. It matches ErrInvalid and its
// cause (for a missing path, fs.ErrNotExist).
type PathError struct {
	Field string // "ReadExec", "ReadWrite", "ReadWriteFiles" or "Terminals"
	Path  string
	Err   error
}

func (e *PathError) Error() string {
	return fmt.Sprintf("landlock: %s %q: %v", e.Field, e.Path, e.Err)
}

func (e *PathError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

var (
	errNotAbsolute = errors.New("not an absolute path")
	errNotDir      = errors.New("not a directory")
	errIsDir       = errors.New("is a directory")
)

// validate checks what can be checked without the filesystem.
func (r Ruleset) validate() error {
	if len(r.ReadExec) == 0 {
		return fmt.Errorf("%w: ReadExec is empty: nothing could run", ErrInvalid)
	}
	if r.AllowAllTCP && (len(r.AllowTCPBind) > 0 || len(r.AllowTCPConnect) > 0) {
		return fmt.Errorf("%w: AllowAllTCP set together with TCP port lists", ErrInvalid)
	}
	for _, f := range r.fields() {
		for _, p := range f.paths {
			if !filepath.IsAbs(p) {
				return &PathError{Field: f.name, Path: p, Err: errNotAbsolute}
			}
		}
	}
	return nil
}

type field struct {
	name  string
	paths []string
	kind  pathKind
}

// pathKind is what a field's paths must be.
type pathKind int

const (
	kindDir pathKind = iota
	kindFile
	kindAny // the field's rights are valid on both
)

func (r Ruleset) fields() []field {
	return []field{
		{"ReadExec", r.ReadExec, kindDir},
		{"ReadWrite", r.ReadWrite, kindDir},
		{"ReadWriteFiles", r.ReadWriteFiles, kindFile},
		{"Terminals", r.Terminals, kindAny},
	}
}
