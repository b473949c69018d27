package ship

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bouncer-mcp/bouncer/internal/audit"
	"github.com/bouncer-mcp/bouncer/internal/bundle"
	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// collectorBin builds the test collector in testdata/otelcol (its own
// module: the real otlpreceiver and fileexporter) once per test binary, or
// takes $BOUNCER_TEST_OTELCOL.
var collectorBin = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("BOUNCER_TEST_OTELCOL"); p != "" {
		return p, nil
	}
	src, err := filepath.Abs("../../testdata/otelcol")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "bouncer-otelcol-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "otelcol")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the test collector: %v\n%s", err, out)
	}
	return bin, nil
})

// otelcol is a real OpenTelemetry Collector on a loopback port whose file
// exporter writes what it accepted, one JSON export request a line.
type otelcol struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
	runs int
}

func newOtelcol(t *testing.T) *otelcol {
	t.Helper()
	bin, err := collectorBin()
	if err != nil {
		need.Missing(t, "the test collector (testdata/otelcol)", "set BOUNCER_TEST_OTELCOL to a built one, or fix its build: "+err.Error())
	}
	c := &otelcol{t: t, dir: t.TempDir(), port: freePort(t)}
	c.cmd = &exec.Cmd{Path: bin}
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *otelcol) url() string { return fmt.Sprintf("http://127.0.0.1:%d", c.port) }

// start starts the collector; each run writes its own files (logsN.json,
// metricsN.json), so what each run accepted stays apart.
func (c *otelcol) start() {
	c.t.Helper()
	c.runs++
	conf := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  file/logs:
    path: %s
    flush_interval: 50ms
  file/metrics:
    path: %s
    flush_interval: 50ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file/logs]
    metrics:
      receivers: [otlp]
      exporters: [file/metrics]
`, c.port, c.file("logs", c.runs), c.file("metrics", c.runs))
	cf := filepath.Join(c.dir, fmt.Sprintf("config%d.yaml", c.runs))
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		c.t.Fatal(err)
	}
	logFile := filepath.Join(c.dir, "otelcol.out")
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	defer lf.Close()
	c.cmd = exec.Command(c.cmd.Path, "--config", cf)
	c.cmd.Stdout, c.cmd.Stderr = lf, lf
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go c.cmd.Wait()
	waitListening(c.t, fmt.Sprintf("127.0.0.1:%d", c.port), c.cmd, logFile)
}

// stop shuts the collector down as an operator would (SIGTERM): it
// finishes what it accepted and writes it out.
func (c *otelcol) stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(15 * time.Second)
	for c.cmd.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	c.cmd.Process.Kill()
}

func (c *otelcol) file(kind string, run int) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s%d.json", kind, run))
}

// The file exporter's JSON: OTLP's JSON encoding of each export request.
type kv struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string `json:"stringValue"`
		BytesValue  *string `json:"bytesValue"`
	} `json:"value"`
}

type otlpRecord struct {
	TimeUnixNano   string `json:"timeUnixNano"`
	SeverityNumber int    `json:"severityNumber"`
	Body           struct {
		StringValue *string `json:"stringValue"`
	} `json:"body"`
	Attributes []kv `json:"attributes"`
	resource   []kv
}

func (r otlpRecord) attr(k string) string { return attrOf(r.Attributes, k) }

func attrOf(kvs []kv, k string) string {
	for _, a := range kvs {
		if a.Key == k && a.Value.StringValue != nil {
			return *a.Value.StringValue
		}
	}
	return ""
}

func jsonLines(path string, fn func([]byte)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
}

// records returns the log records of every run, in the order accepted.
func (c *otelcol) records() []otlpRecord {
	var out []otlpRecord
	for run := 1; run <= c.runs; run++ {
		jsonLines(c.file("logs", run), func(b []byte) {
			var req struct {
				ResourceLogs []struct {
					Resource struct {
						Attributes []kv `json:"attributes"`
					} `json:"resource"`
					ScopeLogs []struct {
						Scope struct {
							Name string `json:"name"`
						} `json:"scope"`
						LogRecords []otlpRecord `json:"logRecords"`
					} `json:"scopeLogs"`
				} `json:"resourceLogs"`
			}
			if json.Unmarshal(b, &req) != nil {
				return
			}
			for _, rl := range req.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					for _, r := range sl.LogRecords {
						r.resource = rl.Resource.Attributes
						out = append(out, r)
					}
				}
			}
		})
	}
	return out
}

type sumPoint struct {
	server, verdict, rule, signal string
	value                         int64
	start                         string
}

// lastSum returns the points of the last bouncer.verdicts the collector
// accepted.
func (c *otelcol) lastSum() []sumPoint { return c.lastSumOf(MetricName) }

// lastSumOf returns the points of the last cumulative monotonic sum named
// name that the collector accepted.
func (c *otelcol) lastSumOf(name string) []sumPoint {
	var last []sumPoint
	for run := 1; run <= c.runs; run++ {
		jsonLines(c.file("metrics", run), func(b []byte) {
			var req struct {
				ResourceMetrics []struct {
					Resource struct {
						Attributes []kv `json:"attributes"`
					} `json:"resource"`
					ScopeMetrics []struct {
						Metrics []struct {
							Name string `json:"name"`
							Sum  struct {
								AggregationTemporality int  `json:"aggregationTemporality"`
								IsMonotonic            bool `json:"isMonotonic"`
								DataPoints             []struct {
									Attributes []kv   `json:"attributes"`
									AsInt      string `json:"asInt"`
									Start      string `json:"startTimeUnixNano"`
								} `json:"dataPoints"`
							} `json:"sum"`
						} `json:"metrics"`
					} `json:"scopeMetrics"`
				} `json:"resourceMetrics"`
			}
			if json.Unmarshal(b, &req) != nil {
				return
			}
			for _, rm := range req.ResourceMetrics {
				if attrOf(rm.Resource.Attributes, "service.name") != "bouncer" {
					continue
				}
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						// 2 is AGGREGATION_TEMPORALITY_CUMULATIVE.
						if m.Name != name || m.Sum.AggregationTemporality != 2 || !m.Sum.IsMonotonic {
							continue
						}
						last = nil
						for _, p := range m.Sum.DataPoints {
							v, _ := strconv.ParseInt(p.AsInt, 10, 64)
							last = append(last, sumPoint{attrOf(p.Attributes, "bouncer.server"), attrOf(p.Attributes, "bouncer.verdict"), attrOf(p.Attributes, "bouncer.rule"), attrOf(p.Attributes, "bouncer.signal"), v, p.Start})
						}
					}
				}
			}
		})
	}
	return last
}

// checkRecords checks that the collector got every line of the log, in
// order, once copies are dropped by their line hash, each mapped as the
// contract says.
func checkRecords(t *testing.T, recs []otlpRecord, log [][]byte) (dups int) {
	t.Helper()
	seen := map[string]bool{}
	var bodies []string
	for _, r := range recs {
		if r.Body.StringValue == nil {
			t.Fatalf("a record without a string body: %+v", r)
		}
		body := *r.Body.StringValue
		h := r.attr("bouncer.line_hash")
		if h != audit.Hash([]byte(body)) {
			t.Fatalf("bouncer.line_hash %q is not the hash of the body %.100q", h, body)
		}
		if attrOf(r.resource, "service.name") != "bouncer" {
			t.Fatalf("resource %+v", r.resource)
		}
		var e struct{ TS, Server, Tool, Verdict, Rule string }
		json.Unmarshal([]byte(body), &e)
		ts, _ := time.Parse(time.RFC3339Nano, e.TS)
		if r.TimeUnixNano != strconv.FormatInt(ts.UnixNano(), 10) {
			t.Fatalf("timeUnixNano %s, want the line's ts %s", r.TimeUnixNano, e.TS)
		}
		if r.attr("bouncer.server") != e.Server || r.attr("bouncer.tool") != e.Tool || r.attr("bouncer.verdict") != e.Verdict || r.attr("bouncer.rule") != e.Rule {
			t.Fatalf("attributes %+v for %.200q", r.Attributes, body)
		}
		if seen[h] {
			dups++
			continue
		}
		seen[h] = true
		bodies = append(bodies, body)
	}
	if want := stringsOf(log); !slices.Equal(bodies, want) {
		t.Fatalf("the collector got %d distinct lines, want the log's %d in order", len(bodies), len(want))
	}
	return dups
}

// TestOTelCollector ships to a real collector, stops it mid-ship while the
// log grows, brings it back, and checks that every line arrived (at least
// once; by hash exactly the log), that the verdict sum counts the log, and
// that a restarted shipper sends nothing again.
func TestOTelCollector(t *testing.T) {
	need.Long(t, "builds a collector")
	col := newOtelcol(t)
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(10)
	ds, err := Destinations([]bundle.AuditShip{{File: "trust.yaml", OTLP: col.url(),
		Headers: map[string]string{"X-Team": "${BOUNCER_TEST_TEAM}"}}},
		func(k string) (string, bool) { return "blue", k == "BOUNCER_TEST_TEAM" }, "test-host")
	if err != nil {
		t.Fatal(err)
	}
	var n notes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []Result)
	cfg := Config{Log: l.path, StateDir: dir, Dests: ds, MaxLines: 4, Poll: 20 * time.Millisecond,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, Logf: n.logf}
	go func() { done <- Run(ctx, cfg) }()

	// The log grows while the shipper runs; the collector goes away in the
	// middle of it and comes back.
	// Half of the lines are written while the collector is down.
	grow, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(grow)
		for i := range 60 {
			if i == 30 {
				<-stopped
			}
			l.add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	waitFor(t, "the first records", 20*time.Second, func() bool { return len(col.records()) >= 20 })
	col.stop()
	close(stopped)
	waitFor(t, "the shipper to find the collector down", 20*time.Second, func() bool { return strings.Contains(n.String(), "trying again") })
	<-grow
	col.start()
	waitFor(t, "every line", 30*time.Second, func() bool { return len(col.records()) >= 70 })
	waitFor(t, "the verdict sum of every line", 10*time.Second, func() bool {
		var total int64
		for _, p := range col.lastSum() {
			total += p.value
		}
		return total == 70
	})
	cancel()
	res := <-done
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	log := readLines(t, l.path)
	dups := checkRecords(t, col.records(), log)
	t.Logf("%d records, %d of them copies; notes:\n%s", len(col.records()), dups, n.String())

	// The sum counts the log by server, verdict and rule, from its first line.
	want := map[[3]string]int64{}
	for _, line := range log {
		f := parseFields(line)
		want[[3]string{f.Server, f.Verdict, f.Rule}]++
	}
	firstTS := parseFields(log[0]).time.UnixNano()
	for _, p := range col.lastSum() {
		if p.value != want[[3]string{p.server, p.verdict, p.rule}] || p.start != strconv.FormatInt(firstTS, 10) {
			t.Fatalf("point %+v, want %d from %d", p, want[[3]string{p.server, p.verdict, p.rule}], firstTS)
		}
		delete(want, [3]string{p.server, p.verdict, p.rule})
	}
	if len(want) != 0 {
		t.Fatalf("no points for %v", want)
	}
	// Nothing was rejected, and the collector takes the sum that says so.
	if got := col.lastSumOf(RejectedMetricName); len(got) != 2 || got[0].signal != "logs" || got[1].signal != "metrics" || got[0].value != 0 || got[1].value != 0 {
		t.Fatalf("%s: %+v", RejectedMetricName, got)
	}

	// A restart resends nothing.
	before := len(col.records())
	cfg.Once = true
	res = Run(context.Background(), cfg)
	if res[0].Err != nil || res[0].Shipped != 0 {
		t.Fatalf("restart: %+v", res[0])
	}
	time.Sleep(200 * time.Millisecond) // the exporter's flush interval
	if after := len(col.records()); after != before {
		t.Fatalf("a restart sent %d records again", after-before)
	}
}

// TestOTelCollectorOnceUnreachable: --once names a collector that is down
// and moves no cursor; once it is up, the same run ships everything.
func TestOTelCollectorOnceUnreachable(t *testing.T) {
	need.Long(t, "builds a collector")
	col := newOtelcol(t)
	col.stop()
	dir := t.TempDir()
	l := newTestLog(t, dir)
	l.add(5)
	ds, _ := Destinations([]bundle.AuditShip{{OTLP: col.url()}}, os.LookupEnv, "")
	cfg := Config{Log: l.path, StateDir: dir, Dests: ds, Once: true, MinBackoff: 10 * time.Millisecond}
	res := Run(context.Background(), cfg)
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "connection refused") || res[0].Dest != "otlp "+col.url() {
		t.Fatalf("collector down: %+v", res[0])
	}
	col.start()
	res = Run(context.Background(), cfg)
	if res[0].Err != nil || res[0].Shipped != 5 {
		t.Fatalf("collector up: %+v", res[0])
	}
	waitFor(t, "5 records", 10*time.Second, func() bool { return len(col.records()) == 5 })
	if dups := checkRecords(t, col.records(), readLines(t, l.path)); dups != 0 {
		t.Fatalf("%d copies", dups)
	}
}
