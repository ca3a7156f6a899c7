package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// readyTimeout bounds the wait for a persistent init's setup.
const readyTimeout = time.Minute

// client is the host end of a persistent init's exec socket (see nsinit.Request):
// one reader goroutine routes the init's replies to the Process they concern.
type client struct {
	s      *Sandbox
	conn   *net.UnixConn
	sendMu sync.Mutex

	mu     sync.Mutex
	procs  map[uint64]*Process
	nextID uint64
	gone   bool // the socket closed: the init is dead or dying

	ready    chan *nsinit.Reply // the first ReplyReady, once
	readyFD  *os.File           // what came with it
	landlock string
	wsDir    *os.File // O_PATH descriptor of the sandbox's /workspace
	done     chan struct{}
	closeMu  sync.Once
}

// newClient makes the socket pair and returns the client with the init's end.
func newClient(s *Sandbox) (*client, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("exec socket: %w", err)
	}
	// A request may be up to nsinit.MaxMessage bytes and goes in one message,
	// which must fit the sender's buffer. Root can exceed net.core.wmem_max.
	size := nsinit.MaxMessage + 64<<10
	if unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, size) != nil {
		_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, size)
	}
	host := os.NewFile(uintptr(fds[0]), "exec socket")
	initEnd := os.NewFile(uintptr(fds[1]), "exec socket (init)")
	c, err := net.FileConn(host)
	host.Close()
	if err != nil {
		initEnd.Close()
		return nil, nil, fmt.Errorf("exec socket: %w", err)
	}
	cl := &client{s: s, conn: c.(*net.UnixConn), procs: map[uint64]*Process{},
		ready: make(chan *nsinit.Reply, 1), done: make(chan struct{})}
	go cl.read()
	return cl, initEnd, nil
}

// awaitReady waits for the init's ReplyReady, or for its setup failure.
func (c *client) awaitReady() error {
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case r := <-c.ready:
		c.landlock = r.Landlock
		if c.readyFD == nil {
			return errors.New("sandbox: init sent no workspace descriptor")
		}
		c.wsDir = c.readyFD
		return nil
	case <-c.s.statusDone:
		if m := c.s.report; m != nil && m.Kind == nsinit.KindError {
			return &SetupError{Stage: m.Stage, Errno: unix.Errno(m.Errno), Detail: m.Detail}
		}
		// It closed its status pipe without a word: it died, or is dying.
		reaped := make(chan struct{})
		go func() {
			c.s.reapInit()
			close(reaped)
		}()
		select {
		case <-reaped:
			return fmt.Errorf("%w: init exited during setup: %v", ErrNoReport, c.s.cmd.ProcessState)
		case <-t.C:
			return fmt.Errorf("%w: init closed its status pipe during setup", ErrNoReport)
		}
	case <-t.C:
		return fmt.Errorf("sandbox: init not ready after %v", readyTimeout)
	}
}

// read routes replies until the socket closes, then fails whatever still waits.
func (c *client) read() {
	defer close(c.done)
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, flags, _, err := c.conn.ReadMsgUnix(buf, oob)
		var fds []int
		if oobn > 0 {
			fds = rights(oob[:oobn])
		}
		if err != nil || n == 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			closeFDs(fds)
			break
		}
		r, err := nsinit.DecodeReply(buf[:n])
		if err != nil {
			closeFDs(fds)
			break
		}
		if r.Kind == nsinit.ReplyReady {
			if len(fds) == 1 && c.readyFD == nil {
				c.readyFD = os.NewFile(uintptr(fds[0]), "workspace")
				fds = nil
			}
			closeFDs(fds)
			select {
			case c.ready <- r:
			default:
			}
			continue
		}
		var term *os.File
		if r.Kind == nsinit.ReplyStarted && len(fds) == 1 {
			term = ptyMaster(fds[0])
			fds = nil
		}
		closeFDs(fds)
		c.route(r, term)
	}
	c.mu.Lock()
	c.gone = true
	procs := c.procs
	c.procs = map[uint64]*Process{}
	c.mu.Unlock()
	for _, p := range procs {
		p.initGone()
	}
}

func (c *client) route(r *nsinit.Reply, term *os.File) {
	c.mu.Lock()
	p := c.procs[r.ID]
	if r.Kind == nsinit.ReplyGone || r.Kind == nsinit.ReplyError {
		delete(c.procs, r.ID)
	}
	c.mu.Unlock()
	if p != nil {
		p.deliver(r, term)
	} else if term != nil {
		term.Close()
	}
}

// ptyMaster makes fd, sent by the init with a ReplyStarted, an *os.File for the
// runtime's poller, or closes it and returns nil if it is not a pty master
// (/dev/ptmx is character device 5:2 in every devpts instance): the host reads,
// writes and resizes it, and the init is inside the sandbox.
func ptyMaster(fd int) *os.File {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 5 || unix.Minor(st.Rdev) != 2 {
		unix.Close(fd)
		return nil
	}
	if unix.SetNonblock(fd, true) != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "pty master")
}

// send writes one request with its descriptors.
func (c *client) send(r *nsinit.Request, fds ...int) error {
	b, err := nsinit.EncodeRequest(r)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if _, _, err := c.conn.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("sandbox exec: %w", err)
	}
	return nil
}

// register makes a Process for a new command id, unless the init is gone.
func (c *client) register() (*Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return nil, ErrDone
	}
	c.nextID++
	p := newProcess(c.s, c.nextID)
	c.procs[p.id] = p
	return p, nil
}

func (c *client) unregister(id uint64) {
	c.mu.Lock()
	delete(c.procs, id)
	c.mu.Unlock()
}

// close closes the socket (the init takes EOF as "kill everything") and the
// workspace descriptor, and waits for the reader to finish.
func (c *client) close() {
	c.closeMu.Do(func() {
		c.conn.Close()
		<-c.done
		if c.readyFD != nil {
			c.readyFD.Close()
		}
	})
}

func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
