package nsinit

import "golang.org/x/sys/unix"

// setHostname names the sandbox's UTS namespace.
func setHostname() error {
	if err := unix.Sethostname([]byte(Hostname)); err != nil {
		return at("sethostname", err)
	}
	return at("setdomainname", unix.Setdomainname([]byte("(none)")))
}

// upLoopback brings up "lo", the only interface of the sandbox's empty network
// namespace: local servers work, nothing routes out.
func upLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return at("loopback socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return at("loopback ifreq", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return at("get lo flags", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return at("bring lo up", unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr))
}
