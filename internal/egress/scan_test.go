package egress

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var encoders = map[string]func([]byte) string{
	"base64":        base64.StdEncoding.EncodeToString,
	"base64-raw":    base64.RawStdEncoding.EncodeToString,
	"base64url":     base64.URLEncoding.EncodeToString,
	"base64url-raw": base64.RawURLEncoding.EncodeToString,
	"hex":           hex.EncodeToString,
	"HEX":           func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) },
}

// TestScanEncoded is the attacker's test of the scan's encodings: a value the
// session read, anywhere in a payload (any bytes before and after it), sent
// base64-encoded (either alphabet, padded or not) or hex-encoded (either case),
// inside a larger request text, is found; the finding names the encoding,
// never the value. The same payload without the value is not.
func TestScanEncoded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		value := rapid.StringMatching(`[A-Za-z0-9+/=_\-]{8,48}`).Draw(t, "value")
		before := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "before")
		after := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "after")
		name := rapid.SampledFrom([]string{"base64", "base64-raw", "base64url", "base64url-raw", "hex", "HEX"}).Draw(t, "encoding")
		r, err := compileScan(Scan{On: true, Values: []string{value}})
		if err != nil {
			t.Fatal(err)
		}
		payload := append(append(append([]byte{}, before...), value...), after...)
		text := `{"d":"` + encoders[name](payload) + `"}`
		got := r.find(text)
		if !strings.Contains(got, "a value the session read") || strings.Contains(got, value) {
			t.Fatalf("%s of %q around the value: found %q", name, payload, got)
		}
		clean := `{"d":"` + encoders[name](append(append([]byte{}, before...), after...)) + `"}`
		if got := r.find(clean); got != "" && !strings.Contains(clean, value) {
			t.Fatalf("%s without the value: found %q", name, got)
		}
	})
}

// TestScanEncodedShort: values shorter than MinScanValue are not looked for,
// in any encoding (they would match by chance).
func TestScanEncodedShort(t *testing.T) {
	r, _ := compileScan(Scan{On: true, Values: []string{"hunter2"}})
	if len(r.values.by) != 0 || r.find("x=hunter2 "+hex.EncodeToString([]byte("hunter2"))) != "" {
		t.Fatalf("needles of a short value: %+v", r.values.by)
	}
}

// BenchmarkScanFind measures what looking for the values costs a 1 MiB request
// body with ten values read (secret.Scan's patterns, run on every scanned
// request too, are not in it): values alone (before encodings were looked for), with their
// encodings (encodings: what the proxy runs), and the other sound way, decoding
// every base64 and hex run of the body at each alignment and looking for the
// values in what it decodes to (decodeRuns).
func BenchmarkScanFind(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 1<<20)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/ \n{}\":,"
	for i := range body {
		body[i] = alphabet[rng.IntN(len(alphabet))]
	}
	text := string(body)
	var values []string
	for i := range 10 {
		values = append(values, "Zk3xP9qLm2Vw8Rt"+string(rune('a'+i)))
	}

	var plain valueSet // the values only, in one pass
	for _, v := range values {
		plain.add(needle{text: v})
	}
	enc, _ := compileScan(Scan{On: true, Values: values})
	b.Run("values-contains", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			for _, v := range values {
				if strings.Contains(text, v) {
					b.Fatal("found")
				}
			}
		}
	})

	b.Run("values", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if plain.find(text) != "" {
				b.Fatal("found")
			}
		}
	})
	b.Run("encodings", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if enc.values.find(text) != "" {
				b.Fatal("found")
			}
		}
	})
	b.Run("decode-runs", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if decodeRuns(text, values) {
				b.Fatal("found")
			}
		}
	})
}

// decodeRuns is the alternative to encodings, for the benchmark: every run of
// base64 or hex characters at least 12 long, decoded from each of its first
// four (base64) or two (hex) offsets, searched for the values.
func decodeRuns(text string, values []string) bool {
	isB64 := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
	}
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	check := func(dec []byte) bool {
		for _, v := range values {
			if strings.Contains(string(dec), v) {
				return true
			}
		}
		return false
	}
	std := strings.NewReplacer("-", "+", "_", "/")
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && isB64(text[j]) {
			j++
		}
		if run := text[i:j]; len(run) >= 12 {
			run = std.Replace(run)
			for off := range 4 {
				s := run[off:]
				s = s[:len(s)/4*4]
				if dec, err := base64.StdEncoding.DecodeString(s); err == nil && check(dec) {
					return true
				}
			}
			for off := range 2 {
				h := run[off:]
				k := 0
				for k < len(h) && isHex(h[k]) {
					k++
				}
				if dec, err := hex.DecodeString(h[:k/2*2]); err == nil && len(dec) > 0 && check(dec) {
					return true
				}
			}
		}
		i = j + 1
	}
	return false
}
