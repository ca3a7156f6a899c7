package main

import (
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
		append([]string{"env", "create", "--template", "x"}, conn...),
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
