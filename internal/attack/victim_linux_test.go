package attack

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// victim is a host process the sandbox must not reach: a copy of the attacker in its
// "victim" mode, which records every signal it receives.
type victim struct {
	cmd   *exec.Cmd
	token string
	uid   int

	mu      sync.Mutex
	signals []string
	exited  chan struct{}
}

// startVictim starts a victim running as uid on the host.
func (fx *fixture) startVictim(uid int) *victim {
	t := fx.t
	t.Helper()
	v, err := fx.startVictimAsync(uid)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// startVictimAsync is startVictim for goroutines other than the test's own.
func (fx *fixture) startVictimAsync(uid int) (*victim, error) {
	v := &victim{token: "agentbox-victim-" + randHex(8), uid: uid, exited: make(chan struct{})}
	v.cmd = exec.Command(tools.attacker, "victim", v.token)
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := v.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := v.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start victim: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if line == "ready" {
				close(ready)
				continue
			}
			v.mu.Lock()
			v.signals = append(v.signals, strings.TrimPrefix(line, "SIG "))
			v.mu.Unlock()
		}
		v.cmd.Wait()
		close(v.exited)
	}()
	fx.t.Cleanup(func() {
		v.cmd.Process.Kill()
		<-v.exited
	})
	select {
	case <-ready:
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("victim (uid %d) did not start", uid)
	}
	fx.mu.Lock()
	fx.victims = append(fx.victims, v)
	fx.mu.Unlock()
	return v, nil
}

// verify reports a victim that died or received any signal.
func (v *victim) verify() []string {
	var out []string
	select {
	case <-v.exited:
		out = append(out, fmt.Sprintf("host victim pid %d (uid %d) was killed: %v", v.cmd.Process.Pid, v.uid, v.cmd.ProcessState))
	default:
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.signals) > 0 {
		out = append(out, fmt.Sprintf("host victim pid %d (uid %d) received signals %v", v.cmd.Process.Pid, v.uid, v.signals))
	}
	return out
}

// waitExit waits up to d for the victim to die (controls that kill it).
func (v *victim) waitExit(d time.Duration) bool {
	select {
	case <-v.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// startHelper starts a host process (killed at cleanup).
func startHelper(t *testing.T, path string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}
