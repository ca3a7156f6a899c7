package egress

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Pattern
	}{
		{"example.com", Pattern{Host: "example.com"}},
		{"Example.COM.", Pattern{Host: "example.com"}},
		{"example.com:443", Pattern{Host: "example.com", Port: 443}},
		{"*.example.com", Pattern{Host: "example.com", Wildcard: true}},
		{"*.Example.com:8443", Pattern{Host: "example.com", Wildcard: true, Port: 8443}},
		{"bücher.example", Pattern{Host: "xn--bcher-kva.example"}},
		{"*.user.github.io", Pattern{Host: "user.github.io", Wildcard: true}},
		{"registry", Pattern{Host: "registry"}},
	} {
		got, err := ParsePattern(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParsePattern(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := ParsePattern(got.String()); err != nil || again != got {
			t.Errorf("ParsePattern(%q) does not round-trip: %+v, %v", got.String(), again, err)
		}
	}
}

func TestParsePatternRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"*", "wildcard"},
		{"*.", "empty"},
		{"**.example.com", "wildcard"},
		{"*example.com", "wildcard"},
		{"foo.*.example.com", "wildcard"},
		{"example.*", "wildcard"},
		{"*.com", "public suffix"},
		{"*.co.uk", "public suffix"},
		{"*.github.io", "public suffix"},
		{"*.localhost", "public suffix"},
		{"example.com:0", "port"},
		{"example.com:65536", "port"},
		{"example.com:0443", "port"},
		{"example.com:", "port"},
		{"example.com:http", "port"},
		{"example.com:+443", "port"},
		{"127.0.0.1", "IP address"},
		{"127.0.0.1:443", "IP address"},
		{"2130706433", "IP address"},
		{"[::1]:443", "byte"},
		{"::1", "IP address"},
		{"exa mple.com", "byte"},
		{"evil.com\x00.example.com", "byte"},
		{"example.com\r\n", "byte"},
		{"user@example.com", "byte"},
		{"https://example.com", "port"},
		{"example.com/path", "byte"},
	} {
		got, err := ParsePattern(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePattern(%q) = %+v, %v; want an error about %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParsePattern("10.0.0.1"); !errors.As(err, new(*LiteralError)) {
		t.Errorf("an address as a pattern: %v; want a LiteralError", err)
	}
}

func TestPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		host    string
		port    uint16
		want    bool
	}{
		{"example.com", "example.com", 443, true},
		{"example.com", "example.com", 22, true},
		{"example.com", "www.example.com", 443, false},
		{"example.com", "evilexample.com", 443, false},
		{"example.com", "example.com.evil.net", 443, false},
		{"example.com", "example.co", 443, false},
		{"example.com:443", "example.com", 443, true},
		{"example.com:443", "example.com", 80, false},
		{"*.example.com", "a.example.com", 443, true},
		{"*.example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"*.example.com", "evilexample.com", 443, false},
		{"*.example.com", "aexample.com", 443, false},
		{"*.example.com", "a.example.com.evil.net", 443, false},
		{"*.example.com:443", "a.example.com", 80, false},
	} {
		p, err := ParsePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(tc.host, tc.port); got != tc.want {
			t.Errorf("%s.Match(%s, %d) = %v; want %v", tc.pattern, tc.host, tc.port, got, tc.want)
		}
	}
}
