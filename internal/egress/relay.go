package egress

import (
	"net"
	"sync"
)

// Relay joins every connection accepted on l to a fresh connection from dial and
// copies both ways until both are done. It is the in-sandbox half of a bridge
// where the host cannot hold a socket of the sandbox's network namespace (a VM's
// vsock, say): l listens on the sandbox's loopback, dial reaches the host's proxy.
// Relay decides nothing; the proxy checks every connection. It returns l.Accept's
// error, after closing the connections still open.
func Relay(l net.Listener, dial func() (net.Conn, error)) error {
	var (
		mu    sync.Mutex
		open  = map[net.Conn]bool{}
		wg    sync.WaitGroup
		track = func(c net.Conn, add bool) {
			mu.Lock()
			defer mu.Unlock()
			if add {
				open[c] = true
			} else {
				delete(open, c)
			}
		}
	)
	defer func() {
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		track(c, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer track(c, false)
			defer c.Close()
			up, err := dial()
			if err != nil {
				return
			}
			track(up, true)
			defer track(up, false)
			splice(c, c, up)
		}()
	}
}
