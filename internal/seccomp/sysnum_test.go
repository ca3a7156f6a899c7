package seccomp

import (
	"slices"
	"testing"

	elastic "github.com/elastic/go-seccomp-bpf/arch"
)

// newerThanElastic are calls added to Linux after go-seccomp-bpf v1.6.0's table;
// abi_linux_amd64_test.go checks them against x/sys instead.
var newerThanElastic = []string{"uprobe", "file_getattr", "file_setattr", "listns", "rseq_slice_yield"}

// TestSysnumTable checks the x86_64 table against go-seccomp-bpf's, which is
// generated from the kernel's syscall_64.tbl rather than from x/sys.
func TestSysnumTable(t *testing.T) {
	theirs := elastic.X86_64.SyscallNames
	if len(theirs) < 300 {
		t.Fatalf("reference table has only %d entries", len(theirs))
	}
	for name, nr := range theirs {
		if got, ok := sysnumX86_64[name]; !ok || got != uint32(nr) {
			t.Errorf("%s: ours %d (present %v), kernel table %d", name, got, ok, nr)
		}
	}
	for name, nr := range sysnumX86_64 {
		if _, ok := theirs[name]; !ok && !slices.Contains(newerThanElastic, name) {
			t.Errorf("%s (%d) is not in the kernel table", name, nr)
		}
	}
}

// TestMaxReviewed: regenerating the table from a newer x/sys adds calls above
// maxReviewed; this fails until someone reviews them and raises it.
func TestMaxReviewed(t *testing.T) {
	for name, nr := range sysnumX86_64 {
		if nr > maxReviewed {
			t.Errorf("%s (%d) is above maxReviewed %d: review it for DefaultPolicy, then raise maxReviewed", name, nr, maxReviewed)
		}
	}
	if sysnumX86_64["rseq_slice_yield"] != maxReviewed {
		t.Errorf("maxReviewed %d is not the last call in the table", maxReviewed)
	}
}
