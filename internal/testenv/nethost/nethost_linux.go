package nethost

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/testenv"
)

var bench = netip.MustParsePrefix("198.18.0.0/15")

// New makes a Host and removes it when the test ends.
func New(t testing.TB) *Host {
	t.Helper()
	testenv.RequireRoot(t)
	_, err := exec.LookPath("ip")
	testenv.Require(t, err == nil, "needs iproute2 (ip)")
	var id [4]byte
	rand.Read(id[:])
	suffix := hex.EncodeToString(id[:])
	h := &Host{ifname: "agbx" + suffix + "h", calls: make(chan func())}
	if h.Prefix, err = freePrefix(); err != nil {
		t.Fatal(err)
	}
	base := h.Prefix.Addr()
	h.Peer, h.Addr = base.Next(), base.Next().Next()
	ready := make(chan error)
	go h.thread("agbx"+suffix+"n", ready)
	if err := <-ready; err != nil {
		t.Fatalf("nethost: %v", err)
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", h.ifname).Run()
		close(h.calls)
	})
	err = ip(nil, "addr", "add", h.Peer.String()+"/30", "dev", h.ifname)
	if err == nil {
		err = ip(nil, "link", "set", h.ifname, "up")
	}
	if err != nil {
		t.Fatalf("nethost: %v", err)
	}
	return h
}

// thread moves its OS thread into a new network namespace, where it makes the
// namespace's end of the veth pair (the other end in the test's namespace), and
// then runs calls until the Host is removed. It never unlocks the thread: the
// runtime ends a thread whose goroutine exits locked, which is how the namespace
// is left. The main thread is not used: the runtime keeps it (parked) instead, and
// /proc/self/ns/net is its namespace.
func (h *Host) thread(inner string, ready chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread() // not this thread: it is locked until locked is closed
			close(locked)
			h.inNamespace(inner, ready)
		}()
		<-locked
		runtime.UnlockOSThread()
		return
	}
	h.inNamespace(inner, ready)
}

func (h *Host) inNamespace(inner string, ready chan<- error) {
	outer, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		ready <- err
		return
	}
	err = unix.Unshare(unix.CLONE_NEWNET)
	if err == nil {
		// ip runs on this thread, so in the new namespace; the peer goes to the
		// test's namespace, passed as fd 3.
		err = ipAll(outer,
			[]string{"link", "set", "lo", "up"},
			[]string{"link", "add", inner, "type", "veth", "peer", "name", h.ifname, "netns", "/proc/self/fd/3"},
			[]string{"addr", "add", h.Addr.String() + "/30", "dev", inner},
			[]string{"link", "set", inner, "up"},
		)
	}
	outer.Close()
	ready <- err
	if err != nil {
		return
	}
	for fn := range h.calls {
		fn()
	}
}

func ipAll(fd3 *os.File, cmds ...[]string) error {
	for _, c := range cmds {
		if err := ip(fd3, c...); err != nil {
			return err
		}
	}
	return nil
}

func ip(fd3 *os.File, args ...string) error {
	cmd := exec.Command("ip", args...)
	if fd3 != nil {
		cmd.ExtraFiles = []*os.File{fd3}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// freePrefix picks a random /30 of 198.18.0.0/15 that no address in the test's
// namespace overlaps.
func freePrefix() (netip.Prefix, error) {
	out, err := exec.Command("ip", "-o", "addr").Output()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("ip -o addr: %v", err)
	}
	var used []netip.Prefix
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if p, err := netip.ParsePrefix(f[i+1]); err == nil && (f[i] == "inet" || f[i] == "inet6") {
				used = append(used, p)
			}
		}
	}
	for range 100 {
		var b [4]byte
		rand.Read(b[:])
		n := binary.BigEndian.Uint32(b[:]) % (1 << 15) // the /30s of a /15
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(bench.Addr().AsSlice())+n*4)
		p := netip.PrefixFrom(netip.AddrFrom4(a), 30)
		if !slices.ContainsFunc(used, p.Overlaps) {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free /30 in %s", bench)
}
