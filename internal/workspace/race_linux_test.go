package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// raceTree is a workspace where a swapper keeps replacing paths with symlinks to
// a canary outside: "victim" trades places (renameat2 RENAME_EXCHANGE) with an
// absolute and a relative symlink to the canary, and is also unlinked and
// re-created as a symlink and as a file; the directory "d" (holding a benign
// "canary") trades places with a symlink to the outside directory, which holds the
// real canary and a marker no listing may show.
type raceTree struct {
	root, outside, canary string
	canaryTime            time.Time
	stop                  chan struct{}
	done                  sync.WaitGroup
	swaps                 atomic.Int64
}

const benign = "benign x\n"

func newRaceTree(t *testing.T) *raceTree {
	base := scratchDir(t)
	rt := &raceTree{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside"), stop: make(chan struct{})}
	rt.canary = filepath.Join(rt.outside, "canary")
	writeTree(t, rt.outside, map[string]string{"canary": secret, "outside-only-marker": secret})
	writeTree(t, rt.root, map[string]string{
		"victim":   benign,
		"alt":      "->" + rt.canary,
		"alt2":     "->../outside/canary",
		"d/canary": benign,
		"dalt":     "->../outside",
	})
	rt.canaryTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(rt.canary, rt.canaryTime, rt.canaryTime)
	return rt
}

func (rt *raceTree) start() {
	rt.done.Add(1)
	go func() {
		defer rt.done.Done()
		p := func(n string) string { return filepath.Join(rt.root, n) }
		for i := 0; ; i++ {
			select {
			case <-rt.stop:
				return
			default:
			}
			switch i % 5 {
			case 0:
				unix.Renameat2(unix.AT_FDCWD, p("victim"), unix.AT_FDCWD, p("alt"), unix.RENAME_EXCHANGE)
			case 1:
				unix.Renameat2(unix.AT_FDCWD, p("victim"), unix.AT_FDCWD, p("alt2"), unix.RENAME_EXCHANGE)
			case 2:
				unix.Renameat2(unix.AT_FDCWD, p("d"), unix.AT_FDCWD, p("dalt"), unix.RENAME_EXCHANGE)
			case 3: // plain unlink and symlink
				os.Remove(p("victim"))
				os.Symlink(rt.canary, p("victim"))
			case 4:
				os.Remove(p("victim"))
				os.WriteFile(p("victim"), []byte(benign), 0o644)
				// Heal what the API's writes and removes replaced, so that both
				// kinds of entry keep existing.
				for _, l := range []struct{ name, target string }{{"alt", rt.canary}, {"alt2", "../outside/canary"}} {
					if fi, err := os.Lstat(p(l.name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
						os.Remove(p(l.name))
						os.Symlink(l.target, p(l.name))
					}
				}
			}
			rt.swaps.Add(1)
		}
	}()
}

func (rt *raceTree) halt() {
	close(rt.stop)
	rt.done.Wait()
}

// The race the issue asks for: while a goroutine swaps paths between regular files
// and symlinks to a host canary, the API reads and writes those paths 12,000
// times. The canary is never read (its content never returned), never modified
// (content and mtime), and nothing appears outside the workspace.
func TestRaceSymlinkSwap(t *testing.T) {
	rt := newRaceTree(t)
	outsideBefore, _ := os.ReadDir(rt.outside)
	r, err := OpenRoot(rt.root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	// The control: the same swapper makes a naive reader leak the canary, so the
	// setup can catch a leak.
	rt.start()
	t0 := time.Now()
	naiveLeaked := false
	for i := 0; i < 200_000 && !naiveLeaked; i++ {
		data, _ := os.ReadFile(filepath.Join(rt.root, "victim"))
		naiveLeaked = strings.Contains(string(data), secret)
	}
	if !naiveLeaked {
		rt.halt()
		t.Fatal("control: a plain os.ReadFile never read the canary; the swapper does not race")
	}

	t.Logf("control leaked after %v", time.Since(t0))
	t0 = time.Now()
	const ops = 12_000
	outcomes := map[string]int{}
	leak := func(op string, data []byte) {
		if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte("outside-only-marker")) {
			rt.halt()
			t.Fatalf("%s returned the canary", op)
		}
	}
	patch := []byte("--- a/victim\n+++ b/victim\n@@ -1 +1 @@\n-" + benign + "+" + benign)
	for i := range ops {
		var op string
		var err error
		switch i % 10 {
		case 0, 1:
			op = "read victim"
			var data []byte
			data, err = r.ReadFile("victim", 0, 0)
			leak(op, data)
		case 2:
			op = "read d/canary"
			var data []byte
			data, err = r.ReadFile("d/canary", 0, 0)
			leak(op, data)
		case 3:
			op = "write victim"
			err = r.WriteFile("victim", []byte(benign), 0o644)
		case 4:
			op = "write d/canary"
			err = r.WriteFile("d/canary", []byte(benign), 0o644)
		case 5:
			op = "str_replace victim"
			err = r.StrReplace("victim", "x", "x")
		case 6:
			op = "patch victim"
			_, err = r.ApplyPatch(patch)
		case 7:
			op = "stat+list d"
			var ents []Entry
			if _, err = r.Stat("d/canary"); err == nil {
				ents, err = r.List("d")
			}
			for _, e := range ents {
				leak(op, []byte(e.Name))
			}
		case 8:
			op = "tar d"
			var buf bytes.Buffer
			if err = r.TarTo(&buf, "d"); err == nil {
				tr := tar.NewReader(&buf)
				for {
					h, herr := tr.Next()
					if herr != nil {
						break
					}
					leak(op, []byte(h.Name))
					data, _ := io.ReadAll(tr)
					leak(op, data)
				}
			}
		case 9:
			op = "remove victim"
			if i%50 == 9 {
				err = r.Remove("victim")
			} else {
				var data []byte
				data, err = r.ReadFile("alt", 0, 0)
				leak("read alt", data)
			}
		}
		outcomes[outcome(err)]++
	}
	rt.halt()

	t.Logf("%d API operations in %v against %d swaps: %v", ops, time.Since(t0), rt.swaps.Load(), outcomes)
	data, err := os.ReadFile(rt.canary)
	fi, _ := os.Stat(rt.canary)
	if err != nil || string(data) != secret || !fi.ModTime().Equal(rt.canaryTime) {
		t.Fatalf("canary modified: %q %v %v", data, err, fi.ModTime())
	}
	outsideAfter, _ := os.ReadDir(rt.outside)
	if !slices.EqualFunc(outsideBefore, outsideAfter, func(a, b os.DirEntry) bool { return a.Name() == b.Name() }) {
		t.Fatalf("outside changed: %v -> %v", outsideBefore, outsideAfter)
	}
	// The race was real: operations met both the file and the symlink.
	if outcomes["ok"] == 0 || outcomes["escape"] == 0 || outcomes["symlink"] == 0 {
		t.Fatalf("the swaps were not observed: %v", outcomes)
	}
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrEscape):
		return "escape"
	case errors.Is(err, ErrSymlink):
		return "symlink"
	case errors.Is(err, ErrChanged):
		return "changed"
	case errors.Is(err, os.ErrNotExist):
		return "not exist"
	}
	return "other: " + err.Error()
}
