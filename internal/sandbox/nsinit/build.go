package nsinit

import (
	"embed"
	"fmt"
	"hash/crc32"
	"io"
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

// BuildKey names the init this binary holds: a CRC-32 and the length of the Go
// toolchain's version, this package's sources and buildVariant. A host that starts
// a separate agentbox-init sends its own key in Spec.Build, and the init refuses a
// Spec whose key is not its own, so an agentbox-init left over from another build
// never runs a sandbox (its hardening would be that build's). It tells builds
// apart by accident of their sources, not against an adversary: a planted init is
// kept out by the host's trust check. CRC-32 (IEEE, in hardware) over the files
// read through a small buffer costs ~20 µs; SHA-256 over copies of them cost
// ~0.5 ms at every start, in the host and again in the init.
var BuildKey = sync.OnceValue(func() string {
	h := crc32.NewIEEE()
	n, _ := io.WriteString(h, runtime.Version()+"\x00"+buildVariant+"\x00")
	size := int64(n)
	var buf [16 << 10]byte
	_ = fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := sources.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, _ := io.WriteString(h, p+"\x00")
		m, err := io.CopyBuffer(h, f, buf[:])
		size += int64(n) + m
		return err
	})
	return fmt.Sprintf("%08x-%d", h.Sum32(), size)
})
