package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
)

// TestNetTableFollow: rows printed by later flushes, as net log --follow prints
// them, start each column where the header does.
func TestNetTableFollow(t *testing.T) {
	var b bytes.Buffer
	tb := newNetTable(&b)
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	batches := [][]client.NetworkEvent{
		{{Seq: 1, Time: at, Proto: "connect", Host: "proxy.golang.org", Port: 443, Addr: "142.250.1.1:443", Decision: "allow", BytesUp: 512, BytesDown: 40960}},
		{{Seq: 2, Time: at, Proto: "http", Host: "a.io", Decision: "deny", Reason: "not_allowed"},
			{Seq: 10, Time: at, Proto: "connect", Host: "files.pythonhosted.org", Port: 443, Addr: "[2a04:4e42::223]:443", Decision: "allow", BytesUp: 1, BytesDown: 12345678}},
	}
	for _, evs := range batches {
		for _, e := range evs {
			tb.add(e)
		}
		if err := tb.tw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	field := regexp.MustCompile(`\S+`)
	starts := func(line string) []int {
		var s []int
		for _, m := range field.FindAllStringIndex(line, -1) {
			s = append(s, m[0])
		}
		return s
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header and 3 rows:\n%s", len(lines), b.String())
	}
	for _, l := range lines[1:] {
		if !slices.Equal(starts(l), starts(lines[0])) {
			t.Errorf("a row's columns do not start under the header's:\n%s", b.String())
			break
		}
	}
}
