package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
)

// Metrics are the server's Prometheus metrics, in a registry of their own.
type Metrics struct {
	reg      *prometheus.Registry
	execDur  prometheus.Histogram
	kills    *prometheus.CounterVec
	denials  *prometheus.CounterVec
	requests *prometheus.CounterVec
}

// NewMetrics registers the metrics. count, called at each scrape, returns the
// number of live environments per tenant.
func NewMetrics(count func() map[string]int) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		execDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentbox_exec_duration_seconds",
			Help:    "Wall time of synchronous exec requests, from the API's view.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbox_kills_total",
			Help: "Commands ended by a limit, by limit (timeout, cpu, memory, pids, output, file_size).",
		}, []string{"limit"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbox_policy_denials_total",
			Help: "Requests refused by policy, by reason (auth, permission, quota, rate).",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbox_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
	}
	envs := &envCollector{count: count, desc: prometheus.NewDesc("agentbox_environments",
		"Live environments, by tenant.", []string{"tenant"}, nil)}
	m.reg.MustRegister(m.execDur, m.kills, m.denials, m.requests, envs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) exec(d time.Duration) {
	if m != nil {
		m.execDur.Observe(d.Seconds())
	}
}

func (m *Metrics) killed(r *runner.Result) {
	if m != nil && r != nil && r.Limit != runner.LimitNone {
		m.kills.WithLabelValues(string(r.Limit)).Inc()
	}
}

// denied counts an error code that is a policy decision.
func (m *Metrics) denied(code string) {
	if m == nil {
		return
	}
	switch code {
	case client.CodeAuth, client.CodePermission, client.CodeQuota, client.CodeRate:
		m.denials.WithLabelValues(strings.ToLower(strings.TrimPrefix(code, "E"))).Inc()
	}
}

func (m *Metrics) request(route string, code int) {
	if m != nil {
		m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	}
}

type envCollector struct {
	count func() map[string]int
	desc  *prometheus.Desc
}

func (c *envCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *envCollector) Collect(ch chan<- prometheus.Metric) {
	for t, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), t)
	}
}

// liveCount counts each configured tenant's running environments.
func liveCount(svc env.Service, tenants []string) func() map[string]int {
	return func() map[string]int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out := map[string]int{}
		for _, t := range tenants {
			envs, err := svc.List(ctx, env.Owner{Tenant: t}, nil)
			if err != nil {
				continue
			}
			n := 0
			for _, e := range envs {
				if e.State != "destroyed" {
					n++
				}
			}
			out[t] = n
		}
		return out
	}
}
