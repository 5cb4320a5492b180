//go:build tools

// Package tools pins HAMi's scheduler command (cmd/scheduler of the shared
// tree) in this module's graph, so that scripts/k8s-binaries.sh can build it
// as the end-to-end tests' HAMi beside devshare serve.
package tools

import _ "github.com/Project-HAMi/HAMi/cmd/scheduler"
