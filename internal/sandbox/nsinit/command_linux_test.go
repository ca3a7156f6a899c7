package nsinit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(bin, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Root passes access(X_OK) on any file with one x bit; data has none.
		t.Log("running as root")
	}
	tests := []struct {
		name, cmd, cwd string
		env            []string
		want           string
		err            error
	}{
		{"found in PATH", "tool", "/", []string{"PATH=/nonexistent:" + bin}, filepath.Join(bin, "tool"), nil},
		{"last PATH wins", "tool", "/", []string{"PATH=/nonexistent", "PATH=" + bin}, filepath.Join(bin, "tool"), nil},
		{"not found", "nope", "/", []string{"PATH=" + bin}, "", unix.ENOENT},
		{"not executable", "data", "/", []string{"PATH=" + bin}, "", unix.EACCES},
		{"directory", "subdir", "/", []string{"PATH=" + bin}, "", unix.EACCES},
		{"slash is not searched", "bin/tool", dir, []string{"PATH=/nonexistent"}, filepath.Join(bin, "tool"), nil},
		{"relative to cwd", "./tool", bin, nil, filepath.Join(bin, "tool"), nil},
		{"relative PATH entry", "tool", dir, []string{"PATH=bin"}, filepath.Join(bin, "tool"), nil},
		{"empty PATH entry is cwd", "tool", bin, []string{"PATH=:/nonexistent"}, filepath.Join(bin, "tool"), nil},
		{"absolute missing", "/nonexistent/x", "/", nil, "", unix.ENOENT},
		{"default PATH", "sh", "/", nil, "/usr/bin/sh", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lookPath(tt.cmd, tt.cwd, tt.env)
			if err != tt.err {
				t.Fatalf("lookPath(%q) error = %v, want %v", tt.cmd, err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Errorf("lookPath(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}
