// Command coredns is CoreDNS built with the plugins the sandprobe test cluster's DNS needs and
// nothing that sends a query out: errors, log, health, ready, kubernetes, cache, loop. There is
// no forward plugin, so a name outside the cluster gets an answer from nobody (docs/cluster.md).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the plugin order of the server blocks (a subset of CoreDNS's plugin.cfg order).
var directives = []string{"errors", "log", "health", "ready", "kubernetes", "cache", "loop"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
