package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Network is what an environment may reach through its egress proxy, the sandbox's
// one way out. An empty Allow reaches nothing; an environment created without one
// has no network at all.
type Network struct {
	Allow        []string          `json:"allow" jsonschema:"hosts the environment may reach: NAME, *.SUFFIX, either with :PORT, or preset:debian, preset:go, preset:npm, preset:pypi"`
	AllowPrivate []string          `json:"allow_private,omitempty" jsonschema:"CIDR prefixes of private addresses the allowed names may resolve to (a LAN registry); never loopback or metadata"`
	DNSOverride  map[string]string `json:"dns_override,omitempty" jsonschema:"NAME: IP pins; the proxy asks no resolver for these names"`
	MaxConns     int               `json:"max_conns,omitempty" jsonschema:"open connections the environment may hold through its proxy (0: 256)"`
	MaxBytes     int64             `json:"max_bytes,omitempty" jsonschema:"bytes its proxy carries both ways over its life, after which every connection is cut (0: no bound)"`
}

// NetworkEvent is one connection through an environment's egress proxy: a CONNECT
// tunnel or one plain HTTP request, recorded when it ended.
type NetworkEvent struct {
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time" jsonschema:"when the request arrived"`
	Proto       string    `json:"proto" jsonschema:"connect or http"`
	Host        string    `json:"host"`
	Port        uint16    `json:"port,omitempty"`
	Addr        string    `json:"addr,omitempty" jsonschema:"the address connected to, or the one refused"`
	Decision    string    `json:"decision" jsonschema:"allow or deny"`
	Reason      string    `json:"reason,omitempty" jsonschema:"why it was refused, or why an allowed one was cut"`
	Detail      string    `json:"detail,omitempty"`
	Intercepted bool      `json:"intercepted,omitempty"`
	BytesUp     int64     `json:"bytes_up"`
	BytesDown   int64     `json:"bytes_down"`
	DurationNS  int64     `json:"duration_ns"`
}

// SetNetwork replaces the environment's network policy: new connections follow it
// at once, open ones it no longer allows are cut.
func (c *Client) SetNetwork(ctx context.Context, id string, n Network) error {
	return c.do(ctx, http.MethodPut, "/v1/environments/"+esc(id)+"/network", nil, n, nil)
}

// NetworkLog returns the environment's connections with a seq above after, oldest
// first.
func (c *Client) NetworkLog(ctx context.Context, id string, after uint64) ([]NetworkEvent, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	var out struct {
		Events []NetworkEvent `json:"events"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/environments/"+esc(id)+"/network/log", q, nil, &out)
	return out.Events, err
}
