package sandbox

import (
	"os/exec"
	"runtime"
	"sync"
)

// The parent-death signal of a process fires when the thread that forked it
// exits, not when its parent process does. The Go runtime ends a thread when a
// goroutine locked to it returns, so an init forked from an ordinary goroutine
// would be SIGKILLed whenever its thread happened to be locked by some goroutine
// that then returned (seen: the environment service's file operations, which lock
// a thread to change its file system identity, killed environments). So every
// process with a parent-death signal is forked by the spawner, a goroutine locked
// to its thread until every process it forked has been reaped; it then unlocks
// the thread (which lives on) and retires, and the next spawn starts a new one.
var (
	spawnMu  sync.Mutex
	spawnReq chan func() // the current spawner's; nil when there is none
	spawned  int         // processes the current spawner forked, not yet reaped
)

// spawn runs cmd.Start on the spawner's thread. Unless it fails, the caller calls
// release once the process has been reaped.
func spawn(cmd *exec.Cmd) (release func(), err error) {
	spawnMu.Lock()
	if spawnReq == nil {
		spawnReq = make(chan func())
		go runSpawner(spawnReq)
	}
	req := spawnReq
	spawned++
	spawnMu.Unlock()

	var once sync.Once
	release = func() { once.Do(unspawn) }
	done := make(chan struct{})
	req <- func() { err = cmd.Start(); close(done) }
	<-done
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func unspawn() {
	spawnMu.Lock()
	defer spawnMu.Unlock()
	if spawned--; spawned == 0 {
		close(spawnReq)
		spawnReq = nil
	}
}

func runSpawner(req chan func()) {
	runtime.LockOSThread()
	for fn := range req {
		fn()
	}
	// Nothing it forked is alive: the thread may end some day without harm.
	runtime.UnlockOSThread()
}
