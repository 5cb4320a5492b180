// Command volcano112-oracle answers devshare's Volcano 1.12 oracle scenarios
// with Volcano v1.12.4's own code: the scheduler's side of the vGPU handshake
// (vgpu.NewGPUDevices, pkg/scheduler/api/devices/nvidia/vgpu/device_info.go)
// and the node lock (pkg/scheduler/plugins/util/nodelock.LockNode).
//
//	volcano112-oracle handshake < scenarios.jsonl > results.jsonl
//	volcano112-oracle nodelock < scenarios.jsonl > results.jsonl
//
// Volcano reads the clock itself (time.Now) and cannot be given one, so
// scenarios carry ages, not times: the harness renders every stamp as
// "now - age" at the real instant of the call, in the scenario's zone (the
// process's time.Local, as Volcano formats in it), and reports the instant
// (Unix seconds) and the exact values it rendered, so that devshare decides
// on the same strings at the same second. A call that straddles a second
// boundary is run again on a fresh fake API server (Volcano's functions keep
// no state between calls but the API server's), so the second reported is the
// one Volcano read. Ages are generated at least 2 s away from every expiry.
//
// handshake: {"id", "zone", "steps": [{"dt", "handshake", "register"}]}. One
// node through 1-6 scheduler observations, dt virtual seconds apart. Before
// each, the handshake is set ({"kind": "absent" | "raw" (with "raw") |
// "requesting" | "deleted" (a scheduler's stamp "age" seconds old) |
// "reported" (hami-dp's "Reported <Go time>", "age" old)}) or kept (null: what
// the previous observation left, a stamp Volcano wrote aged by the virtual
// time since), and the register annotation is set ({"value": string or null
// for absent}) or kept (null). The answer per step: the values observed, the
// instant, the node patches Volcano wrote, the devices NewGPUDevices returned
// (null for none), and the panic message if it panicked.
//
// Volcano writes the handshake through devices.GetClient(), a package
// variable of type *kubernetes.Clientset built only from the in-cluster
// configuration; the harness sets that variable (go:linkname) to a clientset
// whose HTTP transport answers in process from a fake clientset
// (k8s.io/client-go/kubernetes/fake), so every PATCH is applied to and read
// back from the fake API server.
//
// nodelock: {"id", "zone", "lock": {"kind": "absent" | "raw" (with "raw") |
// "rfc3339" (a time "age" seconds old written as "format": "utc", "zone",
// "offset" (another zone), "nano" (RFC 3339 with nanoseconds) or "hami"
// (HAMi's "<time>,<ns>,<name>"))}}. nodelock.LockNode on the node (fake
// clientset) under Volcano's lock name; the answer: acquired, the error, the
// lock value left on the node, the number of node updates.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
	_ "unsafe" // go:linkname

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	deviceconfig "volcano.sh/volcano/pkg/scheduler/api/devices/config"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
	"volcano.sh/volcano/pkg/scheduler/plugins/util/nodelock"

	"devshare.test/jsonlines"
)

// volcanoClient is Volcano's devices.kubeClient (pkg/scheduler/api/devices/util.go).
//
//go:linkname volcanoClient volcano.sh/volcano/pkg/scheduler/api/devices.kubeClient
var volcanoClient *kubernetes.Clientset

// Volcano's handshake time layout and expiry (device_info.go).
const handshakeLayout = "2006.01.02 15:04:05"

const nodeName = "node-x"

type valueSpec struct {
	Kind   string `json:"kind"`
	Age    int64  `json:"age"`
	Raw    string `json:"raw"`
	Format string `json:"format"`
}

type registerSpec struct {
	Value *string `json:"value"`
}

type handshakeScenario struct {
	ID    int `json:"id"`
	Zone  int `json:"zone"`
	Steps []struct {
		Dt        int64         `json:"dt"`
		Handshake *valueSpec    `json:"handshake"`
		Register  *registerSpec `json:"register"`
	} `json:"steps"`
}

type lockScenario struct {
	ID   int       `json:"id"`
	Zone int       `json:"zone"`
	Lock valueSpec `json:"lock"`
}

type deviceJSON struct {
	Index  int    `json:"index"`
	UUID   string `json:"uuid"`
	Count  uint   `json:"count"`
	Memory uint   `json:"devmem"`
	Type   string `json:"type"`
	Health bool   `json:"health"`
}

type stepJSON struct {
	Now       int64               `json:"now"`
	Handshake *string             `json:"handshake"`
	Register  *string             `json:"register"`
	Writes    []map[string]string `json:"writes"`
	Devices   []deviceJSON        `json:"devices"`
	Read      []deviceJSON        `json:"read"`
	Panic     string              `json:"panic"`
	Retries   int                 `json:"retries"`
}

func fail(format string, args ...any) { jsonlines.Fail("volcano112-oracle", format, args...) }

// fakeTransport serves the node PATCHes of a *kubernetes.Clientset from a
// fake clientset, recording each patch's annotations.
type fakeTransport struct {
	fake    *fake.Clientset
	patches []map[string]string
}

func (t *fakeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	reply := func(code int, body []byte) *http.Response {
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	}
	name, ok := strings.CutPrefix(req.URL.Path, "/api/v1/nodes/")
	if req.Method != http.MethodPatch || !ok || strings.Contains(name, "/") {
		fail("unexpected request %s %s", req.Method, req.URL.Path)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		fail("patch body: %v", err)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		fail("patch %s: %v", body, err)
	}
	t.patches = append(t.patches, patch.Metadata.Annotations)
	node, err := t.fake.CoreV1().Nodes().Patch(req.Context(), name, types.PatchType(req.Header.Get("Content-Type")),
		body, metav1.PatchOptions{})
	if err != nil {
		return reply(http.StatusInternalServerError, []byte(`{"kind":"Status","status":"Failure"}`)), nil
	}
	out, _ := json.Marshal(node)
	return reply(http.StatusOK, out), nil
}

// vgpuNode is a node carrying `annotations`, with allocatable vGPU resources.
func vgpuNode(annotations map[string]string) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Annotations: annotations},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceName(deviceconfig.VolcanoVGPUNumber): resource.MustParse("10"),
		}},
	}
}

// stamp is a handshake value whose time Volcano wrote or the scenario set.
type stamp struct {
	word    string // "Requesting" or "Deleted"
	virtual int64  // the virtual second it was written at
}

func render(at time.Time, s valueSpec) string {
	t := at.Add(-time.Duration(s.Age) * time.Second)
	switch s.Kind {
	case "raw":
		return s.Raw
	case "requesting":
		return "Requesting_" + t.Format(handshakeLayout)
	case "deleted":
		return "Deleted_" + t.Format(handshakeLayout)
	case "reported":
		// hami-dp: "Reported " + time.Now().String() (without a monotonic reading).
		return "Reported " + t.Add(213111834*time.Nanosecond).Round(0).String()
	}
	fail("unknown handshake kind %q", s.Kind)
	return ""
}

// observe runs NewGPUDevices once on a fresh fake API server holding the node,
// within one second of the clock.
func observe(prepare func(now time.Time) map[string]string) (stepJSON, map[string]string) {
	var out stepJSON
	for attempt := 0; ; attempt++ {
		if attempt > 20 {
			fail("no call within one second after 20 attempts")
		}
		// Wait out the end of a second, where a call would straddle it.
		if now := time.Now(); now.Nanosecond() > 990_000_000 {
			time.Sleep(time.Duration(1_000_000_000-now.Nanosecond()) * time.Nanosecond)
		}
		before := time.Now()
		set := prepare(before)
		node := vgpuNode(set)
		fc := fake.NewSimpleClientset(node)
		transport := &fakeTransport{fake: fc}
		volcanoClient = clientFor(transport)
		out = stepJSON{Now: before.Unix(), Writes: []map[string]string{}, Retries: attempt}
		var gs *vgpu.GPUDevices
		func() {
			defer func() {
				if r := recover(); r != nil {
					out.Panic = fmt.Sprint(r)
				}
			}()
			gs = vgpu.NewGPUDevices(nodeName, node)
		}()
		after := time.Now()
		if after.Unix() != before.Unix() {
			continue
		}
		if v, ok := set[deviceconfig.VolcanoVGPUHandshake]; ok {
			out.Handshake = &v
		}
		if v, ok := set[deviceconfig.VolcanoVGPURegister]; ok {
			out.Register = &v
		}
		out.Writes = append(out.Writes, transport.patches...)
		out.Devices = devicesOf(gs)
		// The register as Volcano reads it whatever the handshake: the devices
		// of the same node answering with a Reported value (its PATCH goes to
		// a throwaway fake API server).
		if v, ok := set[deviceconfig.VolcanoVGPURegister]; ok {
			volcanoClient = clientFor(&fakeTransport{fake: fake.NewSimpleClientset(
				vgpuNode(map[string]string{deviceconfig.VolcanoVGPURegister: v}))})
			out.Read = devicesOf(vgpu.NewGPUDevices(nodeName, vgpuNode(map[string]string{
				deviceconfig.VolcanoVGPURegister: v, deviceconfig.VolcanoVGPUHandshake: "Reported"})))
		}
		left, err := fc.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			fail("node read back: %v", err)
		}
		return out, left.Annotations
	}
}

// clientFor is a *kubernetes.Clientset served by `transport`.
func clientFor(transport *fakeTransport) *kubernetes.Clientset {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://fake.invalid", Transport: transport,
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}})
	if err != nil {
		fail("clientset: %v", err)
	}
	return client
}

// devicesOf lists the devices NewGPUDevices returned, in index order (nil for none).
func devicesOf(gs *vgpu.GPUDevices) []deviceJSON {
	if gs == nil {
		return nil
	}
	indexes := []int{}
	for i := range gs.Device {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	out := []deviceJSON{}
	for _, i := range indexes {
		d := gs.Device[i]
		out = append(out, deviceJSON{i, d.UUID, d.Number, d.Memory, d.Type, d.Health})
	}
	return out
}

func handshake(s *handshakeScenario) map[string]any {
	time.Local = zone(s.Zone)
	var (
		virtual  int64
		raw      *string // the handshake on the node, when not a stamp
		carried  *stamp  // the handshake on the node, a stamp
		register *string
		steps    []stepJSON
	)
	for _, step := range s.Steps {
		virtual += step.Dt
		var set *valueSpec // a handshake set before this observation
		if step.Handshake != nil {
			carried, raw = nil, nil
			switch step.Handshake.Kind {
			case "absent":
			case "requesting", "deleted":
				word := "Requesting"
				if step.Handshake.Kind == "deleted" {
					word = "Deleted"
				}
				carried = &stamp{word, virtual - step.Handshake.Age}
			default:
				set = step.Handshake
			}
		}
		if step.Register != nil {
			register = step.Register.Value
		}
		prepare := func(now time.Time) map[string]string {
			a := map[string]string{}
			if register != nil {
				a[deviceconfig.VolcanoVGPURegister] = *register
			}
			switch {
			case set != nil:
				a[deviceconfig.VolcanoVGPUHandshake] = render(now, *set)
			case carried != nil:
				at := now.Add(-time.Duration(virtual-carried.virtual) * time.Second)
				a[deviceconfig.VolcanoVGPUHandshake] = carried.word + "_" + at.Format(handshakeLayout)
			case raw != nil:
				a[deviceconfig.VolcanoVGPUHandshake] = *raw
			}
			return a
		}
		out, left := observe(prepare)
		steps = append(steps, out)
		// What the next observation sees: the handshake the fake API server holds.
		carried, raw = nil, nil
		if v, ok := left[deviceconfig.VolcanoVGPUHandshake]; ok {
			now := time.Unix(out.Now, 0)
			for _, word := range []string{"Requesting", "Deleted"} {
				if len(out.Writes) > 0 && v == word+"_"+now.Format(handshakeLayout) {
					carried = &stamp{word, virtual}
				}
			}
			if carried == nil && out.Handshake != nil && v == *out.Handshake {
				// Unchanged: a stamp keeps aging, anything else stays as it is.
				carried = reparse(v, out.Now, virtual)
			}
			if carried == nil {
				raw = &v
			}
		}
	}
	return map[string]any{"id": s.ID, "steps": steps}
}

// reparse gives an unchanged stamp of the scheduler's layout back its virtual
// time (written `age` seconds before the observation at virtual time
// `virtual`, real second `now`), so that it keeps aging; other values stay raw.
func reparse(v string, now int64, virtual int64) *stamp {
	word, text, ok := strings.Cut(v, "_")
	if !ok || (word != "Requesting" && word != "Deleted") {
		return nil
	}
	t, err := time.ParseInLocation(handshakeLayout, text, time.Local)
	if err != nil || word+"_"+t.Format(handshakeLayout) != v {
		return nil
	}
	return &stamp{word, virtual - (now - t.Unix())}
}

func lockValue(now time.Time, s valueSpec) (string, bool) {
	t := now.Add(-time.Duration(s.Age) * time.Second)
	switch s.Kind {
	case "absent":
		return "", false
	case "raw":
		return s.Raw, true
	case "rfc3339":
		switch s.Format {
		case "utc":
			return t.UTC().Format(time.RFC3339), true
		case "zone":
			return t.Format(time.RFC3339), true
		case "offset":
			return t.In(time.FixedZone("", -7*3600-1800)).Format(time.RFC3339), true
		case "nano":
			return t.Add(123456789 * time.Nanosecond).Format(time.RFC3339Nano), true
		case "hami":
			return t.Format(time.RFC3339) + ",default,pod-a", true
		}
	}
	fail("unknown lock %q / %q", s.Kind, s.Format)
	return "", false
}

func lock(s *lockScenario) map[string]any {
	time.Local = zone(s.Zone)
	for attempt := 0; attempt <= 20; attempt++ {
		if now := time.Now(); now.Nanosecond() > 990_000_000 {
			time.Sleep(time.Duration(1_000_000_000-now.Nanosecond()) * time.Nanosecond)
		}
		before := time.Now()
		annotations := map[string]string{deviceconfig.VolcanoVGPURegister: "GPU-0,10,16384,NVIDIA-Tesla T4,true,hami-core:"}
		value, present := lockValue(before, s.Lock)
		if present {
			annotations[vgpu.DeviceName] = value
		}
		fc := fake.NewSimpleClientset(vgpuNode(annotations))
		_ = nodelock.UseClient(fc)
		out := map[string]any{"id": s.ID, "now": before.Unix(), "lock": nil, "retries": attempt}
		if present {
			out["lock"] = value
		}
		var err error
		panicked := ""
		func() {
			defer func() {
				if r := recover(); r != nil {
					panicked = fmt.Sprint(r)
				}
			}()
			err = nodelock.LockNode(nodeName, vgpu.DeviceName)
		}()
		if time.Now().Unix() != before.Unix() {
			continue
		}
		node, gerr := fc.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if gerr != nil {
			fail("node read back: %v", gerr)
		}
		updates := 0
		for _, a := range fc.Actions() {
			if a.GetVerb() == "update" {
				updates++
			}
		}
		out["acquired"] = err == nil && panicked == ""
		out["error"] = ""
		if err != nil {
			out["error"] = err.Error()
		}
		out["panic"] = panicked
		out["left"] = nil
		if v, ok := node.Annotations[vgpu.DeviceName]; ok {
			out["left"] = v
		}
		out["updates"] = updates
		return out
	}
	fail("scenario %d: no call within one second after 20 attempts", s.ID)
	return nil
}

func main() {
	jsonlines.QuietKlog()
	jsonlines.ServeMode("volcano112-oracle", map[string]jsonlines.Mode{
		"handshake": jsonlines.Answer(handshake),
		"nodelock":  jsonlines.Answer(lock),
	})
}

// zone is the process's zone for a scenario: UTC, or a fixed offset east of it.
func zone(offset int) *time.Location {
	if offset == 0 {
		return time.UTC
	}
	return time.FixedZone("", offset)
}
