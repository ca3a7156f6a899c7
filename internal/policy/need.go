package policy

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/secret"
)

// Kind names a capability: what a call needs to be allowed.
type Kind string

const (
	KindRead          Kind = "read"           // read a workspace path
	KindSensitiveRead Kind = "sensitive:read" // read a path secret.Path recognises
	KindWrite         Kind = "write"          // change a workspace path
	KindExec          Kind = "exec"           // run a program in the sandbox
	KindNetwork       Kind = "network"        // reach a host
	KindTool          Kind = "tool"           // call a tool the policy knows only by name (MCP)
	KindRelease       Kind = "release"        // send data of a class to a host from a tainted session
	KindControl       Kind = "control"        // change the session (finish it)
)

var kinds = []Kind{KindRead, KindSensitiveRead, KindWrite, KindExec, KindNetwork, KindTool, KindRelease, KindControl}

// Need is one capability a call needs: one target of one kind. A call needs
// several (every path it writes, every program its command line runs, every host
// it reaches), each decided on its own (Decide).
type Need struct {
	Kind    Kind            `json:"kind"`
	Path    string          `json:"path,omitempty"`    // workspace-relative, clean
	Command *command.Simple `json:"command,omitempty"` // one program of a command line
	Host    string          `json:"host,omitempty"`    // canonical
	Port    uint16          `json:"port,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Class   secret.Class    `json:"class,omitempty"` // release: the class of data let out
}

// String is the need as a capability a person would grant: "write:src/app.go",
// "exec:go test ./...", "network:registry.npmjs.org:443",
// "release:secret@collector.example".
func (n Need) String() string {
	switch n.Kind {
	case KindRead, KindSensitiveRead, KindWrite:
		return string(n.Kind) + ":" + n.Path
	case KindExec:
		if n.Command == nil {
			return "exec:?"
		}
		return "exec:" + n.Command.String()
	case KindNetwork:
		return "network:" + hostPort(n.Host, n.Port)
	case KindTool:
		return "tool:" + n.Tool
	case KindRelease:
		return "release:" + string(n.Class) + "@" + hostPort(n.Host, n.Port)
	}
	return string(n.Kind)
}

func hostPort(h string, p uint16) string {
	if h == "" {
		h = "*"
	}
	if p != 0 {
		return h + ":" + strconv.Itoa(int(p))
	}
	return h
}

// Capability is a pattern of needs, as a grant, an approvals file or an intent
// names them:
//
//	read:GLOB  write:GLOB  sensitive:read:GLOB   workspace path globs (PathGlob)
//	exec:PATTERN                                  an argv pattern (command.Pattern)
//	network:DOMAIN                                a domain pattern (DomainPattern)
//	tool:NAME                                     a tool name, '*' any run of characters
//	release:CLASS@DOMAIN                          a data class (or *) and a domain pattern
//	control
type Capability struct {
	Kind   Kind
	src    string
	path   PathGlob
	cmd    command.Pattern
	domain DomainPattern
	tool   string
	class  secret.Class // "" for any
}

// ParseCapability parses a capability pattern.
func ParseCapability(s string) (Capability, error) {
	c := Capability{src: s}
	var rest string
	for _, k := range []Kind{KindSensitiveRead, KindRead, KindWrite, KindExec, KindNetwork, KindTool, KindRelease} {
		if r, ok := strings.CutPrefix(s, string(k)+":"); ok {
			c.Kind, rest = k, r
			break
		}
	}
	if s == string(KindControl) || s == string(KindControl)+":*" {
		c.Kind = KindControl
		return c, nil
	}
	if c.Kind == "" {
		return Capability{}, fmt.Errorf("capability %q: want KIND:TARGET with KIND one of %s", s, kindList())
	}
	if rest == "" {
		return Capability{}, fmt.Errorf("capability %q: %s needs a target after its colon", s, c.Kind)
	}
	var err error
	switch c.Kind {
	case KindRead, KindSensitiveRead, KindWrite:
		c.path, err = ParsePathGlob(rest)
	case KindExec:
		c.cmd, err = command.ParsePattern(rest)
	case KindNetwork:
		c.domain, err = ParseDomainPattern(rest)
	case KindTool:
		c.tool = rest
	case KindRelease:
		class, host, ok := strings.Cut(rest, "@")
		if !ok {
			return Capability{}, fmt.Errorf("capability %q: want release:CLASS@DOMAIN", s)
		}
		if class != "*" {
			if c.class, err = secret.ParseClass(class); err != nil {
				break
			}
		}
		c.domain, err = ParseDomainPattern(host)
	}
	if err != nil {
		return Capability{}, fmt.Errorf("capability %q: %w", s, err)
	}
	return c, nil
}

// MustParseCapability is ParseCapability for patterns known to be valid.
func MustParseCapability(s string) Capability {
	c, err := ParseCapability(s)
	if err != nil {
		panic(err)
	}
	return c
}

func kindList() string {
	var s []string
	for _, k := range kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func (c Capability) String() string { return c.src }

// MarshalText writes the capability as it was parsed.
func (c Capability) MarshalText() ([]byte, error) { return []byte(c.src), nil }

// UnmarshalText parses a capability.
func (c *Capability) UnmarshalText(b []byte) error {
	v, err := ParseCapability(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Covers reports whether the need falls under the capability. An exec pattern
// must match every run of the program (command.Must).
func (c Capability) Covers(n Need) bool {
	if c.Kind != n.Kind {
		return false
	}
	switch c.Kind {
	case KindRead, KindSensitiveRead, KindWrite:
		return c.path.Match(n.Path)
	case KindExec:
		return n.Command != nil && c.cmd.Match(*n.Command, command.Must)
	case KindNetwork:
		return c.domain.Match(n.Host, n.Port)
	case KindTool:
		return glob(c.tool, n.Tool)
	case KindRelease:
		return (c.class == "" || c.class == n.Class) && c.domain.Match(n.Host, n.Port)
	case KindControl:
		return true
	}
	return false
}

// glob matches a tool name against '*'-patterns (path.Match, whose '*' stops at
// '/', so "github/*" is one server's tools).
func glob(p, s string) bool {
	ok, err := path.Match(p, s)
	return err == nil && ok
}
