package jsonlines

import (
	"flag"
	"io"

	"k8s.io/klog/v2"
)

// QuietKlog sends every klog line of the code under test nowhere, fatal ones
// aside: standard output carries the answers, standard error the harness's
// own errors.
func QuietKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
