package sandbox

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// imageProbeEnv makes the test binary, copied into a test image as /bin/probe,
// run imageProbe instead of the tests.
const imageProbeEnv = "AGENTBOX_IMAGE_PROBE"

// imageProbe runs each argument "op:path[:arg]" inside a sandbox and prints one
// line per op: "op path: ok" or the error (or what it read).
func imageProbe(ops []string) int {
	for _, op := range ops {
		f := strings.SplitN(op, ":", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		var out string
		var err error
		switch p, arg := f[1], f[2]; f[0] {
		case "read":
			var b []byte
			b, err = os.ReadFile(p)
			out = string(b)
		case "write":
			err = os.WriteFile(p, []byte(arg), 0o644)
		case "fill":
			var n int
			if n, err = strconv.Atoi(arg); err == nil {
				err = os.WriteFile(p, make([]byte, n), 0o644)
			}
		case "append":
			var fh *os.File
			if fh, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				_, err = fh.WriteString(arg)
				fh.Close()
			}
		case "chmod":
			err = os.Chmod(p, 0o777)
		case "xattr":
			err = unix.Setxattr(p, "user.probe", []byte(arg), 0)
		case "rename":
			err = os.Rename(p, arg)
		case "remove":
			err = os.Remove(p)
		case "mkdir":
			err = os.Mkdir(p, 0o755)
		case "stat":
			var st unix.Stat_t
			if err = unix.Lstat(p, &st); err == nil {
				out = fmt.Sprintf("uid=%d mode=%o", st.Uid, st.Mode&0o7777)
			}
		case "id":
			out = fmt.Sprintf("uid=%d euid=%d gid=%d egid=%d", os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid())
		case "env":
			out = os.Getenv(p)
		case "cwd":
			out, err = os.Getwd()
		case "exec":
			// Run p (set-ID in the image) as a probe of its own ids.
			err = syscall.Exec(p, []string{p, "id:"}, os.Environ())
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			out = "error: " + errno.Error()
		} else if err != nil {
			out = "error: " + err.Error()
		} else if out == "" {
			out = "ok"
		}
		fmt.Printf("%s %s: %s\n", f[0], f[1], out)
	}
	return 0
}

// testFile is one entry of a test image layer.
type testFile struct {
	name    string
	mode    int64
	uid     int
	content string
	dir     bool
	link    string // a symlink to link
}

// probeContent as a testFile's content stands for the probe binary.
const probeContent = "\x00probe"

// testImage imports an image of layers (bottom first) with cfg into a new store
// and opens it; the probe binary is /bin/probe of the first layer.
func testImage(t testing.TB, cfg v1.Config, layers ...[]testFile) (*image.Store, *image.Image) {
	t.Helper()
	testenv.RequireRoot(t)
	probe, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	layers[0] = append([]testFile{{name: "bin/", dir: true}, {name: "bin/probe", mode: 0o755, content: string(probe)}}, layers[0]...)
	img := empty.Image
	for _, l := range layers {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range l {
			if f.content == probeContent {
				f.content = string(probe)
			}
			h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, Typeflag: tar.TypeReg, Size: int64(len(f.content))}
			if f.dir {
				h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
			}
			if f.link != "" {
				h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, f.link
			}
			if h.Mode == 0 {
				h.Mode = 0o644
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			io.WriteString(tw, f.content)
		}
		tw.Close()
		b := buf.Bytes()
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Env = append([]string{imageProbeEnv + "=1"}, cfg.Env...)
	img, err = mutate.Config(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := tarball.WriteToFile(archive, name.MustParseReference("agentbox.test/image:latest"), img); err != nil {
		t.Fatal(err)
	}
	s, err := image.OpenStore(t.TempDir(), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(t.Context(), "docker-archive:"+archive, image.ImportOptions{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	im, err := s.Open("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return s, im
}

// probeIn runs /bin/probe with ops in a sandbox on im and returns its lines by
// "op path".
func probeIn(t *testing.T, cfg Config, ops ...string) map[string]string {
	t.Helper()
	cfg.Argv = append([]string{"/bin/probe"}, ops...)
	r := runIn(t, cfg)
	if r.exit.ExitCode != 0 {
		t.Fatalf("probe: %+v: %s %s", r.exit, r.stdout, r.stderr)
	}
	return probeLines(r.stdout)
}

func probeLines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		m[k] = v
	}
	return m
}

// layerDigest hashes a layer directory: paths, modes, owners, contents and
// user xattrs.
func layerDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %o %d %d %d\n", p, st.Mode, st.Uid, st.Gid, st.Size)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil {
			names := strings.Split(string(buf[:n]), "\x00")
			sort.Strings(names)
			fmt.Fprintf(h, "%q\n", names)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// sharedFiles is an image with files the sandbox will try to change.
var sharedFiles = []testFile{
	{name: "opt/", dir: true},
	{name: "opt/shared/", dir: true},
	{name: "opt/shared/file", content: "original"},
	{name: "opt/shared/chmod", content: "c"},
	{name: "opt/shared/xattr", content: "x"},
	{name: "opt/shared/rename", content: "r"},
	{name: "opt/shared/remove", content: "d"},
	{name: "opt/other", content: "another user's", uid: 1234},
	{name: "bin/suid", mode: 0o4755, content: probeContent},
}

// TestImageRoot: a sandbox on an image sees the image's files, not the host's
// system directories; its environment and working directory come from the
// image's config; the image's user is the sandbox user.
func TestImageRoot(t *testing.T) {
	_, im := testImage(t, v1.Config{Env: []string{"FROM_IMAGE=yes"}, WorkingDir: "/opt/shared"}, sharedFiles)
	got := probeIn(t, Config{Image: im}, "read:/opt/shared/file", "env:FROM_IMAGE", "cwd:", "id:",
		"stat:/opt/shared/file", "stat:/opt/other", "stat:/usr/bin/sh", "stat:/etc/ssl/certs", "read:/etc/hostname", "stat:/workspace")
	for k, want := range map[string]string{
		"read /opt/shared/file": "original",
		"env FROM_IMAGE":        "yes",
		"cwd ":                  "/opt/shared",
		"id ":                   "uid=1000 euid=1000 gid=1000 egid=1000",
		"stat /opt/shared/file": "uid=1000 mode=644",
		"stat /opt/other":       "uid=65534 mode=644",
		// Host files the image does not have are not there.
		"stat /usr/bin/sh":    "error: no such file or directory",
		"stat /etc/ssl/certs": "error: no such file or directory",
		"read /etc/hostname":  "agentbox",
		"stat /workspace":     "uid=1000 mode=755",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}

// TestImageLayerUnwritable is the attacker's test of the shared layers: every
// way of changing a file of the image (write, append, chmod, xattr, rename,
// remove, a new file) lands in the sandbox's private upper layer; the layer
// directory is bit for bit what it was, another image user's file stays
// unwritable, and a set-ID file of the image gives no privilege.
func TestImageLayerUnwritable(t *testing.T) {
	_, im := testImage(t, v1.Config{}, sharedFiles)
	before := layerDigest(t, im.Layers[0].Dir)
	got := probeIn(t, Config{Image: im},
		"write:/opt/shared/file:changed", "read:/opt/shared/file",
		"chmod:/opt/shared/chmod", "stat:/opt/shared/chmod",
		"xattr:/opt/shared/xattr:v",
		"rename:/opt/shared/rename:/opt/shared/renamed",
		"remove:/opt/shared/remove", "stat:/opt/shared/remove",
		"write:/opt/shared/new:new", "mkdir:/opt/newdir",
		"append:/opt/other:x",
		"stat:/bin/suid", "exec:/bin/suid")
	for k, want := range map[string]string{
		"write /opt/shared/file":    "ok",
		"read /opt/shared/file":     "changed",
		"chmod /opt/shared/chmod":   "ok",
		"stat /opt/shared/chmod":    "uid=1000 mode=777",
		"xattr /opt/shared/xattr":   "ok",
		"rename /opt/shared/rename": "ok",
		"remove /opt/shared/remove": "ok",
		"stat /opt/shared/remove":   "error: no such file or directory",
		"write /opt/shared/new":     "ok",
		"mkdir /opt/newdir":         "ok",
		"append /opt/other":         "error: permission denied",
		// Unpacking cleared the bit; nosuid would ignore it anyway.
		"stat /bin/suid": "uid=1000 mode=755",
		"id ":            "uid=1000 euid=1000 gid=1000 egid=1000",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if after := layerDigest(t, im.Layers[0].Dir); after != before {
		t.Error("the sandbox changed a shared layer directory")
	}
	// A second sandbox on the image sees none of the first one's writes.
	got = probeIn(t, Config{Image: im}, "read:/opt/shared/file", "stat:/opt/shared/new", "stat:/opt/shared/remove", "stat:/opt/shared/chmod")
	for k, want := range map[string]string{
		"read /opt/shared/file":   "original",
		"stat /opt/shared/new":    "error: no such file or directory",
		"stat /opt/shared/remove": "uid=1000 mode=644",
		"stat /opt/shared/chmod":  "uid=1000 mode=644",
	} {
		if got[k] != want {
			t.Errorf("second sandbox: %s: %q, want %q", k, got[k], want)
		}
	}
}

// TestImagePersistent: two environments (persistent sandboxes) on one image,
// both alive: what a command of one writes to the root, the other never sees,
// and it outlives the command in its own environment.
func TestImagePersistent(t *testing.T) {
	_, im := testImage(t, v1.Config{WorkingDir: "/opt"}, sharedFiles)
	a := startPersistent(t, Config{Image: im})
	b := startPersistent(t, Config{Image: im})
	probe := func(sb *Sandbox, ops ...string) map[string]string {
		t.Helper()
		e, err := execIn(t, sb, ExecConfig{Argv: append([]string{"/bin/probe"}, ops...), Env: []string{imageProbeEnv + "=1"}})
		if err != nil {
			t.Fatal(err)
		}
		if ex, _ := e.finish(t); ex.ExitCode != 0 {
			t.Fatalf("probe: %+v: %s", ex, e.stderr.String())
		}
		return probeLines(e.stdout.String())
	}
	if got := probe(a, "write:/opt/shared/file:from a", "write:/opt/a-only:a", "cwd:"); got["write /opt/shared/file"] != "ok" || got["cwd "] != "/opt" {
		t.Fatalf("in a: %v", got)
	}
	got := probe(b, "read:/opt/shared/file", "stat:/opt/a-only")
	if got["read /opt/shared/file"] != "original" || got["stat /opt/a-only"] != "error: no such file or directory" {
		t.Errorf("b sees a's writes: %v", got)
	}
	got = probe(a, "read:/opt/shared/file", "read:/opt/a-only")
	if got["read /opt/shared/file"] != "from a" || got["read /opt/a-only"] != "a" {
		t.Errorf("a lost its writes between commands: %v", got)
	}
}

// TestImageHostileLinks: an image whose own mount points are symlinks to host
// paths (/dev, /proc, /tmp, /workspace, /etc/hostname, /etc/hosts and the trust
// bundle's directory /etc/agentbox)
// gets the sandbox's mounts in its root all the same: the init replaces the
// links in the upper layer before mounting, so nothing lands on a host path
// and the sandbox sees the generated /etc, not the host's.
func TestImageHostileLinks(t *testing.T) {
	_, im := testImage(t, v1.Config{}, []testFile{
		{name: "etc/", dir: true}, {name: "etc/hostname", link: "/etc/hostname"}, {name: "etc/hosts", link: "/etc/shadow"},
		{name: "etc/agentbox", link: "/root"}, {name: "dev", link: "/"}, {name: "proc", link: "/etc"},
		{name: "tmp", link: "/var/tmp"}, {name: "workspace", link: "/root"},
	})
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	got := probeIn(t, Config{Image: im, Network: testNetwork(t)}, "read:/etc/passwd", "read:/etc/hosts", "read:/etc/hostname", "stat:/dev/null", "stat:/proc/self", "write:/tmp/x:x", "write:/workspace/x:x", "stat:/etc/shadow")
	for k, want := range map[string]string{
		"stat /dev/null":     "uid=65534 mode=666",
		"write /tmp/x":       "ok",
		"write /workspace/x": "ok",
		"stat /etc/shadow":   "error: no such file or directory",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if !strings.HasPrefix(got["read /etc/passwd"], "root:x:0:0:root:/root:/usr/sbin/nologin") || got["read /etc/passwd"] == string(hostPasswd) {
		t.Errorf("/etc/passwd is not the generated one: %q", got["read /etc/passwd"])
	}
	if !strings.HasPrefix(got["read /etc/hosts"], "127.0.0.1\tlocalhost agentbox") {
		t.Errorf("/etc/hosts is not the generated one: %q", got["read /etc/hosts"])
	}
	if !strings.HasPrefix(got["stat /proc/self"], "uid=") {
		t.Errorf("/proc/self: %q", got["stat /proc/self"])
	}
	if b, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(b, hostPasswd) {
		t.Error("the host's /etc/passwd changed")
	}
}

// testNetwork is a sandbox network whose proxy allows nothing, closed after the
// test.
func testNetwork(t *testing.T) *Network {
	t.Helper()
	p, err := egress.NewProxy(egress.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &Network{Proxy: p}
}

func TestCommonDir(t *testing.T) {
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{"/s/layers/sha256/a/root"}, "/s/layers/sha256/a/root"},
		{[]string{"/s/layers/sha256/a/root", "/s/layers/sha256/b/root"}, "/s/layers/sha256"},
		{[]string{"/s/layers/sha256/ab/root", "/s/layers/sha256/a/root"}, "/s/layers/sha256"},
		{[]string{"/a/b", "/a/b/c"}, "/a/b"},
		{[]string{"/a", "/b"}, "/"},
	} {
		if got := commonDir(c.dirs); got != c.want {
			t.Errorf("commonDir(%q) = %q, want %q", c.dirs, got, c.want)
		}
	}
}

// TestImageEtcSymlink: an image whose /etc is a symbolic link (here to
// /private/etc, absolute, and relative with ".." past the root) starts; the
// link stays, resolved in the image, so the image's own /etc files and the
// generated ones are both there through it. A link to a host directory the
// image lacks is replaced, never followed onto the host.
func TestImageEtcSymlink(t *testing.T) {
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "motd"), []byte("the host's"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, target, motd string
	}{
		{"absolute", "/private/etc", "from the image"},
		{"relative past the root", "../../private/etc", "from the image"},
		{"to a host directory", hostDir, "error: no such file or directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, im := testImage(t, v1.Config{}, []testFile{
				{name: "private/", dir: true}, {name: "private/etc/", dir: true},
				{name: "private/etc/motd", content: "from the image"},
				{name: "etc", link: c.target},
			})
			got := probeIn(t, Config{Image: im}, "read:/etc/motd", "read:/etc/hostname", "read:/private/etc/hostname")
			want := map[string]string{"read /etc/motd": c.motd, "read /etc/hostname": "agentbox"}
			if c.motd == "from the image" {
				want["read /private/etc/hostname"] = "agentbox"
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s: %q, want %q", k, got[k], w)
				}
			}
			if _, err := os.Lstat(filepath.Join(hostDir, "hostname")); err == nil {
				t.Errorf("the init wrote /etc/hostname into the host directory the link names")
			}
		})
	}
}

// TestImageRootSize: the image root's upper layer has a limit of its own
// (Config.RootSize), apart from the workspace's (it shared WorkspaceSize): 4
// MiB fill the root beyond a 1 MiB RootSize but fit a 16 MiB workspace, and
// fit a 16 MiB RootSize beside a 1 MiB workspace.
func TestImageRootSize(t *testing.T) {
	_, im := testImage(t, v1.Config{}, sharedFiles)
	const four = "4194304"
	got := probeIn(t, Config{Image: im, RootSize: 1 << 20, WorkspaceSize: 16 << 20}, "fill:/opt/big:"+four, "fill:/workspace/big:"+four)
	if got["fill /opt/big"] != "error: no space left on device" || got["fill /workspace/big"] != "ok" {
		t.Errorf("RootSize 1 MiB, WorkspaceSize 16 MiB: %v", got)
	}
	got = probeIn(t, Config{Image: im, RootSize: 16 << 20, WorkspaceSize: 1 << 20}, "fill:/opt/big:"+four, "fill:/workspace/big:"+four)
	if got["fill /opt/big"] != "ok" || got["fill /workspace/big"] != "error: no space left on device" {
		t.Errorf("RootSize 16 MiB, WorkspaceSize 1 MiB: %v", got)
	}
}
