package api

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
)

// TestNoSpaceIsNotRetried: a full workspace answers 507 ENOSPC, not retryable and
// without Retry-After, over HTTP and through the Go client.
func TestNoSpaceIsNotRetried(t *testing.T) {
	h := newHarness(t, func(m *memService) env.Service {
		return failing{m, &fs.PathError{Op: "write", Path: "big", Err: syscall.ENOSPC}}
	})
	e, err := h.client(tokA).Create(context.Background(), client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	st, hdr, body := h.do("PUT", "/v1/environments/"+e.ID+"/files?path=big", tokA, []byte("x"))
	env := envelopeOf(t, body)
	if st != 507 || env.Code != "ENOSPC" || env.Retryable || hdr.Get("Retry-After") != "" || env.SuggestedAction == "" {
		t.Fatalf("%d %+v Retry-After=%q", st, env, hdr.Get("Retry-After"))
	}
	err = h.client(tokA).WriteFile(context.Background(), e.ID, "big", []byte("x"))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != client.CodeNoSpace || ce.Retryable || ce.Status != 507 {
		t.Fatalf("client: %v", err)
	}
}

// failing is a service whose file writes fail with err.
type failing struct {
	env.Service
	err error
}

func (f failing) WriteFile(context.Context, env.Owner, string, string, []byte) error { return f.err }
