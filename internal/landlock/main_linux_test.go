package landlock

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain doubles as the victim (see runVictim) and checks that the tests leak no
// file descriptors, goroutines or child processes.
func TestMain(m *testing.M) {
	if spec := os.Getenv(victimEnv); spec != "" {
		os.Exit(runVictim(spec))
	}
	// The runtime's poller keeps two fds (epoll, eventfd) once started by the first
	// pollable file; start it now so that they count as the baseline.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds, gs := countFDs(), countGoroutines()
	code := m.Run()
	if code == 0 {
		if err := checkLeaks(fds, gs); err != nil {
			fmt.Fprintln(os.Stderr, "leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func checkLeaks(fds, gs int) error {
	var err error
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		err = nil
		if n := countFDs(); n > fds {
			err = fmt.Errorf("%d file descriptors open, %d before the tests: %s", n, fds, fdTargets())
		} else if n := countGoroutines(); n > gs {
			err = fmt.Errorf("%d goroutines, %d before the tests", n, gs)
		} else if kids := children(); kids != "" {
			err = fmt.Errorf("child processes left: %s", kids)
		}
		if err == nil {
			return nil
		}
	}
	return err
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// countGoroutines leaves out os/signal's watcher, which stays once Notify was called.
func countGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "os/signal.") {
			n++
		}
	}
	return n
}

func children() string {
	var kids []string
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if s := strings.TrimSpace(string(b)); s != "" {
			kids = append(kids, s)
		}
	}
	return strings.Join(kids, " ")
}

func fdTargets() string {
	var out []string
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"="+target)
	}
	return strings.Join(out, " ")
}
