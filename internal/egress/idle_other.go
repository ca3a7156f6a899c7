//go:build !unix

package egress

import "net"

// idle: without a way to peek, a kept connection is never reused.
func idle(net.Conn) bool { return false }
