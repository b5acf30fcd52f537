//go:build tools

// containerd 2 for a node with gVisor: the served gVisor shim speaks containerd 2's shim protocol.
// Built from its own module graph (the containerd/v2 in gVisor's graph does not compile against
// the otelgrpc gVisor pins).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
