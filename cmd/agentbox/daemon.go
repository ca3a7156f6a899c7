package main

import (
	"os"
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

// client connects to the daemon: --server, $AGENTBOX_SERVER, or the default socket;
// the token from --token, $AGENTBOX_TOKEN, or the token file a local daemon wrote.
func (d *daemonFlags) client() (*client.Client, error) {
	server := d.server
	if server == "" {
		server = os.Getenv("AGENTBOX_SERVER")
	}
	if server == "" {
		server = config.DefaultSocket()
	}
	token := d.token
	if token == "" {
		token = os.Getenv("AGENTBOX_TOKEN")
	}
	o := client.Options{Token: token}
	if strings.HasPrefix(server, "http://") || strings.HasPrefix(server, "https://") {
		o.URL = server
	} else {
		o.Socket = strings.TrimPrefix(server, "unix:")
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
