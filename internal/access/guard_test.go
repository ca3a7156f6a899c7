package access

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
)

// slowCreates is an env.Service whose creates wait until told to end and
// succeed or fail as told, and whose List shows the ones that succeeded.
type slowCreates struct {
	env.Service
	mu      sync.Mutex
	running int
	peak    int
	envs    []env.Info
	proceed chan bool // each create takes one: true succeeds
}

func (s *slowCreates) Create(_ context.Context, o env.CreateOptions) (env.Info, error) {
	s.mu.Lock()
	s.running++
	s.peak = max(s.peak, s.running)
	s.mu.Unlock()
	ok := <-s.proceed
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if !ok {
		return env.Info{}, errors.New("start failed")
	}
	info := env.Info{ID: fmt.Sprint(len(s.envs)), Owner: o.Owner, Limits: o.Limits, State: "running"}
	s.envs = append(s.envs, info)
	return info, nil
}

func (s *slowCreates) List(context.Context, env.Owner, map[string]string) ([]env.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]env.Info(nil), s.envs...), nil
}

func (s *slowCreates) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// TestCreatesRunConcurrently: a tenant's creates within its quota run at the
// same time (they were serialised, so a burst of cold creates waited for each
// other's sandbox start), yet together never pass the quota: creates under way
// count, one that fails frees its share, and one that would pass the quota
// waits for those under way before it is refused.
func TestCreatesRunConcurrently(t *testing.T) {
	for name, quota := range map[string]config.Quota{"no quota": {}, "3 environments": {Environments: 3}, "3 MiB": {Memory: 3 << 20}} {
		t.Run(name, func(t *testing.T) {
			cfg := &config.Config{Tenants: map[string]config.Tenant{"a": {Quota: quota}}}
			svc := &slowCreates{proceed: make(chan bool)}
			g := NewGuard(svc, cfg, nil)
			ctx := WithCaller(context.Background(), Caller{Tenant: "a", Scopes: []string{config.ScopeEnvCreate}})
			const n = 5
			errs := make(chan error, n)
			for range n {
				go func() {
					_, err := g.Create(ctx, env.CreateOptions{Limits: env.Limits{Memory: 1 << 20}})
					errs <- err
				}()
			}
			want := n // creates at once: all within no quota, 3 within one
			if quota != (config.Quota{}) {
				want = 3
			}
			deadline := time.Now().Add(10 * time.Second)
			for svc.inFlight() < want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // a create past the quota would start now
			if got := svc.inFlight(); got != want {
				t.Fatalf("%d creates under way at once, want %d", got, want)
			}
			// One fails: the share it held goes to a waiting create.
			svc.proceed <- false
			if err := <-errs; err == nil || errors.Is(err, env.ErrQuota) {
				t.Fatalf("the failed create: %v", err)
			}
			ok, refused := 0, 0
			for ok+refused < n-1 {
				select {
				case svc.proceed <- true:
				case err := <-errs:
					switch {
					case err == nil:
						ok++
					case errors.Is(err, env.ErrQuota):
						refused++
					default:
						t.Fatal(err)
					}
				}
			}
			if quota == (config.Quota{}) {
				if ok != n-1 {
					t.Fatalf("%d created, %d refused without a quota", ok, refused)
				}
				return
			}
			if ok != 3 || refused != 1 || svc.peak != 3 {
				t.Fatalf("%d created, %d refused, %d at once; want 3, 1, 3", ok, refused, svc.peak)
			}
		})
	}
}
