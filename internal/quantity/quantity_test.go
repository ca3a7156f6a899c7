package quantity

import (
	"errors"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "512", want: 512},
		{in: "64K", want: 64 << 10},
		{in: "64k", want: 64 << 10},
		{in: "64KiB", want: 64 << 10},
		{in: "64kb", want: 64 << 10},
		{in: "1M", want: 1 << 20},
		{in: "1.5G", want: 3 << 29},
		{in: " 2T ", want: 2 << 40},
		{in: "10B", want: 10},
		{in: "", bad: true},
		{in: "K", bad: true},
		{in: "-1", bad: true},
		{in: "-1K", bad: true},
		{in: "+1", bad: true},
		{in: "1X", bad: true},
		{in: "1e9", bad: true},
		{in: "0x10", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf", bad: true},
		{in: "9223372036854775807", want: 9223372036854775807},
		{in: "9223372036854775808", bad: true},
		{in: "8388608T", bad: true},
		{in: "1_000", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseSize(%q) = %d, want error", tc.in, got)
				}
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("error %v does not wrap ErrSyntax", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 1023, 1024, 64 << 10, 3 << 29, 5 << 40, 1<<20 + 1} {
		got, err := ParseSize(FormatSize(n))
		if err != nil || got != n {
			t.Fatalf("round trip %d -> %q -> %d, %v", n, FormatSize(n), got, err)
		}
	}
}

func TestParseCount(t *testing.T) {
	if n, err := ParseCount("32"); err != nil || n != 32 {
		t.Fatalf("ParseCount(32) = %d, %v", n, err)
	}
	for _, bad := range []string{"", "-1", "1.5", "ten", "1K"} {
		if _, err := ParseCount(bad); err == nil {
			t.Fatalf("ParseCount(%q) accepted", bad)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "64K", "1.5G", "-1", "1e9", "9223372036854775807", "1.0000001T", "KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("round trip of %d failed: %d, %v", n, back, err)
		}
	})
}
