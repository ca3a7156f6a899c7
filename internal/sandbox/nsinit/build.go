package nsinit

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"runtime"
	"strings"
	"sync"
)

// sources are this package's files, compiled into every binary that holds the
// init: agentbox and agentbox-init.
//
//go:embed *.go
var sources embed.FS

// buildVariant is set with -ldflags -X by a build that must count as another one
// (the test of a stale agentbox-init).
var buildVariant string

// BuildKey names the init this binary holds: a hash of the Go toolchain, this
// package's sources and buildVariant. A host that starts a separate agentbox-init
// sends its own key in Spec.Build, and the init refuses a Spec whose key is not its
// own, so an agentbox-init left over from another build never runs a sandbox (its
// hardening would be that build's).
var BuildKey = sync.OnceValue(func() string {
	h := sha256.New()
	h.Write([]byte(runtime.Version() + "\x00" + buildVariant + "\x00"))
	_ = fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := sources.ReadFile(p)
		h.Write([]byte(p + "\x00"))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))
})
