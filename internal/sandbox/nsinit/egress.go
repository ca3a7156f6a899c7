package nsinit

// Network is what the init does for a sandbox with egress. Before it confines
// itself it listens on Addr, a loopback address of the sandbox's network namespace,
// sends the listening socket to the host over Socket (a Unix socket the host
// passed; one message, SCM_RIGHTS) and closes both: the host's egress proxy
// accepts every connection made to Addr, and nothing in the sandbox holds the
// listener or forwards a byte. It also adds CACert to the generated trust store
// (TrustBundle).
type Network struct {
	Addr   string `json:"addr"`              // "127.0.0.1:3128"
	Socket int    `json:"socket"`            // descriptor of the host's Unix socket
	CACert string `json:"ca_cert,omitempty"` // PEM: the sandbox's egress CA
}

// TrustBundle is the sandbox's CA bundle when it has a Network: the root file
// system's bundle and Network.CACert. The init also binds it over the system
// bundle (/etc/ssl/certs/ca-certificates.crt) where there is one, for programs
// that read no variable.
const TrustBundle = "/etc/agentbox/ca-certificates.crt"

// systemBundles are where root file systems keep their CA bundle (Debian, Red
// Hat, Alpine's and OpenSSL's default), in the order the init looks for one.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/cert.pem",
}
