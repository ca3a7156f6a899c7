package env

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/workspace"
)

// swapper runs in the sandbox: it swaps /workspace/target between a regular file
// and symlinks (absolute, and relative with enough ".." to climb any tree) to a
// host canary, and /workspace/sub between a directory and a symlink to a host
// directory, as fast as it can.
const swapper = `
import os, shutil, sys
canary, outdir = sys.argv[1], sys.argv[2]
os.chdir('/workspace')
def put_file():
    with open('t.tmp', 'w') as f:
        f.write('inside\n')
    os.replace('t.tmp', 'target')
def put_link(dest):
    os.symlink(dest, 'l.tmp')
    os.replace('l.tmp', 'target')
def swap_sub():
    if os.path.islink('sub'):
        os.unlink('sub')
        os.mkdir('sub')
    else:
        os.rename('sub', 'sub.old')
        os.symlink(outdir, 'sub')
        shutil.rmtree('sub.old')
os.mkdir('sub')
print('swapping', flush=True)
rel = '../' * 40 + canary.lstrip('/')
while True:
    # The API writes these paths meanwhile (it may recreate sub): a step that
    # meets its work fails and the next one goes on.
    for step in (put_file, lambda: put_link(canary), put_file, lambda: put_link(rel), swap_sub):
        try:
            step()
        except OSError:
            pass
`

const canarySecret = "HOST-CANARY-SECRET"

// TestSymlinkRace: while a process in the sandbox swaps paths between files,
// directories and symlinks to host files, at least 10,000 API reads and writes of
// those paths never read the canary, never change it, and never create anything
// outside the workspace. The canary is readable and writable by the sandbox
// user's host uid (mode 0666 in a 0777 directory), so the identity the API runs
// with does not hide a leak: only the workspace root's resolution stops it. A
// control shows that a naive read through the same descriptor leaks at once.
func TestSymlinkRace(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	outside, err := os.MkdirTemp("", "agentbox-canary-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	canary := filepath.Join(outside, "canary")
	outdir := filepath.Join(outside, "dir")
	if err := os.WriteFile(canary, []byte(canarySecret), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{outside, outdir} {
		os.Mkdir(d, 0o777)
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(canary, 0o666)
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(canary, old, old)

	id := create(t, m, CreateOptions{Workspace: fixture(t)}).ID
	pid, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"python3", "-c", swapper, canary, outdir}})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := m.Events(ctx, alice, id, pid, 0)
	for ev := range ch {
		if ev.Kind == EventStdout && strings.Contains(string(ev.Data), "swapping") {
			break
		}
		if ev.Kind == EventExit {
			t.Fatalf("swapper ended: %+v", ev.Result)
		}
	}

	// Control: following the link naively, as the same user through the same
	// descriptor, reads the canary.
	e := envOf(t, m, id)
	naive := "/proc/self/fd/" + strconv.Itoa(int(e.ns().WorkspaceDir().Fd())) + "/target"
	leaked := false
	asUser(e.uid, e.uid, func() error {
		for end := time.Now().Add(time.Minute); time.Now().Before(end) && !leaked; {
			b, _ := os.ReadFile(naive)
			leaked = string(b) == canarySecret
		}
		return nil
	})
	if !leaked {
		t.Fatal("control: a naive read never saw the canary; the harness cannot see a leak")
	}

	const perWorker, workers = 2600, 4
	var ops, ok, refused atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(s string) {
		mu.Lock()
		if len(failures) < 10 {
			failures = append(failures, s)
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				var err error
				switch (i + w) % 6 {
				case 0:
					var b []byte
					b, err = m.ReadFile(ctx, alice, id, "target", 0, 0)
					if strings.Contains(string(b), canarySecret) {
						fail("ReadFile returned the canary")
					}
				case 1:
					err = m.WriteFile(ctx, alice, id, "target", []byte("api\n"))
				case 2:
					err = m.StrReplace(ctx, alice, id, "target", "inside", "edited")
				case 3:
					err = m.WriteFile(ctx, alice, id, "sub/x", []byte("api\n"))
				case 4:
					var b []byte
					b, err = m.ReadFile(ctx, alice, id, "sub/../target", 0, 0)
					if strings.Contains(string(b), canarySecret) {
						fail("ReadFile through sub returned the canary")
					}
				case 5:
					var st workspace.Entry
					st, err = m.Stat(ctx, alice, id, "target")
					if err == nil && st.Mode&fs.ModeSymlink == 0 && st.Size == int64(len(canarySecret)) {
						fail("Stat described the canary")
					}
				}
				ops.Add(1)
				if err == nil {
					ok.Add(1)
				} else if errors.Is(err, workspace.ErrSymlink) || errors.Is(err, workspace.ErrEscape) {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	res, err := m.Wait(short, alice, id, pid)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the swapper stopped during the race: %+v %v", res, err)
	}
	if err := m.Signal(ctx, alice, id, pid, "KILL"); err != nil {
		t.Fatal(err)
	}
	m.Wait(ctx, alice, id, pid)
	t.Logf("%d API calls: %d succeeded, %d refused a symlink or an escape", ops.Load(), ok.Load(), refused.Load())
	for _, f := range failures {
		t.Error(f)
	}
	if ops.Load() < 10_000 || ok.Load() == 0 || refused.Load() == 0 {
		t.Errorf("the race was not exercised: %d calls, %d ok, %d refused", ops.Load(), ok.Load(), refused.Load())
	}
	b, err := os.ReadFile(canary)
	fi, _ := os.Stat(canary)
	if err != nil || string(b) != canarySecret || !fi.ModTime().Equal(old) {
		t.Errorf("canary changed: %q %v %v", b, err, fi.ModTime())
	}
	if ents, _ := os.ReadDir(outdir); len(ents) != 0 {
		t.Errorf("created outside the workspace: %v", ents)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 2 {
		t.Errorf("outside the workspace: %v", ents)
	}
}
