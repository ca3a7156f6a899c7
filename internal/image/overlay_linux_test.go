package image

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

// This file checks the layer format against the mount the sandbox will make (see
// the package doc): the store's layers tree as one detached mount, idmapped so
// the image's user is the sandbox's host uid; in a new user and mount namespace
// whose only id is 1000 -> that uid, an overlay built with fsconfig "lowerdir+"
// per layer, "userxattr", and a private upper layer.

// sandboxUID is the inside id of the sandbox user (nsinit.UID).
const sandboxUID = 1000

// testHostID picks a host id for a pretend sandbox: above the range package
// sandbox reserves ids in (below 1<<30), below the foreign range.
func testHostID() int {
	var b [4]byte
	rand.Read(b[:])
	return 1<<30 + 1 + int(binary.LittleEndian.Uint32(b[:])%(1<<20))
}

// userns starts a holder process in a new user namespace mapping one id (uid and
// gid) and returns the namespace, for an idmapped mount; the holder is killed
// when the namespace is opened.
func userns(t testing.TB, inside, outside int) *os.File {
	t.Helper()
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{helperEnv + "=hold"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: inside, HostID: outside, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: inside, HostID: outside, Size: 1}},
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// idmappedTree is a detached, read-only, idmapped clone of dir in which files
// owned by IDBase+imageUID appear as hostID.
func idmappedTree(t testing.TB, dir string, imageUID, hostID int) *os.File {
	t.Helper()
	ns := userns(t, IDBase+imageUID, hostID)
	defer ns.Close()
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		t.Fatalf("open_tree: %v", err)
	}
	tree := os.NewFile(uintptr(fd), "layers")
	attr := unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(ns.Fd()),
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		tree.Close()
		t.Fatalf("idmap: %v", err)
	}
	return tree
}

// overlayReport is what the helper saw in the mounted image.
type overlayReport struct {
	Files  map[string]fileView `json:"files"`
	Writes map[string]string   `json:"writes"`
	Exec   string              `json:"exec"`
	// MountNS is how long the overlay mounts took; UpperBytes what their upper
	// layers use.
	MountNS    int64 `json:"mount_ns"`
	UpperBytes int64 `json:"upper_bytes"`
}

type fileView struct {
	Exists  bool   `json:"exists"`
	UID     uint32 `json:"uid"`
	Mode    uint32 `json:"mode"`
	Content string `json:"content"`
}

// mountImage runs the helper on image im in a pretend sandbox, checking paths,
// writing writes and running run (a path in the image, "" for none).
func mountImage(t testing.TB, im *Image, imageUID int, paths, writes []string, run string) overlayReport {
	return mountImageN(t, im, imageUID, 1, paths, writes, run)
}

// mountImageN is mountImage with count overlays of the image.
func mountImageN(t testing.TB, im *Image, imageUID, count int, paths, writes []string, run string) overlayReport {
	t.Helper()
	host := testHostID()
	tree := idmappedTree(t, im.LayersDir, imageUID, host)
	defer tree.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{
		helperEnv + "=overlay",
		"LOWERS=" + strings.Join(im.LowerDirs("/tmp/layers"), "\n"),
		"PATHS=" + strings.Join(paths, "\n"),
		"WRITES=" + strings.Join(writes, "\n"),
		"RUN=" + run,
		fmt.Sprintf("COUNT=%d", count),
	}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{tree}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: sandboxUID, HostID: host, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: sandboxUID, HostID: host, Size: 1}},
		Credential:  &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, NoSetGroups: true},
		// As the init has them (nsinit.InitCaps), and chroot to run a program
		// of the image in it.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_CHROOT},
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("overlay helper: %v: %s", err, stderr.Bytes())
	}
	var rep overlayReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("overlay helper: %v: %q", err, stdout.Bytes())
	}
	return rep
}

// overlayHelper mounts the image as the sandbox's init will, inside its own user
// and mount namespaces (COUNT times, each with its own upper layer, as COUNT
// sandboxes would), and reports what the sandbox user sees in the first.
func overlayHelper() error {
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	if err := os.MkdirAll("/tmp/layers", 0o755); err != nil {
		return err
	}
	if err := unix.MoveMount(3, "", unix.AT_FDCWD, "/tmp/layers", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach layers: %w", err)
	}
	lowers := strings.Split(os.Getenv("LOWERS"), "\n")
	count := 1
	if c := os.Getenv("COUNT"); c != "" {
		fmt.Sscan(c, &count)
	}
	var statBefore unix.Statfs_t
	unix.Statfs("/tmp", &statBefore)
	start := time.Now()
	for i := range count {
		if err := mountOverlay(lowers, fmt.Sprintf("/tmp/state%d", i), fmt.Sprintf("/tmp/root%d", i)); err != nil {
			return err
		}
	}
	rep := overlayReport{Files: map[string]fileView{}, Writes: map[string]string{}, MountNS: time.Since(start).Nanoseconds()}
	var statAfter unix.Statfs_t
	unix.Statfs("/tmp", &statAfter)
	rep.UpperBytes = int64(statBefore.Bfree-statAfter.Bfree) * statAfter.Bsize
	root := "/tmp/root0"
	for _, p := range strings.Split(os.Getenv("PATHS"), "\n") {
		if p == "" {
			continue
		}
		var v fileView
		if fi, err := os.Lstat(root + p); err == nil {
			st := fi.Sys().(*syscall.Stat_t)
			v = fileView{Exists: true, UID: st.Uid, Mode: st.Mode}
			if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(root + p)
				v.Content = string(b)
			}
		}
		rep.Files[p] = v
	}
	for _, p := range strings.Split(os.Getenv("WRITES"), "\n") {
		if p == "" {
			continue
		}
		err := os.WriteFile(root+p, []byte("written in the sandbox"), 0o644)
		rep.Writes[p] = fmt.Sprint(err)
	}
	if run := os.Getenv("RUN"); run != "" {
		cmd := exec.Command(run)
		cmd.Env = []string{debianPath}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		out, err := cmd.CombinedOutput()
		rep.Exec = string(out) + fmt.Sprint(err)
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// mountOverlay mounts lowers (top first) with a private upper layer in state at
// root, with the new mount API, as the init will.
func mountOverlay(lowers []string, state, root string) error {
	for _, d := range []string{state + "/upper", state + "/work", root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fs)
	for _, l := range lowers {
		if err := unix.FsconfigSetString(fs, "lowerdir+", l); err != nil {
			return fmt.Errorf("lowerdir+ %s: %w", l, err)
		}
	}
	if err := unix.FsconfigSetString(fs, "upperdir", state+"/upper"); err != nil {
		return err
	}
	if err := unix.FsconfigSetString(fs, "workdir", state+"/work"); err != nil {
		return err
	}
	if err := unix.FsconfigSetFlag(fs, "userxattr"); err != nil {
		return err
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("create overlay: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("fsmount: %w", err)
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, root, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach overlay: %w", err)
	}
	return nil
}

// requireOverlayMount needs root (idmapped mounts of the store) and a kernel with
// overlayfs's "lowerdir+" (Linux 6.8).
func requireOverlayMount(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err == nil {
		defer unix.Close(fs)
		err = unix.FsconfigSetString(fs, "lowerdir+", "/")
	}
	testenv.Require(t, err == nil, fmt.Sprintf("overlayfs with lowerdir+ (Linux 6.8): %v", err))
}

// TestOverlayMount: an image's layers, mounted as the sandbox will mount them,
// show the merged tree: whiteouts and opaque directories hide what is below, the
// image's root owns its files as the sandbox user, other image ids are nobody,
// the sandbox writes only its private upper layer, and a program in the image
// runs.
func TestOverlayMount(t *testing.T) {
	requireOverlayMount(t)
	s := newStore(t)
	hello := buildStatic(t, `package main; import "fmt"; func main() { fmt.Println("hello from the image") }`)
	home := reg("home/user/notes", "user's")
	home.Uid, home.Gid = 1000, 1000
	bin := reg("bin/hello", hello)
	bin.Mode = 0o755
	base := mkTar(t, dir("etc/"), reg("etc/a", "a"), reg("etc/b", "b0"), reg("etc/rootfile", "root's"),
		dir("opt/"), dir("opt/x/"), reg("opt/x/1", "1"), dir("home/"), home, dir("bin/"), bin)
	top := mkTar(t, dir("etc/"), reg("etc/.wh.a", ""), reg("etc/b", "b1"), dir("opt/x/"), reg("opt/x/.wh..wh..opq", ""), reg("opt/x/2", "2"))
	img := imageOf(t, v1.Config{}, layerOf(t, base), layerOf(t, top))
	if _, err := s.Import(t.Context(), writeDockerArchive(t, img), ImportOptions{Name: "ovl"}); err != nil {
		t.Fatal(err)
	}
	im, err := s.Open("ovl")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	uid, _, err := im.IDs()
	if err != nil || uid != 0 {
		t.Fatalf("IDs = %d, %v; want root", uid, err)
	}
	before := testenv.TreeHash(t, im.Layers[0].Dir)
	rep := mountImage(t, im, uid, []string{"/etc/a", "/etc/b", "/etc/rootfile", "/opt/x/1", "/opt/x/2", "/home/user/notes"},
		[]string{"/etc/rootfile", "/home/user/notes"}, "/bin/hello")
	for p, want := range map[string]fileView{
		"/etc/a":           {},
		"/opt/x/1":         {},
		"/etc/b":           {Exists: true, UID: sandboxUID, Mode: unix.S_IFREG | 0o644, Content: "b1"},
		"/opt/x/2":         {Exists: true, UID: sandboxUID, Mode: unix.S_IFREG | 0o644, Content: "2"},
		"/etc/rootfile":    {Exists: true, UID: sandboxUID, Mode: unix.S_IFREG | 0o644, Content: "root's"},
		"/home/user/notes": {Exists: true, UID: 65534, Mode: unix.S_IFREG | 0o644, Content: "user's"},
	} {
		if got := rep.Files[p]; got != want {
			t.Errorf("%s: %+v, want %+v", p, got, want)
		}
	}
	if rep.Writes["/etc/rootfile"] != "<nil>" {
		t.Errorf("write the image root's file: %s, want it copied up", rep.Writes["/etc/rootfile"])
	}
	if !strings.Contains(rep.Writes["/home/user/notes"], "permission denied") {
		t.Errorf("write another image user's file: %s, want permission denied", rep.Writes["/home/user/notes"])
	}
	if rep.Exec != "hello from the image\n<nil>" {
		t.Errorf("run /bin/hello: %q", rep.Exec)
	}
	if testenv.TreeHash(t, im.Layers[0].Dir) != before {
		t.Error("the sandbox's write reached a layer")
	}
}

// TestOverlayDeepStack: 300 layers mount with one fsconfig "lowerdir+" each; the
// same list as one legacy mount option string would not fit in a page.
func TestOverlayDeepStack(t *testing.T) {
	requireOverlayMount(t)
	s := newStore(t)
	const n = 300
	var layers []v1.Layer
	for i := range n {
		layers = append(layers, layerOf(t, mkTar(t, reg(fmt.Sprintf("layer/%03d", i), fmt.Sprint(i)), reg("top", fmt.Sprint(i)))))
	}
	if _, err := s.Import(t.Context(), writeDockerArchive(t, imageOf(t, v1.Config{}, layers...)), ImportOptions{Name: "deep"}); err != nil {
		t.Fatal(err)
	}
	im, err := s.Open("deep")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if opt := "lowerdir=" + strings.Join(im.LowerDirs("/tmp/layers"), ":"); len(opt) <= os.Getpagesize() {
		t.Fatalf("the legacy option string is only %d bytes: the test proves nothing", len(opt))
	}
	rep := mountImage(t, im, 0, []string{"/layer/000", "/layer/299", "/top"}, nil, "")
	if !rep.Files["/layer/000"].Exists || !rep.Files["/layer/299"].Exists || rep.Files["/top"].Content != "299" {
		t.Errorf("merged view: %+v", rep.Files)
	}
}

// buildStatic compiles a Go program without cgo and returns the binary.
func buildStatic(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "prog", "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "prog"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x7fELF")) {
		t.Fatal(errors.New("not an ELF binary"))
	}
	return string(b)
}
