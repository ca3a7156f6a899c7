package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The checker must notice each kind of leak, or every TestMain that uses it asserts
// nothing.
func TestCheckFindsLeaks(t *testing.T) {
	base := Take()
	if err := base.Check(0); err != nil {
		t.Fatalf("clean baseline reported: %v", err)
	}

	f, err := os.Open("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Check(50 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "file descriptors") {
		t.Fatalf("open descriptor not reported: %v", err)
	}
	f.Close()

	stop := make(chan struct{})
	go func() { <-stop }()
	if err := base.Check(50 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "goroutines") {
		t.Fatalf("goroutine not reported: %v", err)
	}
	close(stop)

	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = base.Check(50 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	if err == nil || !strings.Contains(err.Error(), "child processes") {
		t.Fatalf("child not reported: %v", err)
	}
	if err := base.Check(30 * time.Second); err != nil {
		t.Fatalf("after cleanup: %v", err)
	}
}
