package ship

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
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
	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/bouncer-mcp/bouncer/internal/redirect"
	"github.com/bouncer-mcp/bouncer/internal/secret"
)

// ScopeName is the instrumentation scope of every record and metric.
const ScopeName = "github.com/bouncer-mcp/bouncer/internal/ship"

// MetricName is the cumulative sum of verdicts.
const MetricName = "bouncer.verdicts"

// RejectedMetricName is the cumulative sum of what the collector took
// (a 2xx answer) and then said it rejected (OTLP's partial success):
// log records, and data points of the metrics, apart by bouncer.signal
// ("logs" or "metrics"). It counts from the shipper's start.
const RejectedMetricName = "bouncer.ship.rejected"

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
	name     string
	logs     *otlploghttp.Exporter
	metrics  *otlpmetrichttp.Exporter
	status   *statusRecorder
	res      *resource.Resource
	enc      *recordEncoder
	counts   *verdictCounts
	rejected *rejectedCounts
	// secrets are the configured header values (see [secret.HeaderParts])
	// and the ${VAR} values in them: a collector's answer may echo them,
	// and none is ever shown.
	secrets []string
}

// statusRecorder remembers the HTTP status of the last answer, so that a
// 2xx answer counts as accepted even when the exporter reports an error for
// it (an OTLP partial success: the collector took the request and said some
// records were rejected; resending would not change its mind), and the
// body of a 2xx answer, which says what was rejected.
type statusRecorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	code  int
	ctype string
	body  []byte
}

// maxAnswer is how much of a 2xx answer is read: the OTLP exporters' own
// limit.
const maxAnswer = 4 << 20

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	s.reset()
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	var body []byte
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 && resp.Body != nil {
		// Read here, and handed on to the exporter as it was.
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.mu.Lock()
	s.code, s.ctype, s.body = resp.StatusCode, resp.Header.Get("Content-Type"), body
	s.mu.Unlock()
	return resp, nil
}

// reset forgets the last answer; called before each export, so an export
// that fails before it sends anything is not taken for the previous one's
// 2xx.
func (s *statusRecorder) reset() {
	s.mu.Lock()
	s.code, s.ctype, s.body = 0, "", nil
	s.mu.Unlock()
}

func (s *statusRecorder) accepted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code >= 200 && s.code <= 299
}

// answer decodes the last 2xx answer's body into m, as OTLP/HTTP encodes
// it (protobuf, or JSON). It reports false when there is nothing to
// decode: no body, or another content type (a gateway's "OK").
func (s *statusRecorder) answer(m proto.Message) (bool, error) {
	s.mu.Lock()
	ctype, body := s.ctype, s.body
	s.mu.Unlock()
	if len(body) == 0 {
		return false, nil
	}
	if len(body) > maxAnswer {
		return true, fmt.Errorf("it is longer than %d bytes", maxAnswer)
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	switch mt {
	case "application/x-protobuf":
		return true, proto.Unmarshal(body, m)
	case "application/json":
		return true, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, m)
	}
	return false, nil
}

// exportTimeout bounds one export request.
const exportTimeout = 30 * time.Second

func newOTLPDest(base string, headers map[string]string, secrets []string, tlsConf *tls.Config, host string) (*otlpDest, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	tr.Proxy = nil // a collector is reached directly, not through $HTTPS_PROXY
	status := &statusRecorder{next: tr}
	client := &http.Client{Transport: status, Timeout: exportTimeout,
		// The headers (a token above all) and the log go to the collector
		// the trust file names, or nowhere.
		CheckRedirect: redirect.SameOrigin(u, func(to *url.URL) error {
			return fmt.Errorf("the collector redirects to %s://%s, another origin than audit_ship.otlp's; nothing was sent there (set audit_ship.otlp to the URL that is meant)", to.Scheme, to.Host)
		}),
	}
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
		name:     "otlp " + base,
		logs:     logs,
		metrics:  metrics,
		status:   status,
		res:      res,
		enc:      newRecordEncoder(res),
		counts:   newVerdictCounts(),
		rejected: &rejectedCounts{start: time.Now().UTC()},
		secrets:  secrets,
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
	if err != nil && (ctx.Err() != nil || !d.status.accepted()) {
		return d.scrub(err)
	}
	// A 2xx answer: accepted, whatever it said about some records.
	for _, l := range lines {
		d.counts.add(parseFields(l.Text))
	}
	var ans collogpb.ExportLogsServiceResponse
	found, perr := d.status.answer(&ans)
	if perr != nil {
		return &Rejected{What: "records", Of: int64(len(recs)), Unread: d.clean(perr.Error())}
	}
	if ps := ans.GetPartialSuccess(); found && ps != nil {
		n := min(max(ps.GetRejectedLogRecords(), 0), int64(len(recs)))
		if n > 0 || ps.GetErrorMessage() != "" {
			d.rejected.logs += n
			d.rejected.changed = true
			return &Rejected{What: "records", N: n, Of: int64(len(recs)), Message: d.clean(ps.GetErrorMessage())}
		}
	}
	return nil
}

// scrub is err as the shipper may show it: a collector's answer (which
// the exporter puts in its error) without the headers' secrets, without
// control characters, and cut short.
func (d *otlpDest) scrub(err error) error {
	return errors.New(d.clean(err.Error()))
}

// maxShown bounds what of a collector's text a message shows.
const maxShown = 1000

func (d *otlpDest) clean(s string) string {
	s = secret.Redact(s, d.secrets)
	if len(s) > maxShown {
		s = strings.ToValidUTF8(s[:maxShown], "") + "…"
	}
	return s
}

// Recount starts the verdict counts over from the lines a reader has
// already shipped from the start of its file.
func (d *otlpDest) Recount(r *reader) error {
	d.counts = newVerdictCounts()
	return r.scanBefore(func(text []byte) { d.counts.add(parseFields(text)) })
}

func (d *otlpDest) Flush(ctx context.Context) error {
	now := time.Now()
	if !d.counts.dirty(now) && !d.rejected.changed {
		return nil
	}
	rm := d.toExport(now)
	points := 0
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			points += len(sum.DataPoints)
		}
	}
	d.status.reset()
	err := d.metrics.Export(ctx, rm)
	if err != nil && (ctx.Err() != nil || !d.status.accepted()) {
		return d.scrub(err)
	}
	d.counts.exported(now)
	d.rejected.changed = false
	var ans colmetricpb.ExportMetricsServiceResponse
	found, perr := d.status.answer(&ans)
	if perr != nil {
		return &Rejected{What: "data points", Of: int64(points), Unread: d.clean(perr.Error())}
	}
	if ps := ans.GetPartialSuccess(); found && ps != nil {
		n := min(max(ps.GetRejectedDataPoints(), 0), int64(points))
		if n > 0 || ps.GetErrorMessage() != "" {
			// Counted, and sent with the next export that is due anyway:
			// sending the count now would be rejected with it, for ever.
			d.rejected.points += n
			return &Rejected{What: "data points", N: n, Of: int64(points), Message: d.clean(ps.GetErrorMessage())}
		}
	}
	return nil
}

// toExport is what a metrics export sends: bouncer.verdicts (when the log
// has any verdict) and bouncer.ship.rejected.
func (d *otlpDest) toExport(now time.Time) *metricdata.ResourceMetrics {
	rm := d.counts.metrics(d.res, now)
	ms := rm.ScopeMetrics[0].Metrics
	if len(d.counts.n) == 0 {
		ms = ms[:0]
	}
	rm.ScopeMetrics[0].Metrics = append(ms, d.rejected.metric(now))
	return rm
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

// rejectedCounts is bouncer.ship.rejected: what the collector took and
// then said it rejected, since the shipper started (a restart starts a new
// series). Unlike the verdicts, it can't be counted again from the log.
type rejectedCounts struct {
	start        time.Time
	logs, points int64
	changed      bool
}

func (c *rejectedCounts) metric(now time.Time) metricdata.Metrics {
	pt := func(signal string, v int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(attribute.String("bouncer.signal", signal)),
			StartTime:  c.start,
			Time:       now,
			Value:      v,
		}
	}
	return metricdata.Metrics{
		Name:        RejectedMetricName,
		Description: "What the collector accepted and then said it rejected (an OTLP partial success): log records (bouncer.signal logs) and data points (metrics). They stay in the audit log; they are not sent again.",
		Unit:        "{item}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints:  []metricdata.DataPoint[int64]{pt("logs", c.logs), pt("metrics", c.points)},
		},
	}
}
