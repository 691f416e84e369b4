package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotImplemented is wrapped by every KeyError for a documented key whose
// value asks for behaviour this build does not have (today only
// auth_pam_service in a build without PAM, authkeys.go). Such a key is
// refused rather than accepted and ignored: a TLS or authentication setting
// that silently does nothing is worse than a failed start.
var ErrNotImplemented = errors.New("not implemented yet")

// refuseUnimplemented reports the keys of cfg set to a value that would
// have no effect. Documented defaults always pass: with them our behaviour
// is what the settings reference describes.
func (d *decoder) refuseUnimplemented(cfg *Config) {
	d.refuseClientTLS(&cfg.General) // every server_tls_* setting has its behaviour (loadServerTLS)
}

// refuseClientTLS refuses client-side TLS keys that would have no effect:
// with tls_mode disable no TLS is offered, and without tls_certificate
// neither the client CA nor the handshake rate limit is used. With a
// certificate it checks the files (checkClientTLSFiles), so that
// pg_doorman -t and a reload catch what the first handshake would.
func (d *decoder) refuseClientTLS(g *General) {
	keys := []struct {
		key string
		set bool
	}{
		{"general.tls_certificate", g.TLSCertificate != ""},
		{"general.tls_private_key", g.TLSPrivateKey != ""},
		{"general.tls_ca_cert", g.TLSCACert != ""},
		{"general.tls_rate_limit_per_second", g.TLSRateLimitPerSecond != 0},
	}
	if g.TLSMode == "disable" {
		for _, k := range keys {
			if k.set {
				d.failf(k.key, "tls_mode is disable: the key would have no effect; remove it or choose another tls_mode")
			}
		}
		return
	}
	if g.TLSCertificate == "" {
		for _, k := range keys[2:] {
			if k.set {
				d.failf(k.key, "has no effect without tls_certificate and tls_private_key")
			}
		}
		return
	}
	d.checkClientTLSFiles(g)
}

// runtimeKnobWarnings names the Tokio runtime settings set to a value other
// than their default. They tune the Rust runtime only; the Go scheduler has
// no equivalent (GOMAXPROCS, read from the environment and the cgroup CPU
// limit, is the nearest), so they are accepted and do nothing.
func runtimeKnobWarnings(g *General) []string {
	def := defaultGeneral()
	var set []string
	add := func(changed bool, key string) {
		if changed {
			set = append(set, key)
		}
	}
	add(g.WorkerThreads != def.WorkerThreads, "worker_threads")
	add(g.WorkerCPUAffinityPinning != def.WorkerCPUAffinityPinning, "worker_cpu_affinity_pinning")
	add(g.TokioGlobalQueueInterval != def.TokioGlobalQueueInterval, "tokio_global_queue_interval")
	add(g.TokioEventInterval != def.TokioEventInterval, "tokio_event_interval")
	add(g.WorkerStackSize != def.WorkerStackSize, "worker_stack_size")
	add(g.MaxBlockingThreads != def.MaxBlockingThreads, "max_blocking_threads")
	var w []string
	if len(set) > 0 {
		w = append(w, fmt.Sprintf("general.%s: Tokio runtime settings, no effect in pg_doorman (Go schedules on GOMAXPROCS threads; set the GOMAXPROCS environment variable to limit them)",
			strings.Join(set, ", general.")))
	}
	return w
}
