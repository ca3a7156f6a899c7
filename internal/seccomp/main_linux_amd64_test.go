package seccomp

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain doubles the test binary as the victim of the real-deal tests (see
// victim_linux_amd64_test.go) and otherwise checks that the tests leak no file
// descriptors, goroutines or child processes.
func TestMain(m *testing.M) {
	if name := os.Getenv(victimEnv); name != "" {
		os.Exit(victimMain(name, os.Getenv(victimFilterEnv) == "1"))
	}
	// The runtime's network poller keeps an epoll fd and an eventfd once the first
	// pipe is made; make one now so that they are counted before, not as leaks.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds, goroutines := countFDs(), runtime.NumGoroutine()
	code := m.Run()
	// The fuzzing engine keeps goroutines and pipes of its own.
	fuzzing := flag.Lookup("test.fuzz").Value.String() != "" || flag.Lookup("test.fuzzworker").Value.String() == "true"
	if code == 0 && !fuzzing {
		if err := checkLeaks(fds, goroutines); err != nil {
			fmt.Fprintln(os.Stderr, "leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func checkLeaks(fds, goroutines int) error {
	var err error
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		err = nil
		if n := countFDs(); n > fds {
			links := []string{}
			ents, _ := os.ReadDir("/proc/self/fd")
			for _, e := range ents {
				l, _ := os.Readlink("/proc/self/fd/" + e.Name())
				links = append(links, e.Name()+"="+l)
			}
			err = fmt.Errorf("%d file descriptors open, %d before the tests: %v", n, fds, links)
		} else if n := runtime.NumGoroutine(); n > goroutines {
			err = fmt.Errorf("%d goroutines, %d before the tests", n, goroutines)
		} else if c := children(); c != "" {
			err = fmt.Errorf("child processes left: %s", c)
		}
		if err == nil {
			return nil
		}
	}
	return err
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// children lists the pids of this process's children, from every thread.
func children() string {
	var all []string
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		all = append(all, strings.Fields(string(b))...)
	}
	return strings.Join(all, " ")
}
