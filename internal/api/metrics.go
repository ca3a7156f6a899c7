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
	dto "github.com/prometheus/client_model/go"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
)

// Metrics are the server's Prometheus metrics, in a registry of their own. Every
// figure about requests and environments carries the tenant it belongs to; a
// tenant's admin sees only its own series (Handler), the operator all of them.
type Metrics struct {
	reg      *prometheus.Registry
	execDur  *prometheus.HistogramVec
	kills    *prometheus.CounterVec
	denials  *prometheus.CounterVec
	requests *prometheus.CounterVec
}

// NewMetrics registers the metrics. count, called at each scrape, returns the
// number of live environments per tenant.
func NewMetrics(count func() map[string]int) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		execDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentbox_exec_duration_seconds",
			Help:    "Wall time of synchronous exec requests, from the API's view, by tenant.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"tenant"}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbox_kills_total",
			Help: "Commands ended by a limit, by tenant and limit (timeout, cpu, memory, pids, output, file_size).",
		}, []string{"tenant", "limit"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbox_policy_denials_total",
			Help: "Requests refused by policy, by tenant (\"\" before authentication) and reason (auth, perm, quota, rate).",
		}, []string{"tenant", "reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbox_http_requests_total",
			Help: "HTTP requests by tenant (\"\" before authentication), route and status code.",
		}, []string{"tenant", "route", "code"}),
	}
	envs := &envCollector{count: count, desc: prometheus.NewDesc("agentbox_environments",
		"Live environments, by tenant.", []string{"tenant"}, nil)}
	m.reg.MustRegister(m.execDur, m.kills, m.denials, m.requests, envs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format: every series when
// tenant is "" (the operator), else only the series labelled with tenant.
func (m *Metrics) Handler(tenant string) http.Handler {
	g := prometheus.Gatherer(m.reg)
	if tenant != "" {
		g = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			mfs, err := m.reg.Gather()
			return tenantOnly(mfs, tenant), err
		})
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// tenantOnly keeps the series whose tenant label is tenant, and the families
// left with one.
func tenantOnly(mfs []*dto.MetricFamily, tenant string) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, mf := range mfs {
		var keep []*dto.Metric
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "tenant" && l.GetValue() == tenant {
					keep = append(keep, mt)
					break
				}
			}
		}
		if len(keep) > 0 {
			mf.Metric = keep
			out = append(out, mf)
		}
	}
	return out
}

// ObserveExec records a synchronous exec's wall time (access.Recorder).
func (m *Metrics) ObserveExec(tenant string, d time.Duration) {
	if m != nil {
		m.execDur.WithLabelValues(tenant).Observe(d.Seconds())
	}
}

// ObserveEnd counts a command a limit ended (access.Recorder).
func (m *Metrics) ObserveEnd(tenant string, r *runner.Result) {
	if m != nil && r != nil && r.Limit != runner.LimitNone {
		m.kills.WithLabelValues(tenant, string(r.Limit)).Inc()
	}
}

// Denied counts an error code that is a policy decision (EAUTH, EPERM, EQUOTA,
// ERATE) the tenant met.
func (m *Metrics) Denied(tenant, code string) {
	if m == nil {
		return
	}
	switch code {
	case client.CodeAuth, client.CodePermission, client.CodeQuota, client.CodeRate:
		m.denials.WithLabelValues(tenant, strings.ToLower(strings.TrimPrefix(code, "E"))).Inc()
	}
}

func (m *Metrics) request(tenant, route string, code int) {
	if m != nil {
		m.requests.WithLabelValues(tenant, route, strconv.Itoa(code)).Inc()
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
