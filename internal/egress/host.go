package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// lookup is UTS #46 lookup processing, what browsers apply to a name before they
// resolve it: case folding and compatibility mapping, punycode for Unicode labels,
// validation of labels that are already punycode, the bidi rule, STD3 letters,
// digits and hyphens only, DNS lengths. Hyphens in positions 3 and 4 stay allowed
// (CDN names such as r3---sn-abc.googlevideo.com have them).
var lookup = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.StrictDomainName(true),
	idna.VerifyDNSLength(true),
	idna.Transitional(false),
	idna.CheckHyphens(false),
)

// maxHostInput bounds what CanonicalHost looks at: a DNS name is at most 253 bytes,
// a Unicode one a few times that.
const maxHostInput = 1024

// CanonicalHost returns the canonical form of a host name, the only form the policy
// compares and the proxy resolves: ASCII, lowercase, without the trailing dot,
// Unicode labels as punycode (UTS #46 lookup processing).
//
// It refuses, with ErrBadHost, the empty name, names longer than DNS allows, empty
// labels, labels that begin or end with a hyphen, invalid punycode, and every byte
// that is not a letter, digit, hyphen or dot — among them NUL, CR, LF, space, '%',
// '@', '/', '\', ':', '_' and their fullwidth look-alikes. A host that is an IP
// address in any form an address parser accepts (see ParseIPLiteral), or whose last
// label is a number as in browsers' URL parsing (1.2.3.4.5, example.123), is a
// *LiteralError: the policy names hosts, it never matches an address.
func CanonicalHost(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty host name", ErrBadHost)
	}
	if len(s) > maxHostInput {
		return "", fmt.Errorf("%w: host name of %d bytes", ErrBadHost, len(s))
	}
	if a, ok := ParseIPLiteral(s); ok {
		return "", &LiteralError{Host: s, Addr: a}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < utf8.RuneSelf && !isLDH(c) && c != '.' {
			return "", fmt.Errorf("%w: %q: byte %q at offset %d is not a letter, digit, '-' or '.'", ErrBadHost, s, c, i)
		}
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrBadHost, s)
	}
	name := strings.TrimSuffix(s, ".")
	ascii, err := lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadHost, s, err)
	}
	if a, ok := ParseIPLiteral(ascii); ok {
		return "", &LiteralError{Host: s, Addr: a}
	}
	if err := checkLabels(ascii); err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadHost, s, err)
	}
	if endsInNumber(ascii) {
		return "", &LiteralError{Host: s}
	}
	return ascii, nil
}

// checkLabels is the last word on what CanonicalHost returns, whatever the IDNA
// mapping did: lowercase letters, digits and hyphens in non-empty labels of at most
// 63 bytes that neither begin nor end with a hyphen, at most 253 bytes in all.
func checkLabels(name string) error {
	if len(name) == 0 || len(name) > 253 {
		return fmt.Errorf("name of %d bytes (1 to 253 allowed)", len(name))
	}
	for label := range strings.SplitSeq(name, ".") {
		switch {
		case label == "":
			return fmt.Errorf("empty label")
		case len(label) > 63:
			return fmt.Errorf("label of %d bytes (63 allowed)", len(label))
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Errorf("label %q begins or ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLDH(c) || ('A' <= c && c <= 'Z') {
				return fmt.Errorf("byte %q in label %q", c, label)
			}
		}
	}
	return nil
}

func isLDH(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

// endsInNumber is the WHATWG URL rule: a host whose last label is all digits, or 0x
// and hex digits, is an IPv4 address to a browser (and refused if it is not a valid
// one), never a name.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// LiteralError reports a host that is an IP address. Addr is the address it denotes,
// or the zero Addr for a malformed one (1.2.3.4.5).
type LiteralError struct {
	Host string
	Addr netip.Addr
}

func (e *LiteralError) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("%q ends in a number but is not a valid IP address; the policy names hosts", e.Host)
	}
	return fmt.Sprintf("%q is the IP address %s; the policy names hosts: pin a name to the address with dns_override NAME=IP (and allow_private for a private one)", e.Host, e.Addr)
}

// Is makes errors.Is(err, ErrBadHost) hold for a literal as well.
func (e *LiteralError) Is(target error) bool { return target == ErrBadHost }
