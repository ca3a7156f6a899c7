package secret

import "testing"

// FuzzScan checks what the callers rely on for any input: findings lie inside the
// text, in order, disjoint, with a known class; Redact never panics.
func FuzzScan(f *testing.F) {
	f.Add("API_TOKEN=9f8a7c6e5d4b3a2f1e0d9c8b")
	f.Add("-----BEGIN RSA PRIVATE KEY-----\nİstanbul aws_key=" + "AKIA" + "IOSFODNN7EXAMPLQ")
	f.Add("postgres://u:p4ss@h\nkey: 'x'")
	f.Fuzz(func(t *testing.T, s string) {
		fs := Scan(s)
		end := 0
		for _, x := range fs {
			if x.Start < end || x.End <= x.Start || x.End > len(s) || x.Class.Rank() < Secret.Rank() {
				t.Fatalf("bad finding %+v in %q (previous end %d)", x, s, end)
			}
			end = x.End
		}
		_ = Redact(s, fs)
	})
}
