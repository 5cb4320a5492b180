// Command volcano-oracle answers devshare's Volcano oracle scenarios with
// Volcano's own code (pkg/scheduler/api/devices/nvidia/vgpu at ed72c7c8).
//
//	volcano-oracle register < scenarios.jsonl > results.jsonl
//
// Each scenario is {"id", "register": "<volcano.sh/node-vgpu-register value>"};
// the answer is the devices vgpu.NewGPUDevices registers for a node carrying
// that value (and allocatable vGPU resources), in index order, or null when it
// registers none, with the sharing mode it reads.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	deviceconfig "volcano.sh/volcano/pkg/scheduler/api/devices/config"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
)

type scenario struct {
	ID       int    `json:"id"`
	Register string `json:"register"`
}

type deviceJSON struct {
	Index  int    `json:"index"`
	UUID   string `json:"uuid"`
	Count  uint   `json:"count"`
	Memory uint   `json:"devmem"`
	Type   string `json:"type"`
	Health bool   `json:"health"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "volcano-oracle: "+format+"\n", args...)
	os.Exit(2)
}

func register(s *scenario) map[string]any {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-x", Annotations: map[string]string{
			deviceconfig.VolcanoVGPURegister: s.Register}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceName(deviceconfig.VolcanoVGPUNumber): resource.MustParse("10"),
			corev1.ResourceName(deviceconfig.VolcanoVGPUCores):  resource.MustParse("100"),
			corev1.ResourceName(deviceconfig.VolcanoVGPUMemory): resource.MustParse("16384"),
		}},
	}
	out := map[string]any{"id": s.ID, "devices": nil, "mode": nil}
	gs := vgpu.NewGPUDevices(node.Name, node)
	if gs == nil {
		return out
	}
	indexes := []int{}
	for i := range gs.Device {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	devices := []deviceJSON{}
	for _, i := range indexes {
		d := gs.Device[i]
		devices = append(devices, deviceJSON{i, d.UUID, d.Number, d.Memory, d.Type, d.Health})
	}
	out["devices"], out["mode"] = devices, gs.Mode
	return out
}

func main() {
	if len(os.Args) != 2 || os.Args[1] != "register" {
		fail("usage: volcano-oracle register < scenarios.jsonl")
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var s scenario
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			fail("scenario: %v", err)
		}
		if err := enc.Encode(register(&s)); err != nil {
			fail("write: %v", err)
		}
	}
	if err := in.Err(); err != nil {
		fail("read: %v", err)
	}
}
