package image

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// bootstrap runs mmdebstrap and imports the root file system it writes (as a tar
// stream, through the same unpacker as any archive) as a one-layer image. The
// caller holds the store lock.
//
// mmdebstrap runs as root in its unshare mode: new mount, pid, uts and ipc
// namespaces, but not a new user namespace (as root it does not make one), so the
// packages' maintainer scripts run as host root. Only packages from the archive,
// checked by apt against the host's Debian keyring, are installed: the trust the
// host's own apt already gives them. Running it in a build sandbox (a user
// namespace mapping root to IDBase) is for the sandbox integration.
func (s *Store) bootstrap(ctx context.Context, d Debian) (*Record, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	d = d.withDefaults()
	li, err := s.mmdebstrap(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	layers := []v1.Hash{li.DiffID}
	cfg, err := newConfig(layers, Config{Env: []string{debianPath}})
	if err != nil {
		return nil, err
	}
	r := &Record{Layers: layers, Source: d.String(), Packages: packagesOf(s.layerDirs(layers))}
	return s.writeImage(r, cfg)
}

// mmdebstrap runs mmdebstrap and unpacks its output into a new layer.
func (s *Store) mmdebstrap(ctx context.Context, d Debian) (LayerInfo, error) {
	args := []string{"--mode=unshare", "--variant=" + d.Variant, "--format=tar", "--skip=output/dev"}
	if len(d.Include) > 0 {
		args = append(args, "--include="+strings.Join(d.Include, ","))
	}
	args = append(args, d.Suite, "-", d.Mirror)
	cmd := exec.Command("mmdebstrap", args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR=" + s.tmpDir(), "LC_ALL=C.UTF-8"}
	if d.SourceDateEpoch != nil {
		cmd.Env = append(cmd.Env, "SOURCE_DATE_EPOCH="+strconv.FormatInt(*d.SourceDateEpoch, 10))
	}
	// Its own process group, so that everything it started dies with it. If
	// agentbox dies, it dies of SIGPIPE.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &tailBuffer{max: 8 << 10}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return LayerInfo{}, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return LayerInfo{}, fmt.Errorf("mmdebstrap is not installed (apt-get install mmdebstrap): %w", err)
		}
		return LayerInfo{}, err
	}
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	li, err := s.addLayer(ctx, out)
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return LayerInfo{}, ctx.Err()
	case werr != nil:
		return LayerInfo{}, fmt.Errorf("mmdebstrap: %w: %s", werr, stderr)
	case err != nil:
		return LayerInfo{}, err
	}
	return li, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }
