package patroni

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Defaults for ClientOptions.
const (
	DefaultTimeout      = 5 * time.Second
	DefaultMaxBodyBytes = 4 << 20
	DefaultRetries      = 1
)

// Observer receives one call per URL per FetchCluster, after the request
// (with its retries) has finished. Losers cancelled because another URL won
// report an error wrapping context.Canceled. It must be safe for concurrent
// use and must not block.
type Observer interface {
	OnRequest(url string, dur time.Duration, err error)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(url string, dur time.Duration, err error)

// OnRequest calls f.
func (f ObserverFunc) OnRequest(url string, dur time.Duration, err error) { f(url, dur, err) }

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// Timeout bounds one URL's request including retries and reading the
	// body (default DefaultTimeout).
	Timeout time.Duration
	// TLS is used for https URLs; nil means system roots, no client cert.
	TLS *TLSConfig
	// Observer, if set, is told about every request (metrics).
	Observer Observer
	// MaxBodyBytes caps the /cluster body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Retries is the number of extra attempts per URL after a connection
	// error or a 5xx, all inside Timeout: 0 selects DefaultRetries, a
	// negative value disables retries.
	Retries int
}

// Client queries the Patroni REST API of one cluster through several URLs.
// It is safe for concurrent use.
type Client struct {
	urls     []string
	http     *retryablehttp.Client
	timeout  time.Duration
	maxBody  int64
	observer Observer
}

// URLError is the failure of one URL; FetchCluster joins them.
type URLError struct {
	URL string
	Err error
}

func (e *URLError) Error() string { return e.URL + ": " + e.Err.Error() }
func (e *URLError) Unwrap() error { return e.Err }

// NewClient validates and normalises urls ("http://h:8008", "http://h:8008/"
// and an api_url such as "http://h:8008/patroni" all become "http://h:8008")
// and builds the HTTP client. Proxy environment variables are ignored.
func NewClient(urls []string, opts ClientOptions) (*Client, error) {
	if len(urls) == 0 {
		return nil, errors.New("new patroni client: no urls")
	}
	c := &Client{timeout: opts.Timeout, maxBody: opts.MaxBodyBytes, observer: opts.Observer}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	var errs []error
	for _, raw := range urls {
		u, err := NormalizeURL(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.urls = append(c.urls, u)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new patroni client: %w", err)
	}
	transport := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   c.timeout,
		ResponseHeaderTimeout: c.timeout,
		ForceAttemptHTTP2:     true,
	}
	if opts.TLS != nil {
		cfg, err := opts.TLS.build()
		if err != nil {
			return nil, fmt.Errorf("new patroni client: %w", err)
		}
		transport.TLSClientConfig = cfg
	}
	c.http = newRetryClient(transport, opts.Retries)
	return c, nil
}

func newRetryClient(t *http.Transport, retries int) *retryablehttp.Client {
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	return &retryablehttp.Client{
		HTTPClient: &http.Client{
			Transport: t,
			// Patroni does not redirect; following one could leak a client cert.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Logger:       nil, // errors are returned, never logged here
		RetryWaitMin: 50 * time.Millisecond,
		RetryWaitMax: 250 * time.Millisecond,
		RetryMax:     retries,
		CheckRetry:   retryablehttp.ErrorPropagatedRetryPolicy,
		Backoff:      retryablehttp.DefaultBackoff,
		// The last answer, with its status, reaches get (StatusError)
		// instead of a "giving up" error that has lost it.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
}

// NormalizeURL checks a Patroni REST API URL and returns its base:
// scheme://host[:port] without trailing "/" or "/patroni".
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("patroni url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("patroni url %q: scheme must be http or https", raw)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("patroni url %q: want scheme://host:port with no user, query or fragment", raw)
	}
	path := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/patroni")
	return u.Scheme + "://" + u.Host + strings.TrimRight(path, "/"), nil
}

// CloseIdleConnections closes kept-alive connections to Patroni; call it
// when the Client is dropped (e.g. after a config reload built a new one).
func (c *Client) CloseIdleConnections() { c.http.HTTPClient.CloseIdleConnections() }

// URLs returns the normalised base URLs, in configuration order.
func (c *Client) URLs() []string { return append([]string(nil), c.urls...) }

type fetchResult struct {
	index   int
	cluster *Cluster
	err     error
}

// FetchCluster sends GET <url>/cluster to every URL in parallel. The first
// successful, parseable answer wins and the other requests are cancelled;
// it returns the cluster and the base URL that gave it. Each request is
// bounded by the client's Timeout (and by ctx). When every URL fails, the
// error joins one *URLError per URL. All goroutines have ended on return.
func (c *Client) FetchCluster(ctx context.Context) (*Cluster, string, error) {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan fetchResult, len(c.urls))
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // losers end promptly once cancelled
	for i, u := range c.urls {
		wg.Go(func() {
			cl, err := c.fetchOne(ctx, u)
			results <- fetchResult{index: i, cluster: cl, err: err}
		})
	}

	errs := make([]error, len(c.urls)) // in configuration order, for stable messages
	for range c.urls {
		r := <-results
		if r.err == nil {
			return r.cluster, c.urls[r.index], nil
		}
		errs[r.index] = &URLError{URL: c.urls[r.index], Err: r.err}
	}
	return nil, "", fmt.Errorf("fetch patroni cluster: all %d urls failed: %w", len(c.urls), errors.Join(errs...))
}

// fetchOne performs one URL's request under the per-request timeout and
// reports it to the observer.
func (c *Client) fetchOne(ctx context.Context, base string) (*Cluster, error) {
	return fetchParsed(c, ctx, base, "/cluster", ParseCluster)
}

// fetchParsed GETs base+path under the per-request timeout, parses the body
// and reports the request, parse errors included, to the observer under
// base.
func fetchParsed[V any](c *Client, ctx context.Context, base, path string, parse func([]byte) (V, error)) (v V, err error) {
	start := time.Now()
	if c.observer != nil {
		defer func() { c.observer.OnRequest(base, time.Since(start), err) }()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := c.get(ctx, base+path)
	if err != nil {
		return v, err
	}
	return parse(body)
}

// get returns the body of a 200 answer, read through a size limit.
func (c *Client) get(ctx context.Context, target string) ([]byte, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if resp == nil {
		return nil, err
	}
	defer resp.Body.Close()
	// A last answer with a status comes with the retry policy's error
	// (PassthroughErrorHandler); the status says more.
	if resp.StatusCode != http.StatusOK || err != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("GET %s: %w", target, &StatusError{Code: resp.StatusCode, Status: resp.Status})
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", target, err)
	}
	if int64(len(body)) > c.maxBody {
		return nil, fmt.Errorf("read %s: %w (limit %d bytes)", target, ErrBodyTooLarge, c.maxBody)
	}
	return body, nil
}

// StatusError is an answer with an HTTP status other than 200.
type StatusError struct {
	Code   int    // 503
	Status string // "503 Service Unavailable"
}

func (e *StatusError) Error() string { return "unexpected HTTP status " + e.Status }

// ErrBodyTooLarge is returned when an answer exceeds ClientOptions.MaxBodyBytes.
var ErrBodyTooLarge = errors.New("response body too large")
