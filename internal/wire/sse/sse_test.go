package sse

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAfter(t *testing.T) {
	for _, tc := range []struct {
		query, header string
		want          int64
		bad           string // what the error names, "" when accepted
	}{
		{"", "", 0, ""},
		{"after=7", "", 7, ""},
		{"", "7", 7, ""},
		{"after=3", "9", 9, ""}, // the later of the two
		{"after=9", "3", 9, ""},
		{"", " 4 ", 4, ""},
		{"after=-1", "", 0, "after="},
		{"after=1e3", "", 0, "after="},
		{"after=9223372036854775808", "", 0, "after="},
		{"after=3", "0x10", 0, "Last-Event-ID"},
		{"after=3", "-2", 0, "Last-Event-ID"},
		{"after=3", "1 2", 0, "Last-Event-ID"},
	} {
		r := httptest.NewRequest("GET", "/events?"+tc.query, nil)
		if tc.header != "" {
			r.Header.Set("Last-Event-ID", tc.header)
		}
		n, err := After(r)
		switch {
		case tc.bad == "" && (err != nil || n != tc.want):
			t.Errorf("?%s Last-Event-ID %q: %d, %v; want %d", tc.query, tc.header, n, err, tc.want)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "non-negative integer")):
			t.Errorf("?%s Last-Event-ID %q: %d, %v; want an error naming %s", tc.query, tc.header, n, err, tc.bad)
		}
	}
}

func TestStreamFraming(t *testing.T) {
	w := httptest.NewRecorder()
	st := Open(w)
	st.Event("state", "4", map[string]string{"a": "line\nbreak"})
	st.Event("error", "", 1)
	if w.Body.Len() != 0 {
		t.Fatalf("events were written before Flush: %q", w.Body.String())
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "retry: 1000\n\nid: 4\nevent: state\ndata: {\"a\":\"line\\nbreak\"}\n\nevent: error\ndata: 1\n\n"
	if got := w.Body.String(); got != want {
		t.Errorf("stream:\n%q\nwant\n%q", got, want)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" || w.Code != 200 {
		t.Errorf("status %d, Content-Type %q", w.Code, ct)
	}
}
