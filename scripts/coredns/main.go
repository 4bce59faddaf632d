// CoreDNS with only the plugins the test cluster's DNS uses (the kubernetes plugin answering cluster.local,
// with health, readiness, caching and loop detection), so the build skips the cloud providers' SDKs that the
// full set brings. A test tool, built by scripts/kubernetes.js; not part of pinto.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The plugins in the order CoreDNS's plugin.cfg gives them, which is the order a query passes through.
func init() {
	dnsserver.Directives = []string{"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes", "loop"}
}

func main() {
	coremain.Run()
}
