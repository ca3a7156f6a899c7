package sandbox

import (
	"strings"
	"syscall"
	"testing"
)

// TestRlimits: each limit holds in the command from its first instruction (the
// shell's own ulimit reads them), core dumps are always off, and the limits that
// are enforced are enforced.
func TestRlimits(t *testing.T) {
	tests := []struct {
		name   string
		limits Rlimits
		script string
		want   string
		sig    syscall.Signal
	}{
		{"core always 0", Rlimits{}, "ulimit -c; ulimit -Hc", "0\n0\n", 0},
		{"nofile", Rlimits{NoFile: Rlimit{Soft: 64, Hard: 128}}, "ulimit -n; ulimit -Hn", "64\n128\n", 0},
		{"nofile enforced", Rlimits{NoFile: Rlimit{Soft: 16}},
			`python3 -c "
import os
fds = []
try:
    while True: fds.append(os.open('/dev/null', os.O_RDONLY))
except OSError as e: print(len(fds) < 16, e.errno)"`, "True 24\n", 0},
		{"cpu soft and hard", Rlimits{CPU: Rlimit{Soft: 1, Hard: 2}}, "ulimit -t; ulimit -Ht", "1\n2\n", 0},
		{"cpu soft enforced", Rlimits{CPU: Rlimit{Soft: 1, Hard: 3}}, "exec python3 -c 'while True: pass'", "", syscall.SIGXCPU},
		{"cpu hard enforced", Rlimits{CPU: Rlimit{Soft: 1}},
			"trap '' XCPU; exec python3 -c 'import signal; signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass'", "", syscall.SIGKILL},
		{"fsize enforced", Rlimits{FSize: Rlimit{Soft: 1 << 20}}, "exec dd if=/dev/zero of=/tmp/f bs=64k count=32 status=none", "", syscall.SIGXFSZ},
		{"nproc", Rlimits{NProc: Rlimit{Soft: 512, Hard: 1024}}, "sleep 0.01; grep processes /proc/self/limits | tr -s ' '", "Max processes 512 1024 processes \n", 0},
		{"as", Rlimits{AS: Rlimit{Soft: 1 << 30}}, "sleep 0.01; grep 'address space' /proc/self/limits | tr -s ' '", "Max address space 1073741824 1073741824 bytes \n", 0},
		{"as enforced", Rlimits{AS: Rlimit{Soft: 256 << 20}},
			`python3 -c "
try:
    b = bytearray(512 << 20); print('allocated')
except MemoryError: print('MemoryError')"`, "MemoryError\n", 0},
	}
	// The init sets the limits on itself before it starts the command, so it lives
	// under them too: with an address-space limit far below its own 1.7 GB of
	// reserved Go heap it must still supervise, forward a TERM and report.
	tests = append(tests, struct {
		name   string
		limits Rlimits
		script string
		want   string
		sig    syscall.Signal
	}{"init survives a small AS", Rlimits{AS: Rlimit{Soft: 64 << 20}, NProc: Rlimit{Soft: 64}},
		"sleep 0.2 & sleep 0.2 & wait; kill -TERM 1; echo done", "done\n", 0})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runIn(t, Config{Argv: []string{"/bin/sh", "-c", tt.script}, Env: []string{"PATH=/usr/bin:/bin"}, Rlimits: tt.limits})
			if r.exit.SetupErr != nil {
				t.Fatalf("setup: %v", r.exit.SetupErr)
			}
			if r.stdout != tt.want || r.exit.Signal != tt.sig {
				t.Errorf("stdout %q signal %v (stderr %q), want %q %v", r.stdout, r.exit.Signal, strings.TrimSpace(r.stderr), tt.want, tt.sig)
			}
		})
	}
}
