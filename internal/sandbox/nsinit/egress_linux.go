package nsinit

import (
	"errors"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// openEgress listens on n.Addr in the sandbox's network namespace (loopback is up)
// and sends the listener to the host. The init keeps no copy: after this, the only
// holder of the socket is the host's proxy, and a connection to Addr reaches
// nothing else. If the host is gone, the init fails here and runs no command.
func openEgress(n *Network) error {
	defer unix.Close(n.Socket)
	ap, err := netip.ParseAddrPort(n.Addr)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return at("egress listener", errors.New("address "+n.Addr+" is not an IPv4 loopback address with a port"))
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return at("egress socket", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return atf(err, "bind egress listener %s", n.Addr)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return at("listen egress", err)
	}
	return at("send egress listener", unix.Sendmsg(n.Socket, []byte{'L'}, unix.UnixRights(fd), nil, 0))
}

// mountTrust writes TrustBundle (the bundle of the root file system at prefix and
// the sandbox's CA) into the new root and binds it read-only over the root's own
// bundle, if it has one. A root without a bundle gets just the CA.
func mountTrust(prefix, caPEM string, rf *rootFiles) error {
	// Read through an os.Root: a root file system's links resolve inside it, never
	// to a host file.
	root, err := os.OpenRoot(prefix + "/")
	if err != nil {
		return at("open root file system", err)
	}
	defer root.Close()
	var bundle []byte
	for _, p := range systemBundles {
		if b, err := root.ReadFile(rf.path(p)[1:]); err == nil {
			bundle = b
			break
		}
	}
	if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, caPEM...)
	dst := base + rf.path(TrustBundle)
	if err := rf.put(TrustBundle, bundle); err != nil {
		return err
	}
	for _, p := range systemBundles {
		fi, err := os.Lstat(base + rf.path(p))
		if err != nil || !fi.Mode().IsRegular() {
			continue // absent, or a link into a tree the init mirrored as it is
		}
		if err := bindRO(dst, base+rf.path(p)); err != nil {
			return atf(err, "bind %s over %s", TrustBundle, p)
		}
	}
	return nil
}
