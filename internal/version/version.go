// Package version says which agentbox is running: the module version and the VCS
// commit the binary was built from, as the Go toolchain recorded them in the binary
// (runtime/debug.ReadBuildInfo). It does not run git and reads no file: a binary
// built outside a repository, or with -buildvcs=false, has no commit.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is what the build recorded.
type Info struct {
	// Version is the module version: "v0.3.0" for `go install …@v0.3.0`, "(devel)"
	// for a build in a clone.
	Version string `json:"version"`
	// Commit is the VCS revision of the build's tree ("" if none was recorded).
	Commit string `json:"commit,omitempty"`
	// CommitTime is the commit's time, RFC 3339.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified: the tree had uncommitted changes when it was built.
	Modified bool `json:"modified,omitempty"`
	// Go is the toolchain that built it.
	Go string `json:"go"`
}

// Get reads the build information of the running binary.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.time":
			i.CommitTime = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is one line: "(devel) commit 239b220c1d2e (modified) go1.26.8".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		fmt.Fprintf(&b, " commit %s", c)
		if i.Modified {
			b.WriteString(" (modified)")
		}
	}
	if i.Go != "" {
		b.WriteString(" " + i.Go)
	}
	return b.String()
}

// Short is the version and the commit, for protocol fields that take one token
// (the MCP server's Implementation.Version): "(devel)+239b220c1d2e".
func (i Info) Short() string {
	if i.Commit == "" {
		return i.Version
	}
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if i.Modified {
		c += "-dirty"
	}
	return i.Version + "+" + c
}
