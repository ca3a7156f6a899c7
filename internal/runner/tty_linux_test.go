package runner

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// TestTTY: a command with Spec.TTY runs on a terminal of the sandbox's own devpts,
// which is its controlling terminal and the one output stream, under the result
// contract of every command.
func TestTTY(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	tty := &TTY{Rows: 30, Cols: 100}
	for _, tc := range []struct {
		name     string
		argv     []string
		stdin    string
		timeout  time.Duration
		total    int64
		wantCode int
		wantOut  string // a substring of stdout
		limit    Limit
	}{
		{"a terminal of the sandbox's devpts", sh(`tty; stty size; test -t 0 && test -t 1 && test -t 2 && echo all-tty; ls -1 /dev/pts`), "", 0, 0, 0,
			"/dev/pts/0\r\n30 100\r\nall-tty\r\n0\r\nptmx\r\n", ""},
		{"its controlling terminal", sh(`exec 0</dev/null 1>/dev/null; echo via-dev-tty >/dev/tty`), "", 0, 0, 0, "via-dev-tty\r\n", ""},
		{"input is typed into it", sh(`read line; echo "got $line"`), "hello\n", 0, 0, 0, "hello\r\ngot hello\r\n", ""},
		{"exit status", sh("exit 7"), "", 0, 0, 7, "", ""},
		{"signal", sh("kill -TERM $$"), "", 0, 0, 143, "", ""},
		{"timeout", sh("echo started; sleep 60"), "", 300 * time.Millisecond, 0, 143, "started", LimitTimeout},
		{"output total", sh("yes"), "", 0, 1 << 20, 143, "y\r\ny", LimitOutput},
		{"not found", []string{"agentbox-no-such-command"}, "", 0, 0, 127, "", ""},
		// The terminal's last holder is killed with the command (runIn checks that
		// none survived), so its output ends.
		{"a process left holding the terminal", sh("sleep 60 & echo left"), "", 0, 0, 0, "left\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Argv: tc.argv, TTY: tty, Limits: Limits{Timeout: tc.timeout, OutputTotal: tc.total, KillGrace: 200 * time.Millisecond}}
			if tc.stdin != "" {
				spec.Stdin = strings.NewReader(tc.stdin)
			}
			res := runIn(t, sb, spec) // no survivors
			if res.ExitCode != tc.wantCode || !strings.Contains(res.Stdout, tc.wantOut) || res.Limit != tc.limit {
				t.Fatalf("exit %d, limit %q, stdout %q; want exit %d, limit %q, stdout with %q (error %q)",
					res.ExitCode, res.Limit, res.Stdout, tc.wantCode, tc.limit, tc.wantOut, res.Error)
			}
			if res.Stderr != "" || res.StderrBytes != 0 {
				t.Fatalf("stderr %q: a terminal has one stream", res.Stderr)
			}
		})
	}
}

// TestTTYResize: Command.Resize changes what stty size reports inside, and the
// command's foreground process group gets SIGWINCH.
func TestTTYResize(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	inR, inW := io.Pipe()
	defer inW.Close() // ends the runner's copy of the input
	out := &lockedBuffer{}
	cmd, err := StartIn(context.Background(), sb, Spec{
		Argv:   sh(`trap 'echo winch; stty size' WINCH; stty size; echo ready; read x; stty size`),
		TTY:    &TTY{Rows: 24, Cols: 80},
		Stdin:  inR,
		Stdout: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "ready")
	if err := cmd.Resize(TTY{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "winch\r\n40 120")
	inW.Write([]byte("\n"))
	res, err := cmd.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	// The echo of the typed newline and the command's output may interleave.
	if !strings.Contains(res.Stdout, "24 80\r\nready") || strings.Count(res.Stdout, "40 120\r\n") != 2 {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if err := cmd.Resize(TTY{Rows: 1, Cols: 1}); err != nil {
		t.Fatalf("Resize after the end = %v, want nil", err)
	}
	if err := cmd.Resize(TTY{}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("Resize 0x0 = %v, want ErrInvalidSpec", err)
	}
	plain, err := StartIn(context.Background(), sb, Spec{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Resize(TTY{Rows: 2, Cols: 2}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("Resize of a command without a tty = %v, want ErrInvalidSpec", err)
	}
	plain.Wait()
}

// TestTTYNotTheCallersTerminal is an attacker's test: the caller's stdin is a
// terminal (a host pty) and the command, on a tty of its own, tries to reach it
// through descriptors 0-2 and /dev/tty: TIOCSTI (typing into the caller's
// shell), a new window size, echo off. Only the sandbox's pty is affected; the
// caller's terminal keeps its modes and size and receives no input.
func TestTTYNotTheCallersTerminal(t *testing.T) {
	sb := environment(t, sandbox.Config{})
	host, hostTTY, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	defer hostTTY.Close()
	if err := pty.Setsize(host, &pty.Winsize{Rows: 11, Cols: 33}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(hostTTY.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	// perl's ioctl, as an attacker's own program would call it, on each of 0-2
	// and on /dev/tty.
	const attack = `
for fd in 0 1 2; do
  perl -e 'open(my $f, "+<&=", $ARGV[0]) or die; my $c = "X"; print ioctl($f, 0x5412, $c) ? "sti-ok\n" : "sti-denied: $!\n"' $fd
done
perl -e 'open(my $f, "+<", "/dev/tty") or die "tty: $!"; my $c = "X"; print ioctl($f, 0x5412, $c) ? "sti-ok\n" : "sti-denied: $!\n"'
stty rows 77 cols 99 -echo -icanon
stty size
readlink /proc/self/fd/0
echo done`
	res := runIn(t, sb, Spec{Argv: sh(attack), TTY: &TTY{Rows: 24, Cols: 80}, Stdin: hostTTY})
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "sti-ok") || strings.Count(res.Stdout, "sti-denied") != 4 ||
		!strings.Contains(res.Stdout, "77 99\r\n") || !strings.Contains(res.Stdout, "/dev/pts/0") {
		t.Fatalf("exit %d, stdout %q (error %q)", res.ExitCode, res.Stdout, res.Error)
	}
	after, err := unix.IoctlGetTermios(int(hostTTY.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Fatalf("the caller's terminal modes changed: %+v -> %+v", before, after)
	}
	if ws, err := pty.GetsizeFull(hostTTY); err != nil || ws.Rows != 11 || ws.Cols != 33 {
		t.Fatalf("the caller's terminal is %+v (%v), want 11x33", ws, err)
	}
	// Nothing was typed into the caller's terminal: its input queue is empty.
	if n, err := unix.IoctlGetInt(int(hostTTY.Fd()), unix.TIOCINQ); err != nil || n != 0 {
		t.Fatalf("the caller's terminal has %d bytes of input (%v)", n, err)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until out holds want; the command it waits for is CPU-bound by
// nothing, so only a broken run waits the whole minute.
func waitFor(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
