package ship

import (
	"context"
	"crypto/tls"
	"net/http"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// ScopeName is the instrumentation scope of every record and metric.
const ScopeName = "github.com/bouncer-mcp/bouncer/internal/ship"

// MetricName is the cumulative sum of verdicts.
const MetricName = "bouncer.verdicts"

// otlpDest ships to an OpenTelemetry collector over OTLP/HTTP with the
// OpenTelemetry Go SDK's exporters, used synchronously: one Export call per
// batch, and the cursor moves only when that call got a 2xx answer.
//
// Why not the SDK's BatchProcessor: it exports in the background and drops
// what it could not send after its own retries, so nothing would tell the
// cursor which lines a collector accepted. The exporter's own retry is
// turned off too; the shipper retries a batch itself, with backoff, and
// knows when to give up (--once).
type otlpDest struct {
	name    string
	logs    *otlploghttp.Exporter
	metrics *otlpmetrichttp.Exporter
	status  *statusRecorder
	res     *resource.Resource
	enc     *recordEncoder
	counts  *verdictCounts
}

// statusRecorder remembers the HTTP status of the last answer, so that a
// 2xx answer counts as accepted even when the exporter reports an error for
// it (an OTLP partial success: the collector took the request and said some
// records were rejected; resending would not change its mind).
type statusRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	code int
}

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.code = 0
	s.mu.Unlock()
	resp, err := s.next.RoundTrip(req)
	if err == nil {
		s.mu.Lock()
		s.code = resp.StatusCode
		s.mu.Unlock()
	}
	return resp, err
}

// reset forgets the last answer; called before each export, so an export
// that fails before it sends anything is not taken for the previous one's
// 2xx.
func (s *statusRecorder) reset() {
	s.mu.Lock()
	s.code = 0
	s.mu.Unlock()
}

func (s *statusRecorder) accepted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code >= 200 && s.code <= 299
}

// exportTimeout bounds one export request.
const exportTimeout = 30 * time.Second

func newOTLPDest(base string, headers map[string]string, tlsConf *tls.Config, host string) (*otlpDest, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	tr.Proxy = nil // a collector is reached directly, not through $HTTPS_PROXY
	status := &statusRecorder{next: tr}
	client := &http.Client{Transport: status, Timeout: exportTimeout}
	ctx := context.Background()
	logs, err := otlploghttp.New(ctx,
		otlploghttp.WithEndpointURL(base+"/v1/logs"),
		otlploghttp.WithHeaders(headers),
		otlploghttp.WithHTTPClient(client),
		otlploghttp.WithTimeout(exportTimeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, err
	}
	metrics, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"),
		otlpmetrichttp.WithHeaders(headers),
		otlpmetrichttp.WithHTTPClient(client),
		otlpmetrichttp.WithTimeout(exportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, err
	}
	res := Resource(host)
	return &otlpDest{
		name:    "otlp " + base,
		logs:    logs,
		metrics: metrics,
		status:  status,
		res:     res,
		enc:     newRecordEncoder(res),
		counts:  newVerdictCounts(),
	}, nil
}

// Resource is what every record and metric is attributed to:
// service.name bouncer, and host.name when known.
func Resource(host string) *resource.Resource {
	attrs := []attribute.KeyValue{attribute.String("service.name", "bouncer")}
	if host != "" {
		attrs = append(attrs, attribute.String("host.name", host))
	}
	return resource.NewSchemaless(attrs...)
}

func (d *otlpDest) Name() string { return d.name }

func (d *otlpDest) Send(ctx context.Context, lines []Line) error {
	recs := d.enc.records(lines)
	d.status.reset()
	err := d.logs.Export(ctx, recs)
	if err != nil && ctx.Err() == nil && d.status.accepted() {
		// A 2xx answer: accepted, whatever it said about some records.
		err = nil
	}
	if err != nil {
		return err
	}
	for _, l := range lines {
		d.counts.add(parseFields(l.Text))
	}
	return nil
}

// Recount starts the verdict counts over from the lines a reader has
// already shipped from the start of its file.
func (d *otlpDest) Recount(r *reader) error {
	d.counts = newVerdictCounts()
	return r.scanBefore(func(text []byte) { d.counts.add(parseFields(text)) })
}

func (d *otlpDest) Flush(ctx context.Context) error {
	if !d.counts.dirty(time.Now()) {
		return nil
	}
	rm := d.counts.metrics(d.res, time.Now())
	d.status.reset()
	err := d.metrics.Export(ctx, rm)
	if err != nil && ctx.Err() == nil && d.status.accepted() {
		err = nil
	}
	if err == nil {
		d.counts.exported(time.Now())
	}
	return err
}

func (d *otlpDest) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d.logs.Shutdown(ctx)
	d.metrics.Shutdown(ctx)
}

// recordEncoder turns lines into SDK log records, through a LoggerProvider
// whose only processor hands each emitted record back, so they carry the
// resource and scope as any SDK record does, and are then exported by the
// caller, synchronously.
type recordEncoder struct {
	logger otellog.Logger
	mu     sync.Mutex
	got    []sdklog.Record
}

func newRecordEncoder(res *resource.Resource) *recordEncoder {
	e := &recordEncoder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(collector{e}),
		// The line is the evidence: no attribute is cut short or dropped.
		sdklog.WithAttributeValueLengthLimit(-1), sdklog.WithAttributeCountLimit(-1))
	e.logger = lp.Logger(ScopeName)
	return e
}

type collector struct{ e *recordEncoder }

func (c collector) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c collector) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.e.got = append(c.e.got, r.Clone())
	return nil
}
func (collector) Shutdown(context.Context) error   { return nil }
func (collector) ForceFlush(context.Context) error { return nil }

func (e *recordEncoder) records(lines []Line) []sdklog.Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = e.got[:0]
	now := time.Now()
	for _, l := range lines {
		e.logger.Emit(context.Background(), LogRecord(l, now))
	}
	out := make([]sdklog.Record, len(e.got))
	copy(out, e.got)
	return out
}

// LogRecord maps one audit line to a log record: the body is the line's
// exact text (as bytes if it is not UTF-8, which a protobuf string cannot
// carry), the timestamp its ts, and the attributes bouncer.server,
// bouncer.tool, bouncer.verdict, bouncer.rule and bouncer.line_hash. A deny
// has severity WARN, an allow or ask INFO; a line that is not an audit
// entry has only bouncer.line_hash and no timestamp.
func LogRecord(l Line, observed time.Time) otellog.Record {
	var r otellog.Record
	if utf8.Valid(l.Text) {
		r.SetBody(otellog.StringValue(string(l.Text)))
	} else {
		r.SetBody(otellog.BytesValue(append([]byte(nil), l.Text...)))
	}
	r.SetObservedTimestamp(observed)
	f := parseFields(l.Text)
	if !f.time.IsZero() {
		r.SetTimestamp(f.time)
	}
	if f.ok {
		r.AddAttributes(
			otellog.String("bouncer.server", f.Server),
			otellog.String("bouncer.tool", f.Tool),
			otellog.String("bouncer.verdict", f.Verdict),
			otellog.String("bouncer.rule", f.Rule),
		)
		switch f.Verdict {
		case "deny":
			r.SetSeverity(otellog.SeverityWarn)
		case "allow", "ask":
			r.SetSeverity(otellog.SeverityInfo)
		}
		if f.Verdict != "" {
			r.SetSeverityText(f.Verdict)
		}
	}
	r.AddAttributes(otellog.String("bouncer.line_hash", l.Hash))
	return r
}

// verdictCounts is the cumulative count of verdicts in the shipped part of
// the log, by server, verdict and rule, since the log's first line.
type verdictCounts struct {
	start        time.Time
	n            map[countKey]int64
	changed      bool
	lastExported time.Time
}

type countKey struct{ server, verdict, rule string }

// metricHeartbeat is how often an unchanged cumulative sum is sent again,
// so a backend sees the series is alive.
const metricHeartbeat = time.Minute

func newVerdictCounts() *verdictCounts {
	return &verdictCounts{n: map[countKey]int64{}, changed: true}
}

func (c *verdictCounts) add(f fields) {
	if c.start.IsZero() {
		// The series starts with the log: its first line's time.
		c.start = f.time
		if c.start.IsZero() {
			c.start = time.Now().UTC()
		}
	}
	if !f.ok || f.Verdict == "" {
		return
	}
	c.n[countKey{f.Server, f.Verdict, f.Rule}]++
	c.changed = true
}

func (c *verdictCounts) dirty(now time.Time) bool {
	return len(c.n) > 0 && (c.changed || now.Sub(c.lastExported) >= metricHeartbeat)
}

func (c *verdictCounts) exported(now time.Time) {
	c.changed, c.lastExported = false, now
}

// metrics is the bouncer.verdicts cumulative sum, one point per server,
// verdict and rule, in a stable order.
func (c *verdictCounts) metrics(res *resource.Resource, now time.Time) *metricdata.ResourceMetrics {
	keys := make([]countKey, 0, len(c.n))
	for k := range c.n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.server != b.server {
			return a.server < b.server
		}
		if a.verdict != b.verdict {
			return a.verdict < b.verdict
		}
		return a.rule < b.rule
	})
	pts := make([]metricdata.DataPoint[int64], 0, len(keys))
	for _, k := range keys {
		pts = append(pts, metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(
				attribute.String("bouncer.server", k.server),
				attribute.String("bouncer.verdict", k.verdict),
				attribute.String("bouncer.rule", k.rule)),
			StartTime: c.start,
			Time:      now,
			Value:     c.n[k],
		})
	}
	return &metricdata.ResourceMetrics{
		Resource: res,
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: ScopeName},
			Metrics: []metricdata.Metrics{{
				Name:        MetricName,
				Description: "Verdicts in the Bouncer audit log, by server, verdict and rule.",
				Unit:        "{verdict}",
				Data: metricdata.Sum[int64]{
					Temporality: metricdata.CumulativeTemporality,
					IsMonotonic: true,
					DataPoints:  pts,
				},
			}},
		}},
	}
}
