package egress

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestGuard(t *testing.T) {
	ph, _ := NewPlaceholder("TOKEN")
	secrets := []secretRule{{name: "TOKEN", placeholder: ph}}
	clean := strings.Repeat("x", 100000) + ph[:len(ph)-1] + "y" + strings.Repeat("z", 5000)
	for name, r := range map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halves":   func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"data+EOF": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	} {
		t.Run(name, func(t *testing.T) {
			got, err := io.ReadAll(newGuard(r(clean), secrets))
			if err != nil || string(got) != clean {
				t.Fatalf("clean stream: %d bytes, %v", len(got), err)
			}
			for _, at := range []int{0, 1, 4096, 32 << 10, 99990} {
				dirty := clean[:at] + ph + clean[at:]
				got, err := io.ReadAll(newGuard(r(dirty), secrets))
				var pe *placeholderError
				if !errors.As(err, &pe) || pe.name != "TOKEN" {
					t.Fatalf("placeholder at %d: %v", at, err)
				}
				if bytes.Contains(got, []byte(ph)) || len(got) > at+len(ph)-1 {
					t.Fatalf("placeholder at %d: passed on %d bytes, placeholder whole: %v", at, len(got), bytes.Contains(got, []byte(ph)))
				}
			}
		})
	}
}
