package listen

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics are the listener's counters, served in the Prometheus text
// exposition format (version 0.0.4) on their own address: a few counters
// and one histogram need no client library.
type Metrics struct {
	sessionsOpen     atomic.Int64
	sessionsStarted  atomic.Int64
	upstreamStarts   atomic.Int64
	upstreamFailures atomic.Int64
	upstreamRespawns atomic.Int64
	refused          atomic.Int64 // sessions refused by a limit
	// draining is the listener's own flag; users counts the user scopes
	// it holds.
	draining func() bool
	users    func() int

	mu       sync.Mutex
	verdicts map[[2]string]int64 // (verdict, rule)
	status   map[int]int64
	latency  histogram // of POSTs carrying requests, until answered
}

// latencyBuckets are the histogram's upper bounds, in seconds.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type histogram struct {
	counts []int64 // per bucket, not cumulative; one more for +Inf
	sum    float64
	n      int64
}

func newMetrics() *Metrics {
	return &Metrics{
		verdicts: map[[2]string]int64{},
		status:   map[int]int64{},
		latency:  histogram{counts: make([]int64, len(latencyBuckets)+1)},
	}
}

func (m *Metrics) verdict(verdict, rule string) {
	m.mu.Lock()
	m.verdicts[[2]string{verdict, rule}]++
	m.mu.Unlock()
}

func (m *Metrics) response(status int) {
	m.mu.Lock()
	m.status[status]++
	m.mu.Unlock()
}

func (m *Metrics) observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets, s)
	m.mu.Lock()
	m.latency.counts[i]++
	m.latency.sum += s
	m.latency.n++
	m.mu.Unlock()
}

// ServeHTTP writes the metrics.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.write(w)
}

func (m *Metrics) write(w io.Writer) {
	gauge := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge("bouncer_sessions", "MCP sessions open on this replica.", m.sessionsOpen.Load())
	counter("bouncer_sessions_started_total", "MCP sessions started.", m.sessionsStarted.Load())
	counter("bouncer_sessions_refused_total", "New sessions refused by a limit.", m.refused.Load())
	counter("bouncer_upstream_starts_total", "Upstreams started (processes, remote sessions).", m.upstreamStarts.Load())
	counter("bouncer_upstream_start_failures_total", "Upstreams that failed to start.", m.upstreamFailures.Load())
	counter("bouncer_upstream_respawns_total", "Upstreams started again after a crash.", m.upstreamRespawns.Load())
	d := int64(0)
	if m.draining != nil && m.draining() {
		d = 1
	}
	gauge("bouncer_draining", "1 once SIGTERM was received.", d)
	if m.users != nil {
		gauge("bouncer_users", "Users whose scope this replica holds: a live session, or calls in the budget window.", int64(m.users()))
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP bouncer_verdicts_total Verdicts written to the audit log, by verdict and rule.\n# TYPE bouncer_verdicts_total counter\n")
	keys := make([][2]string, 0, len(m.verdicts))
	for k := range m.verdicts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"\x00"+keys[i][1] < keys[j][0]+"\x00"+keys[j][1] })
	for _, k := range keys {
		fmt.Fprintf(w, "bouncer_verdicts_total{verdict=%s,rule=%s} %d\n", label(k[0]), label(k[1]), m.verdicts[k])
	}
	fmt.Fprintf(w, "# HELP bouncer_http_responses_total HTTP responses on the MCP endpoints, by status.\n# TYPE bouncer_http_responses_total counter\n")
	codes := make([]int, 0, len(m.status))
	for c := range m.status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "bouncer_http_responses_total{code=\"%d\"} %d\n", c, m.status[c])
	}
	const h = "bouncer_request_duration_seconds"
	fmt.Fprintf(w, "# HELP %s Time from a POST carrying requests to its last answer.\n# TYPE %s histogram\n", h, h)
	var cum int64
	for i, b := range latencyBuckets {
		cum += m.latency.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", h, b, cum)
	}
	cum += m.latency.counts[len(latencyBuckets)]
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", h, cum, h, m.latency.sum, h, m.latency.n)
}

// label quotes a label value as the exposition format escapes it.
func label(v string) string {
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	return `"` + r.Replace(v) + `"`
}
