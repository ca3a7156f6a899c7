package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/sessionapi"
)

type coordinatorOptions struct {
	stateDir, listen      string
	envURL, envTokenFile  string
	tokenFile, apiKeyFile string
	baseURL, config       string
}

func coordinatorCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "coordinator", Short: "Host agent sessions as a service, apart from the environment daemon"}
	o := coordinatorOptions{}
	serve := &cobra.Command{
		Use:   "serve --state-dir DIR --env-url URL (--env-token-file FILE --token-file FILE | --config FILE) [--listen HOST:PORT]",
		Short: "Serve the sessions API (api/coordinator.yaml), driving each session against an environment daemon",
		Long: `Serve hosts durable agent sessions in a process of its own, with a state
directory of its own (never an environment daemon's): each session's journal is
DIR/sessions/ID. Its environments are an agentbox serve's, reached at --env-url
(http://HOST:PORT, or unix:PATH for its socket) with the bearer token in
--env-token-file; the coordinator and the daemon share no filesystem. The model
credentials are the coordinator's (--api-key-file, else $OPENAI_API_KEY or
$ANTHROPIC_API_KEY) and go to the model endpoint only: --base-url, else the
provider's. A session's policy.base_url may only repeat it (a caller's own URL
would receive the key).

Callers authenticate with the bearer token in --token-file: one tenant,
"local", whose sessions reach the daemon with --env-token-file. With --config
FILE instead, the coordinator has the tenants and tokens the file lists, in the
format of agentbox serve's tokens:

  tenants:
    acme:
      env_token_file: acme-env.token  # the daemon's token of acme's environments
      quota: {sessions: 4}            # sessions that have not ended, at most
      rate: {per_second: 20, burst: 40}
  tokens:
    - {name: acme-ci, file: acme.token, tenant: acme}  # or sha256: or token:

Each request acts for its token's tenant: another tenant's session is not
found (404), and a tenant's sessions reach the daemon only with its own
env token (no two tenants may share one). On start every
session that has not ended is resumed (recovery as agentbox resume does, in the
environment it worked in if the daemon still has it, else in a new one
re-derived from the journal); SIGTERM stops the drivers without ending their
sessions, for the next start to resume. agentbox sessions ls|show|approve|deny|
resolve|steer|cancel --coordinator URL are its client. AGENTBOX_CRASH_AT=POINT kills the
process at a crash point of a session (see agentbox agent --help).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return coordinatorServe(cmd.Context(), o) },
	}
	f := serve.Flags()
	f.StringVar(&o.stateDir, "state-dir", "", "the coordinator's state directory (required; not an environment daemon's)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:7171", "TCP address to listen on (port 0: any free port, printed)")
	f.StringVar(&o.envURL, "env-url", "", "the environment daemon: http://HOST:PORT or unix:SOCKET (required)")
	f.StringVar(&o.envTokenFile, "env-token-file", "", "file holding the environment daemon's bearer token (required)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token callers of this API must send (at least 16 bytes; required without --config)")
	f.StringVar(&o.config, "config", "", "the coordinator's tenants and tokens (YAML, see above) instead of --token-file and --env-token-file")
	f.StringVar(&o.apiKeyFile, "api-key-file", "", "file holding the model API key (default: $OPENAI_API_KEY or $ANTHROPIC_API_KEY)")
	f.StringVar(&o.baseURL, "base-url", "", "the model endpoint, the only one the key is sent to (default: the provider's)")
	cmd.AddCommand(serve)
	return cmd
}

// readToken reads the bearer token in the file of --flag; what names the token
// for an error (what to put there).
func readToken(flag, path, what string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("--%s is required: a file holding %s", flag, what)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w (it must hold %s)", flag, err, what)
	}
	return strings.TrimSpace(string(b)), nil
}

// coordinatorConfig reads the coordinator's tenants and tokens: --config's,
// or one tenant of --token-file and --env-token-file.
func coordinatorConfig(o coordinatorOptions) (*config.Coordinator, error) {
	if o.config != "" {
		if o.tokenFile != "" || o.envTokenFile != "" {
			return nil, errors.New("--config lists the tokens and each tenant's env_token_file: leave --token-file and --env-token-file out")
		}
		return config.LoadCoordinator(o.config)
	}
	envTok, err := readToken("env-token-file", o.envTokenFile, "the daemon's token, e.g. the agentbox.token that agentbox config init writes (or give --config)")
	if err != nil {
		return nil, err
	}
	tok, err := readToken("token-file", o.tokenFile, "the token of your choice that callers will send, at least 16 bytes: head -c 24 /dev/urandom | base64 > FILE (or give --config)")
	if err != nil {
		return nil, err
	}
	cc, err := config.LocalCoordinator(tok, envTok)
	if err != nil {
		return nil, fmt.Errorf("--token-file and --env-token-file: %w", err)
	}
	return cc, nil
}

// coordIdle is how long the coordinator keeps an idle keep-alive connection.
const coordIdle = 2 * time.Minute

func coordinatorServe(ctx context.Context, o coordinatorOptions) error {
	if o.stateDir == "" {
		return errors.New("--state-dir is required: a directory of the coordinator's own")
	}
	if o.envURL == "" {
		return errors.New("--env-url is required: the environment daemon (agentbox serve) as http://HOST:PORT or unix:SOCKET")
	}
	cc, err := coordinatorConfig(o)
	if err != nil {
		return err
	}
	tenants := map[string]coordinator.Tenant{}
	for name, t := range cc.Tenants {
		co := client.Options{Token: t.EnvToken}
		if sock, ok := strings.CutPrefix(o.envURL, "unix:"); ok {
			co.Socket = sock
		} else {
			co.URL = o.envURL
		}
		ec, err := client.New(co)
		if err != nil {
			return fmt.Errorf("--env-url: %w", err)
		}
		defer ec.Close()
		tenants[name] = coordinator.Tenant{Env: ec, Sessions: t.Quota.Sessions}
	}
	if err := tenants[slices.Min(slices.Collect(maps.Keys(tenants)))].Env.Health(ctx); err != nil {
		fmt.Fprintf(stderr, "agentbox coordinator: the environment daemon does not answer yet (%v); sessions wait for it\n", err)
	}
	if same, _ := sameDir(o.stateDir, config.DefaultStateDir()); same {
		return fmt.Errorf("--state-dir %s is the environment daemon's default state directory: give the coordinator its own", o.stateDir)
	}
	policy := func(p coordinator.PolicySpec) (agent.Policy, []string, error) {
		if p.BaseURL != "" && p.BaseURL != o.baseURL {
			return nil, nil, fmt.Errorf("policy.base_url %q: the coordinator sends its model key only to its own endpoint (coordinator serve --base-url, here %q): leave base_url out", p.BaseURL, o.baseURL)
		}
		ao := &agentOptions{policy: p.Name, mode: p.Mode, model: p.Model, baseURL: o.baseURL, stream: p.Stream, apiKeyFile: o.apiKeyFile}
		if ao.mode == "" {
			ao.mode = agent.ModeGood
		}
		return ao.policyFor()
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "agentbox coordinator: "+format+"\n", a...) }
	h, err := coordinator.Open(coordinator.Config{StateDir: o.stateDir, Tenants: tenants, Policy: policy, Logf: logf,
		Journal: journal.Options{Crash: crashHook(os.Getenv("AGENTBOX_CRASH_AT"))}})
	if err != nil {
		return err
	}
	defer h.Close()
	api := sessionapi.New(h, access.NewTokenAuth(cc.Tokens, cc.Rates()))
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	// As the daemon's: a caller without the token may not hold idle
	// keep-alive connections open for ever.
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: coordIdle}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logf("serving on http://%s (state %s, environments %s)", ln.Addr(), o.stateDir, o.envURL)
	flushOutput()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // event streams do not end by themselves
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}
