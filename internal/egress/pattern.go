package egress

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Pattern is one allowlist entry: an exact host name, or "*." and a suffix, with an
// optional port. Host is canonical (CanonicalHost).
type Pattern struct {
	Host     string
	Wildcard bool   // matches names below Host, at any depth, not Host itself
	Port     uint16 // 0: any port
}

// ParsePattern parses NAME, *.SUFFIX, NAME:PORT or *.SUFFIX:PORT. The name is
// canonicalised as CanonicalHost does, so "Example.COM." and "example.com" are the
// same pattern and "bücher.example" is "xn--bcher-kva.example". It refuses an IP
// address (the allowlist names hosts: pin addresses with dns_override), a wildcard
// anywhere but as the whole first label, "*" alone, and a wildcard over a public
// suffix ("*.com", "*.co.uk", "*.github.io"), which would span names their
// registrants do not share.
func ParsePattern(s string) (Pattern, error) {
	var p Pattern
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.IndexByte(s[:i], ':') < 0 {
		port, err := parsePort(s[i+1:])
		if err != nil {
			return Pattern{}, err
		}
		host, p.Port = s[:i], port
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.Wildcard, host = true, rest
	}
	if strings.Contains(host, "*") {
		return Pattern{}, errors.New("a wildcard is only allowed as the whole first label, as in *.example.com")
	}
	name, err := CanonicalHost(host)
	if err != nil {
		return Pattern{}, err
	}
	if p.Wildcard {
		if ps, _ := publicsuffix.PublicSuffix(name); ps == name {
			return Pattern{}, fmt.Errorf("*.%s spans a public suffix; name the hosts under it", name)
		}
	}
	p.Host = name
	return p, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '0' {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// Match reports whether the canonical host name and port fall under the pattern.
func (p Pattern) Match(host string, port uint16) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	if !p.Wildcard {
		return host == p.Host
	}
	return len(host) > len(p.Host)+1 && strings.HasSuffix(host, p.Host) && host[len(host)-len(p.Host)-1] == '.'
}

func (p Pattern) String() string {
	s := p.Host
	if p.Wildcard {
		s = "*." + s
	}
	if p.Port != 0 {
		s += ":" + strconv.Itoa(int(p.Port))
	}
	return s
}
