package sandbox

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/netip"
)

// BuildRunner runs the build steps of package image that run commands (apt,
// npm, go_modules, run) in build sandboxes: it is the production image.Runner.
//
// A build sandbox is a sandbox whose root is the step's parent layers, read-only,
// below the upper directory Build gave (overlayfs with "userxattr", so whiteouts
// and opaque marks land in upper as layers hold them), whose user namespace maps
// 0..65535 to image.IDBase.. (what the step writes is owned as layer files are),
// and whose command runs as root of that namespace with nsinit.BuildCaps and the
// image's own users and groups. Everything else is a sandbox's: fresh pid, mount,
// network, IPC and UTS namespaces, a cgroup, no_new_privs, Landlock and seccomp.
// Its network is the egress proxy with the allowlist of the step's preset
// (image.Step.Egress; none for a run step). Two build sandboxes share host ids
// (the foreign range), so each relies on its namespaces to keep the other out.
// RunStep returns once the sandbox is destroyed: nothing runs or writes to upper
// any more.
type BuildRunner struct {
	// Memory, Pids and CPUs are each step's cgroup limits, as in Config (zero:
	// the defaults).
	Memory int64
	Pids   int64
	CPUs   float64
	// TmpSize is the size of the step's /tmp (zero: DefaultTmpSize).
	TmpSize int64
	// Output receives the step's standard output and error; nil discards them
	// (the last lines still go into a failed step's error).
	Output io.Writer
	// UpstreamRoots verify the registries' certificates behind the egress proxy;
	// nil: the system roots.
	UpstreamRoots *x509.CertPool
	// AllowPrivate opens these special-purpose address ranges to the preset's
	// names, and to no other name (egress.Policy.AllowPrivate): a mirror of the
	// registry on the LAN, or a site's TLS interceptor in front of it.
	AllowPrivate []netip.Prefix
	// Trust are PEM certificates a step with a network trusts besides its
	// root's bundle and the egress proxy's CA (Network.Trust): the CA of a
	// site's TLS interceptor, which re-signs the registries' certificates. The
	// proxy tunnels a step's TLS end to end, so the step itself must trust
	// what answers. They are mounted for the step only, never written into its
	// layer. ParseTrust reads and checks them.
	Trust []byte
}

// ParseTrust checks that pem holds only certificates (at least one), as
// BuildRunner.Trust wants them, and returns them re-encoded.
func ParseTrust(data []byte) ([]byte, error) {
	var out []byte
	for len(bytes.TrimSpace(data)) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("not PEM: want one or more -----BEGIN CERTIFICATE----- blocks")
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a PEM %q block: want only certificates", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
	if len(out) == 0 {
		return nil, errors.New("no certificate")
	}
	return out, nil
}

// buildRoot is a build sandbox's root file system (see BuildRunner).
type buildRoot struct {
	layers      []string // host directories, bottom first
	host        bool     // over the host's system directories (image.Root.Host)
	upper, work string   // empty, in one directory
}
