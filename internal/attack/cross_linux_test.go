package attack

import (
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEscape_CrossSandboxChannels (ANCHORS vector 21): two sandboxes run at once on
// the same host and the same workspace. A opens every channel a process can share
// without the file system (a /dev/shm file, System V shared memory, message queue and
// semaphores under a fixed key, a POSIX message queue, an abstract Unix socket, a
// kernel key) and takes an exclusive flock on a workspace file; B, started once A is
// ready, tries each of them. Stopped by private /dev/shm tmpfs, IPC and network
// namespaces, the keyctl deny rule, and one overlay per run (each with its own inodes).
func TestEscape_CrossSandboxChannels(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	key := strconv.Itoa(0x4000000 + rand.IntN(0xffffff))
	fx.snapshot()
	stdinR, stdinW := io.Pipe()
	var a *boxRun
	done := make(chan struct{})
	t.Cleanup(func() { stdinW.Close(); <-done })
	go func() {
		defer close(done) // also when run calls t.Fatal (runtime.Goexit)
		a = fx.run(boxOpts{flags: []string{"--stdin", "-"}, stdin: stdinR, cmd: fx.attack("xs-a", fx.tag, key)})
	}()
	// A marks itself ready by renaming the thread it runs on, which need not be its
	// main thread (/proc/PID/comm): the host polls the comm of every thread.
	deadline := time.Now().Add(20 * time.Second)
	ready := false
	for !ready && time.Now().Before(deadline) {
		for _, p := range procsWithTag(fx.tag) {
			dir := "/proc/" + strconv.Itoa(p.pid) + "/task"
			tasks, _ := os.ReadDir(dir)
			for _, task := range tasks {
				if c, _ := readFileString(dir + "/" + task.Name() + "/comm"); strings.TrimSpace(c) == "xs-ready" {
					ready = true
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ready {
		stdinW.Close()
		<-done
		if a != nil {
			t.Logf("A reported:\n%s", a.at.dump())
		}
		t.Fatalf("sandbox A never became ready")
	}
	fxB := fx.sibling() // same workspace and secrets, B's own argv tag
	b := fxB.run(boxOpts{cmd: fxB.attack("xs-b", fx.tag, key)})
	stdinW.Close()
	<-done
	if a == nil {
		t.FailNow()
	}

	a.at.mustBeDone(t, "xs-a")
	// A must open its channels, or B's failures prove nothing. (A POSIX message queue
	// needs write access to the namespace's mqueue root; if A cannot create one, that
	// channel is closed at both ends and B's attempt is only logged.)
	a.at.mustSucceed(t, "A could open its own channels (else B's failures prove nothing)",
		"shm-file", "shmget", "msgget", "semget", "abstract-listen", "flock")
	a.at.mustFailWith(t, "kernel keyrings", []string{"EPERM"}, "add-key")
	b.at.mustBeDone(t, "xs-b")
	b.at.mustFail(t, "reach the other sandbox", "shm-file", "shmget", "msgget", "semget", "mq", "abstract-connect", "key-search", "proc")
	b.at.mustFailWith(t, "kernel keyrings", []string{"EPERM"}, "add-key", "key-search")
	b.at.mustSucceed(t, "A's flock on its overlay must not block B", "flock")
	fx.verifyHost(a)
	fxB.verifyHost(b)
	if _, err := os.Stat("/dev/shm/agentbox-xs-a-" + fx.tag); err == nil {
		t.Errorf("HOST CHANGED: A's /dev/shm file is in the host's /dev/shm")
		os.Remove("/dev/shm/agentbox-xs-a-" + fx.tag)
	}
}
