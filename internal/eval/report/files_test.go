package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadCapped(t *testing.T) {
	dir := t.TempDir()
	body := "HEAD" + strings.Repeat("m", 1000) + "TAIL"
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tc := range []struct {
		name     string
		limit    int64
		headOnly bool
		want     string
		note     string
	}{
		{"fits", 1008, false, body, ""},
		{"head", 10, true, "HEADmmmmmm", "truncated: the file has 1008 bytes, the first 10 bytes are shown"},
		{"head and tail", 10, false, "HEADm\n… 998 bytes omitted …\nmTAIL", "truncated: the file has 1008 bytes, its first and last 5 bytes are shown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readCapped(root, "f", tc.limit, tc.headOnly)
			if got.Body != tc.want || got.Note() != tc.note || got.Missing != "" {
				t.Errorf("got body %q note %q missing %q\nwant body %q note %q", got.Body, got.Note(), got.Missing, tc.want, tc.note)
			}
		})
	}
}

// What a results directory can hold instead of a plain file: nothing, a symlink
// to a host file, a FIFO (which would block a naive open forever), a directory
// that escapes through a symlink or "..".
func TestAttemptFiles(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "patch.diff"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/empty", "a/link", "a/fifo"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "patch.diff"), filepath.Join(dir, "a/link/patch.diff")))
	must(syscall.Mkfifo(filepath.Join(dir, "a/fifo/test.log"), 0o644))
	must(os.Symlink(outside, filepath.Join(dir, "a/out")))
	root, err := os.OpenRoot(dir)
	must(err)
	defer root.Close()

	for _, tc := range []struct{ dir, name, missing string }{
		{"a/empty", "patch.diff", "not recorded"},
		{"", "patch.diff", "not recorded"},
		{"../" + filepath.Base(outside), "patch.diff", "not recorded"},
		{"/" + outside, "patch.diff", "not recorded"},
		{"a/link", "patch.diff", "unreadable: not a regular file"},
		{"a/fifo", "test.log", "unreadable: not a regular file"},
		{"a/out", "patch.diff", "unreadable: path escapes from parent"},
	} {
		t.Run(tc.dir+"/"+tc.name, func(t *testing.T) {
			done := make(chan text, 1)
			go func() { done <- readCapped(root, attemptFile(tc.dir, tc.name), FileCap, true) }()
			select {
			case got := <-done:
				if got.Missing != tc.missing || got.Body != "" {
					t.Errorf("got missing %q body %q, want missing %q", got.Missing, got.Body, tc.missing)
				}
			case <-time.After(time.Minute):
				t.Fatal("reading blocked")
			}
		})
	}
}

// A huge log and a huge diff are embedded cut, with a visible note, and the page
// stays small.
func TestHTMLCaps(t *testing.T) {
	dir, r := fixture(t)
	big := "FIRST-LINE\n" + strings.Repeat("x", 3<<20) + "\nLAST-LINE\n"
	for _, name := range []string{"patch.diff", "test.log"} {
		if err := os.WriteFile(filepath.Join(dir, "calc-add/1", name), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 2*FileCap+64<<10 {
		t.Errorf("report.html is %d bytes for two 3 MiB files, want at most 2×FileCap and change", fi.Size())
	}
	s := textOf(section(t, parse(t, filepath.Join(dir, "report.html")), 1))
	for _, want := range []string{
		"truncated: the file has 3.0 MiB, the first 256.0 KiB are shown",
		"truncated: the file has 3.0 MiB, its first and last 128.0 KiB are shown",
		"FIRST-LINE", "LAST-LINE", "omitted",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	if n := strings.Count(s, "LAST-LINE"); n != 1 {
		t.Errorf("LAST-LINE shown %d times, want once (the log's tail, not the diff's)", n)
	}
}

// Past TotalCap each file gets MinFileCap; the budget is charged what was read.
func TestEmbedBudget(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(strings.Repeat("y", 2*FileCap)), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tc := range []struct{ budget, wantLen, wantLeft int64 }{
		{TotalCap, FileCap, TotalCap - FileCap},
		{FileCap / 2, FileCap / 2, 0},
		{0, MinFileCap, -MinFileCap},
	} {
		b := tc.budget
		got := embed(root, "f", &b, true)
		if int64(len(got.Body)) != tc.wantLen || b != tc.wantLeft {
			t.Errorf("budget %d: embedded %d bytes, %d left; want %d, %d left", tc.budget, len(got.Body), b, tc.wantLen, tc.wantLeft)
		}
	}
}
