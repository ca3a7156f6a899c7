package api

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbox/agentbox/internal/env"
)

// poolStater is the Service's warm pools, where it has them (env.Manager).
type poolStater interface {
	PoolStats() []env.PoolStat
}

// refusedCounter counts, by tenant, the recorded environments the Service
// did not restore at its start (env.Manager.Refused).
type refusedCounter interface {
	Refused() map[string]int
}

// addRefused makes the environments a start left unrestored visible.
func (m *Metrics) addRefused(count func() map[string]int) {
	m.reg.MustRegister(&envCollector{count: count, desc: prometheus.NewDesc("agentbox_environments_unrestored",
		"Environments kept on disk but not restored at the daemon's start because the configuration no longer allows them (tenant removed, workspace outside its roots), by tenant.",
		[]string{"tenant"}, nil)})
}

// poolCollector reports the warm pools, by their index in the configuration's
// pools. Pools belong to no tenant: only the operator sees these series.
type poolCollector struct {
	stats                                   func() []env.PoolStat
	ready, size, claims, misses, died, fail *prometheus.Desc
}

func (m *Metrics) addPools(stats func() []env.PoolStat) {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("agentbox_pool_"+name, help, []string{"pool"}, nil)
	}
	m.reg.MustRegister(&poolCollector{stats: stats,
		ready:  d("ready", "Environments started and waiting to be claimed, by pool."),
		size:   d("size", "What the pool fills up to now, between its min and max."),
		claims: d("claims_total", "Creates served by a ready member."),
		misses: d("misses_total", "Creates of the pool's shape that found no member ready and started cold."),
		died:   d("died_total", "Members that died before a claim (replaced)."),
		fail:   d("failed_starts_total", "Member starts that failed."),
	})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ready, c.size, c.claims, c.misses, c.died, c.fail} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for i, s := range c.stats() {
		p := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(s.Ready), p)
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(s.Size), p)
		ch <- prometheus.MustNewConstMetric(c.claims, prometheus.CounterValue, float64(s.Claims), p)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses), p)
		ch <- prometheus.MustNewConstMetric(c.died, prometheus.CounterValue, float64(s.Died), p)
		ch <- prometheus.MustNewConstMetric(c.fail, prometheus.CounterValue, float64(s.Failed), p)
	}
}
