package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
)

// daemonFlags say how the client commands reach the daemon.
type daemonFlags struct {
	server string
	token  string
}

func (d *daemonFlags) add(f *pflag.FlagSet) {
	f.StringVar(&d.server, "server", "", "daemon address: a Unix socket path or http://HOST:PORT (default: $AGENTBOX_SERVER, else the local socket)")
	f.StringVar(&d.token, "token", "", "bearer token (default: $AGENTBOX_TOKEN, else the local daemon's token file)")
}

// addr is the daemon's address: --server, $AGENTBOX_SERVER, or the default socket.
func (d *daemonFlags) addr() string {
	if d.server != "" {
		return d.server
	}
	if s := os.Getenv("AGENTBOX_SERVER"); s != "" {
		return s
	}
	return config.DefaultSocket()
}

// client connects to the daemon: --server, $AGENTBOX_SERVER, or the default socket;
// the token from --token, $AGENTBOX_TOKEN, or the token file a local daemon wrote.
// A socket in a directory another user could write in is refused.
func (d *daemonFlags) client() (*client.Client, error) {
	server := d.addr()
	token := d.token
	if token == "" {
		token = os.Getenv("AGENTBOX_TOKEN")
	}
	o := client.Options{Token: token}
	if strings.HasPrefix(server, "http://") || strings.HasPrefix(server, "https://") {
		o.URL = server
	} else {
		o.Socket = strings.TrimPrefix(server, "unix:")
		// The token goes to whatever listens there: only into a directory that
		// nobody but its user (or root) could have put a socket in.
		dir, err := config.OpenDaemonDir(filepath.Dir(o.Socket))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &client.NoDaemonError{Addr: o.Socket, Err: err}
		}
		if err != nil {
			return nil, err
		}
		dir.Close()
		if o.Token == "" {
			t, err := config.ReadLocalToken(config.LocalTokenFile(o.Socket))
			if err != nil {
				return nil, err
			}
			o.Token = t
		}
	}
	return client.New(o)
}
