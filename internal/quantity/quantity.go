// Package quantity parses the sizes and counts that users type on the command line and
// in configuration: "64K", "1.5G", "512", "100MiB". It uses binary multiples (K = 1024)
// because every limit it feeds (rlimits, cgroups, output caps) counts bytes. It does not
// parse durations: time.ParseDuration already does that well.
package quantity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax reports a size that is not a non-negative number with an optional unit.
var ErrSyntax = errors.New("invalid size")

// SizeError carries the input that failed and why.
type SizeError struct {
	Input string
	Why   string
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("invalid size %q: %s (use a whole number of bytes or a number with K, M, G or T, e.g. 64K or 1.5G)", e.Input, e.Why)
}

func (e *SizeError) Unwrap() error { return ErrSyntax }

var units = []struct {
	suffix string
	shift  uint
}{
	// Longest suffixes first so "KiB" is not read as "K" followed by junk.
	{"KIB", 10}, {"MIB", 20}, {"GIB", 30}, {"TIB", 40},
	{"KB", 10}, {"MB", 20}, {"GB", 30}, {"TB", 40},
	{"K", 10}, {"M", 20}, {"G", 30}, {"T", 40},
	{"B", 0},
}

// ParseSize parses a byte count such as "512", "64K", "1.5G" or "100MiB".
// Fractions are allowed with a unit and rounded down to whole bytes.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, &SizeError{Input: s, Why: "empty"}
	}
	up := strings.ToUpper(in)
	var shift uint
	num := up
	for _, u := range units {
		if strings.HasSuffix(up, u.suffix) {
			shift = u.shift
			num = strings.TrimSpace(up[:len(up)-len(u.suffix)])
			break
		}
	}
	if num == "" {
		return 0, &SizeError{Input: s, Why: "no number"}
	}
	if strings.ContainsAny(num, "+-") {
		return 0, &SizeError{Input: s, Why: "sign not allowed"}
	}
	if !strings.Contains(num, ".") && !strings.ContainsAny(num, "eEpPxX_") {
		n, err := strconv.ParseUint(num, 10, 63)
		if err != nil {
			return 0, &SizeError{Input: s, Why: "not a number or too large"}
		}
		if shift > 0 && n > math.MaxInt64>>shift {
			return 0, &SizeError{Input: s, Why: "too large"}
		}
		return int64(n << shift), nil
	}
	if strings.ContainsAny(num, "eEpPxX_") {
		return 0, &SizeError{Input: s, Why: "not a plain decimal number"}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, &SizeError{Input: s, Why: "not a number"}
	}
	v := f * float64(uint64(1)<<shift)
	if v >= math.MaxInt64 {
		return 0, &SizeError{Input: s, Why: "too large"}
	}
	return int64(v), nil
}

// FormatSize renders n bytes with the largest binary unit that divides it exactly, so
// that ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	for _, u := range []struct {
		s     string
		shift uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n != 0 && n%(int64(1)<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseCount parses a non-negative whole number such as a process or file count.
func ParseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid count %q: use a whole number of 0 or more", s)
	}
	return n, nil
}

// FormatCount renders a count for help text and messages.
func FormatCount(n int64) string { return strconv.FormatInt(n, 10) }
