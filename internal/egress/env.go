package egress

// ProxyEnv returns the environment that points a sandbox's HTTP clients at the
// proxy listening on addr ("127.0.0.1:3128") inside its namespace, in both the
// upper and lower case spellings that tools read. Loopback stays direct: it is the
// sandbox's own. The variables are a convenience, not the boundary: a client that
// ignores them (curl --noproxy '*') finds no route out of the namespace.
func ProxyEnv(addr string) []string {
	url := "http://" + addr
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + url, "http_proxy=" + url,
		"HTTPS_PROXY=" + url, "https_proxy=" + url,
		"ALL_PROXY=" + url, "all_proxy=" + url,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}
