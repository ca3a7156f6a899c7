package client

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestNewOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"socket", Options{Socket: "/run/a.sock"}, true},
		{"url", Options{URL: "http://127.0.0.1:7070"}, true},
		{"both", Options{Socket: "/a", URL: "http://x"}, false},
		{"neither", Options{}, false},
		{"not http", Options{URL: "ftp://x"}, false},
		{"no host", Options{URL: "http://"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestErrors: an envelope becomes an *Error with its status; a body that is not an
// envelope (a proxy's page) still becomes one, with a code from the status; a
// failure after a stream began arrives in trailers.
func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/environments/e1":
			w.WriteHeader(404)
			w.Write([]byte(`{"error":{"code":"ENOENT","message":"environment \"e1\" not found","retryable":false,"suggested_action":"list"}}`))
		case "/v1/environments/e2":
			http.Error(w, "<html>Bad Gateway</html>\nmore", http.StatusBadGateway)
		case "/v1/environments/e3/files/tar":
			w.Header().Set("Trailer", ErrorTrailer+", "+ErrorStatusTrailer)
			w.Write([]byte("partial"))
			w.Header().Set(ErrorTrailer, `{"error":{"code":"EPERM","message":"x: permission denied","retryable":false}}`)
			w.Header().Set(ErrorStatusTrailer, "403")
		}
	}))
	defer srv.Close()
	c, _ := New(Options{URL: srv.URL, Token: "tok"})
	ctx := context.Background()
	_, err := c.Get(ctx, "e1")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotFound || e.Status != 404 || e.SuggestedAction != "list" ||
		err.Error() != `ENOENT: environment "e1" not found (list)` {
		t.Fatalf("envelope: %#v", err)
	}
	_, err = c.Get(ctx, "e2")
	if !errors.As(err, &e) || e.Code != CodeInternal || e.Status != 502 || e.Message != "<html>Bad Gateway</html>" {
		t.Fatalf("not an envelope: %#v", err)
	}
	var buf bytes.Buffer
	err = c.Download(ctx, "e3", ".", &buf)
	if !errors.As(err, &e) || e.Code != CodePermission || e.Status != 403 || buf.String() != "partial" {
		t.Fatalf("trailer: %#v %q", err, buf.String())
	}
	c2, _ := New(Options{URL: srv.URL, Token: "wrong"})
	if _, err := c2.List(ctx, nil); !IsCode(err, CodeAuth) {
		t.Fatalf("401 without envelope: %v", err)
	}
}
