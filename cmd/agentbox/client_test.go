package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoDaemon: every client command says clearly that no daemon runs, and where
// it looked.
func TestNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	conn := []string{"--server", sock, "--token", "t"}
	for _, args := range [][]string{
		append([]string{"env", "ls"}, conn...),
		append([]string{"env", "create", "--preset", "x"}, conn...),
		append([]string{"env", "rm", "e1"}, conn...),
		append(append([]string{"exec"}, conn...), "e1", "--", "true"),
		append([]string{"fs", "cat", "e1", "a.txt"}, conn...),
		append([]string{"patch", "e1", "/dev/null"}, conn...),
		append([]string{"diff", "e1"}, conn...),
		append([]string{"mcp"}, conn...),
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			_, stderr, status := cli(t, args...)
			want := "agentbox: no agentbox daemon at " + sock + ": start one with `agentbox serve`\n"
			if status != 125 || stderr != want {
				t.Fatalf("status %d, stderr %q", status, stderr)
			}
		})
	}
}

// TestSocketDirRefused guards issue 10's finding 8 end to end: neither `serve` nor
// a client command uses a socket directory that another user may write in (one
// who made $TMPDIR/agentbox-UID first could swap the socket and capture the
// token). Both fail before writing or sending a token, naming the directory and
// what to do.
func TestSocketDirRefused(t *testing.T) {
	top, err := os.MkdirTemp("", "ab") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(top)
	dir := filepath.Join(top, "agentbox-1000")
	os.Mkdir(dir, 0o700)
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "agentbox.sock")
	for _, args := range [][]string{
		{"serve", "--socket", sock},
		{"env", "ls", "--server", sock, "--token", "some-token-0123456789"},
		{"env", "ls", "--server", sock},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			_, stderr, status := cli(t, args...)
			if status == 0 || !strings.Contains(stderr, "socket directory "+dir+" is writable by group or others (mode 0777)") ||
				!strings.Contains(stderr, "--socket") {
				t.Fatalf("status %d, stderr %q", status, stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("left %v in the directory", entries)
			}
		})
	}
}
