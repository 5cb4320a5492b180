// Command hami-oracle answers devshare's oracle scenarios with HAMi's own code.
//
//	hami-oracle answer   < scenarios.jsonl > results.jsonl
//	hami-oracle speed=N  < one-scenario.json > {"best_ms": ..., "node": ...}
//
// Scenarios and results are described in ../compare.py (RESULT_SCHEMA). Every
// answer comes from HAMi's exported functions: the node and pod annotation
// codecs of pkg/device, the NVIDIA device's GenerateResourceRequests, the node
// score of pkg/scheduler/policy, and Filter of pkg/scheduler run against a
// fake clientset (the scheduler's informers, pod cache and node registration
// are HAMi's; only the API server is fake). Fit and the GPU policy ordering are
// observed through Filter on one node at a time, which is how HAMi calls them.
package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/Project-HAMi/HAMi/pkg/device"
	nvidiadevice "github.com/Project-HAMi/HAMi/pkg/device/nvidia"
	"github.com/Project-HAMi/HAMi/pkg/scheduler"
	"github.com/Project-HAMi/HAMi/pkg/scheduler/config"
	"github.com/Project-HAMi/HAMi/pkg/util"
	"github.com/Project-HAMi/HAMi/pkg/util/client"

	"devshare.test/jsonlines"
)

const (
	registerKey  = "hami.io/node-nvidia-register"
	handshakeKey = "hami.io/node-handshake"
	allocatedKey = "hami.io/vgpu-devices-allocated"
	nvidia       = "NVIDIA"
)

type devJSON struct {
	ID      string `json:"id"`
	Index   uint   `json:"index"`
	Count   int32  `json:"count"`
	Devmem  int32  `json:"devmem"`
	Devcore int32  `json:"devcore"`
	Type    string `json:"type"`
	Numa    int    `json:"numa"`
	Mode    string `json:"mode"`
	Health  bool   `json:"health"`
}

type cdJSON struct {
	UUID      string `json:"uuid"`
	Type      string `json:"type"`
	Usedmem   int32  `json:"usedmem"`
	Usedcores int32  `json:"usedcores"`
}

type scenario struct {
	ID        int               `json:"id"`
	Scheduler map[string]string `json:"scheduler"`
	Nodes     []struct {
		Name        string            `json:"name"`
		Register    string            `json:"register"`
		Devices     []devJSON         `json:"devices"`
		Annotations map[string]string `json:"annotations"`
	} `json:"nodes"`
	Pods []struct {
		Name      string     `json:"name"`
		Namespace string     `json:"namespace"`
		Node      string     `json:"node"`
		Allocated string     `json:"allocated"`
		Devices   [][]cdJSON `json:"devices"`
	} `json:"pods"`
	Quota map[string]string `json:"quota"` // spec.hard of a ResourceQuota "gpu-quota" in "default"
	Pod   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		UID         string            `json:"uid"`
		Annotations map[string]string `json:"annotations"`
		Containers  []struct {
			Name   string            `json:"name"`
			Limits map[string]string `json:"limits"`
		} `json:"containers"`
	} `json:"pod"`
}

func fail(format string, args ...any) { jsonlines.Fail("hami-oracle", format, args...) }

func limits(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			fail("quantity %s=%q: %v", k, v, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out
}

// objects builds the Kubernetes objects of a scenario, as compare.py does for devshare.
func objects(s *scenario) ([]*corev1.Node, []*corev1.Pod, *corev1.Pod) {
	var nodes []*corev1.Node
	for _, n := range s.Nodes {
		annos := map[string]string{registerKey: n.Register}
		for k, v := range n.Annotations {
			annos[k] = v
		}
		slots := int64(0)
		for _, d := range n.Devices {
			slots += int64(d.Count)
		}
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Annotations: annos},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				"nvidia.com/gpu": *resource.NewQuantity(slots, resource.DecimalSI)}},
		})
	}
	var held []*corev1.Pod
	for _, p := range s.Pods {
		var ctrs []corev1.Container
		for i, c := range p.Devices {
			l := corev1.ResourceList{}
			if len(c) > 0 {
				l["nvidia.com/gpu"] = *resource.NewQuantity(int64(len(c)), resource.DecimalSI)
			}
			ctrs = append(ctrs, corev1.Container{Name: "c" + strconv.Itoa(i), Resources: corev1.ResourceRequirements{Limits: l}})
		}
		held = append(held, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: types.UID("uid-" + p.Name),
				Annotations: map[string]string{util.AssignedNodeAnnotations: p.Node, allocatedKey: p.Allocated,
					util.DeviceBindPhase: "success"}},
			Spec:   corev1.PodSpec{NodeName: p.Node, Containers: ctrs},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.Pod.Name, Namespace: s.Pod.Namespace,
		UID: types.UID(s.Pod.UID), Annotations: map[string]string{}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	for k, v := range s.Pod.Annotations {
		pod.Annotations[k] = v
	}
	for _, c := range s.Pod.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.Name,
			Resources: corev1.ResourceRequirements{Limits: limits(c.Limits)}})
	}
	return nodes, held, pod
}

// hamiScheduler is HAMi's scheduler on a fake API server holding one
// scenario's objects, with its registration loop running.
type hamiScheduler struct {
	*scheduler.Scheduler
	nodes []*corev1.Node
	done  chan struct{} // closed when RegisterFromNodeAnnotations has returned
}

// startScheduler runs HAMi's scheduler on a fake API server holding the
// scenario's objects and waits until every node's devices are registered and
// the pod cache holds the held pods.
//
// The objects are seeded into the clientset before any informer starts, so
// no watch event is queued for them. Every node carries a fresh
// "Requesting_<now>" handshake for every vendor HAMi knows, so each vendor's
// CheckHealth finds it healthy and
// registers the node without patching it: no write reaches the fake API
// server during registration (which at 5,000 nodes overflowed the fake's
// 100-event watch channels), and the answer does not depend on how long the
// harness runs as long as a scenario takes less than HAMi's 60 s expiry.
func startScheduler(s *scenario, nodes []*corev1.Node, held []*corev1.Pod, pod *corev1.Pod) *hamiScheduler {
	stamp := "Requesting_" + time.Now().Format(time.DateTime)
	objs := []runtime.Object{}
	for _, n := range nodes {
		for _, key := range util.HandshakeAnnos {
			n.Annotations[key] = stamp
		}
		objs = append(objs, n)
	}
	for _, p := range append(held, pod) {
		objs = append(objs, p)
	}
	if len(s.Quota) > 0 {
		objs = append(objs, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-quota", Namespace: "default"},
			Spec:       corev1.ResourceQuotaSpec{Hard: limits(s.Quota)}})
	}
	// HAMi's quota manager is one per process (device.NewQuotaManager hands
	// out a global); this scenario's informers fill it afresh.
	device.GetLocalCache().Quotas = map[string]*device.DeviceQuota{}
	cs := fake.NewSimpleClientset(objs...)
	watching := watchSignal(cs, "pods", "nodes", "resourcequotas")
	client.KubeClient = cs
	config.NodeSchedulerPolicy = s.Scheduler["node_policy"]
	device.GPUSchedulerPolicy = s.Scheduler["gpu_policy"]
	h := &hamiScheduler{Scheduler: scheduler.NewScheduler(), nodes: nodes, done: make(chan struct{})}
	if err := h.Start(); err != nil {
		fail("scenario %d: start: %v", s.ID, err)
	}
	go func() {
		defer close(h.done)
		h.RegisterFromNodeAnnotations()
	}()
	deadline := time.Now().Add(30 * time.Second)
	// The fake API server forgets what happens between an informer's LIST
	// and its WATCH (it keeps no history to resume from), so nothing is
	// written before every informer watches.
	select {
	case <-watching:
	case <-time.After(30 * time.Second):
		fail("scenario %d: the informers did not start watching within 30 s", s.ID)
	}
	for {
		registered, _ := h.ListNodes()
		if len(registered) >= len(nodes) {
			break
		}
		if time.Now().After(deadline) {
			fail("scenario %d: %d of %d nodes registered after 30 s", s.ID, len(registered), len(nodes))
		}
		time.Sleep(time.Millisecond)
	}
	for len(h.GetPodManager().ListPodsInfo()) < len(held) {
		if time.Now().After(deadline) {
			fail("scenario %d: pod cache not synced", s.ID)
		}
		time.Sleep(time.Millisecond)
	}
	return h
}

// watchSignal makes the clientset's watches of `resources` and returns a
// channel closed once each of them is watched.
func watchSignal(cs *fake.Clientset, resources ...string) <-chan struct{} {
	all := make(chan struct{})
	var mu sync.Mutex
	pending := map[string]bool{}
	for _, r := range resources {
		pending[r] = true
	}
	cs.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		gvr := action.GetResource()
		opts := metav1.ListOptions{}
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := cs.Tracker().Watch(gvr, action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		mu.Lock()
		if pending[gvr.Resource] {
			delete(pending, gvr.Resource)
			if len(pending) == 0 {
				close(all)
			}
		}
		mu.Unlock()
		return true, w, nil
	})
	return all
}

// stop ends the scheduler's informers and registration loop and waits for
// the loop to return, then forgets the NVIDIA device's per-node health
// bookkeeping (global in HAMi), so that the next scenario, whose nodes have
// the same names, starts clean.
func (h *hamiScheduler) stop() {
	h.Stop()
	<-h.done
	gpu := device.GetDevices()[nvidia].(*nvidiadevice.NvidiaGPUDevices)
	for _, n := range h.nodes {
		gpu.NodeDeleted(n.Name)
	}
}

func cds(pd device.PodSingleDevice) [][]cdJSON {
	out := [][]cdJSON{}
	for _, c := range pd {
		ctr := []cdJSON{}
		for _, d := range c {
			ctr = append(ctr, cdJSON{UUID: d.UUID, Type: d.Type, Usedmem: d.Usedmem, Usedcores: d.Usedcores})
		}
		out = append(out, ctr)
	}
	return out
}

// allocated is the NVIDIA part of the devices Filter wrote to the pod (the
// merge patch HAMi sends to the API server), decoded by HAMi: one entry per
// container. The value ends every container with ';', and HAMi's decoder
// reads one more, empty, container after the last one; that one is not a
// container of the pod and is dropped here.
func allocated(ctx context.Context, pod *corev1.Pod) [][]cdJSON {
	got, err := client.KubeClient.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		fail("get pod: %v", err)
	}
	value := got.Annotations[allocatedKey]
	pd, _ := device.DecodePodDevices(map[string]string{nvidia: allocatedKey},
		map[string]string{allocatedKey: value})
	containers := pd[nvidia]
	if n := len(containers); n > 0 && len(containers[n-1]) == 0 && strings.HasSuffix(value, ";") {
		containers = containers[:n-1]
	}
	return cds(containers)
}

// reset undoes a successful Filter: HAMi cached the reservation and patched the
// pod, and its informer would re-add the reservation from the patched pod at
// any time. Deleting the pod (HAMi's onDelPod drops the reservation) and
// creating it afresh, then waiting until the cache holds only the held pods,
// makes the next Filter see the cluster as the scenario describes it.
func reset(ctx context.Context, sched *hamiScheduler, pod *corev1.Pod, held int) {
	pods := client.KubeClient.CoreV1().Pods(pod.Namespace)
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		fail("delete pod: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sched.GetPodManager().ListPodsInfo()) != held {
		if time.Now().After(deadline) {
			fail("pod cache holds %d pods, want %d", len(sched.GetPodManager().ListPodsInfo()), held)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fail("create pod: %v", err)
	}
}

func filter(sched *hamiScheduler, pod *corev1.Pod, names []string) (*extenderv1.ExtenderFilterResult, error) {
	return sched.Filter(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
}

func answer(s *scenario) map[string]any {
	out := map[string]any{"id": s.ID}

	nodeDecode, nodeEncode := map[string]any{}, map[string]string{}
	for _, n := range s.Nodes {
		devs, err := device.UnMarshalNodeDevices(n.Register)
		if err != nil {
			nodeDecode[n.Name] = map[string]string{"error": err.Error()}
		} else {
			list := []devJSON{}
			for _, d := range devs {
				list = append(list, devJSON{d.ID, d.Index, d.Count, d.Devmem, d.Devcore, d.Type, d.Numa, d.Mode, d.Health})
			}
			nodeDecode[n.Name] = list
		}
		var in []*device.DeviceInfo
		for _, d := range n.Devices {
			in = append(in, &device.DeviceInfo{ID: d.ID, Index: d.Index, Count: d.Count, Devmem: d.Devmem,
				Devcore: d.Devcore, Type: d.Type, Numa: d.Numa, Mode: d.Mode, Health: d.Health})
		}
		nodeEncode[n.Name] = device.MarshalNodeDevices(in)
	}
	out["node_decode"], out["node_encode"] = nodeDecode, nodeEncode

	podDecode, podEncode := map[string]any{}, map[string]string{}
	for _, p := range s.Pods {
		pd, err := device.DecodePodDevices(map[string]string{nvidia: allocatedKey}, map[string]string{allocatedKey: p.Allocated})
		if err != nil {
			podDecode[p.Name] = map[string]string{"error": err.Error()}
		} else {
			podDecode[p.Name] = cds(pd[nvidia])
		}
		var single device.PodSingleDevice
		for _, c := range p.Devices {
			ctr := device.ContainerDevices{}
			for _, d := range c {
				ctr = append(ctr, device.ContainerDevice{UUID: d.UUID, Type: d.Type, Usedmem: d.Usedmem, Usedcores: d.Usedcores})
			}
			single = append(single, ctr)
		}
		podEncode[p.Name] = device.EncodePodSingleDevice(single)
	}
	out["pod_decode"], out["pod_encode"] = podDecode, podEncode

	nodes, held, pod := objects(s)
	gpu := device.GetDevices()[nvidia]
	reqs := []any{}
	for i := range pod.Spec.Containers {
		r := gpu.GenerateResourceRequests(&pod.Spec.Containers[i])
		if r.Nums == 0 {
			reqs = append(reqs, nil)
			continue
		}
		reqs = append(reqs, map[string]any{"nums": r.Nums, "type": r.Type, "memreq": r.Memreq,
			"mempercentage": r.MemPercentagereq, "coresreq": r.Coresreq})
	}
	out["requests"] = reqs

	sched := startScheduler(s, nodes, held, pod)
	defer sched.stop()
	ctx := context.Background()

	fit := map[string]any{}
	for _, n := range nodes {
		res, err := filter(sched, pod, []string{n.Name})
		switch {
		case err != nil:
			fit[n.Name] = map[string]any{"fits": false, "reason": "error: " + err.Error(), "devices": [][]string{}}
		case res.NodeNames != nil && len(*res.NodeNames) == 1:
			uuids := [][]string{}
			for _, c := range allocated(ctx, pod) {
				ctr := []string{}
				for _, d := range c {
					ctr = append(ctr, d.UUID)
				}
				uuids = append(uuids, ctr)
			}
			fit[n.Name] = map[string]any{"fits": true, "reason": "", "devices": uuids}
			reset(ctx, sched, pod, len(held))
		default:
			fit[n.Name] = map[string]any{"fits": false, "reason": res.FailedNodes[n.Name], "devices": [][]string{}}
		}
	}
	out["fit"] = fit

	names := []string{}
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	// The node scores are the ones this Filter computed (scoreNode logs each
	// fitting node's score at verbosity 4; float32 printed exactly).
	logs.capture(true)
	res, err := filter(sched, pod, names)
	scores := logs.scores(pod)
	f := map[string]any{"node": nil, "devices": nil, "annotation": nil, "failed": map[string]string{}, "error": nil}
	if err != nil {
		f["error"] = err.Error()
	} else if res.NodeNames != nil && len(*res.NodeNames) == 1 {
		chosen := (*res.NodeNames)[0]
		f["node"] = chosen
		got, _ := client.KubeClient.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		f["annotation"] = got.Annotations[allocatedKey]
		devices := [][]map[string]any{}
		for _, c := range allocated(ctx, pod) {
			ctr := []map[string]any{}
			for _, d := range c {
				ctr = append(ctr, map[string]any{"uuid": d.UUID, "type": d.Type, "usedmem": d.Usedmem, "usedcores": d.Usedcores})
			}
			devices = append(devices, ctr)
		}
		f["devices"] = devices
	} else if res.Error != "" {
		f["error"] = res.Error
	} else {
		f["failed"] = res.FailedNodes
	}
	out["filter"] = f
	out["score"] = scores
	return out
}

// speed times Scheduler.Filter on the scenario's whole node list, `repeat`
// times (each after the previous reservation was undone), and reports the
// best and the median in milliseconds.
func speed(s *scenario, repeat int) map[string]any {
	nodes, held, pod := objects(s)
	sched := startScheduler(s, nodes, held, pod)
	defer sched.stop()
	names := []string{}
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	times := []float64{}
	chosen := ""
	for i := 0; i < repeat; i++ {
		t := time.Now()
		res, err := filter(sched, pod, names)
		d := time.Since(t)
		if err != nil {
			fail("speed filter: %v", err)
		}
		times = append(times, float64(d.Nanoseconds())/1e6)
		if res.NodeNames != nil && len(*res.NodeNames) == 1 {
			chosen = (*res.NodeNames)[0]
			reset(context.Background(), sched, pod, len(held))
		}
	}
	sort.Float64s(times)
	return map[string]any{"best_ms": times[0], "median_ms": times[len(times)/2], "node": chosen}
}

// klogCapture receives HAMi's log output: discarded, except while capturing
// at verbosity 4, when scoreNode's "NodeFitPod" lines carry each fitting
// node's score.
type klogCapture struct {
	mu    sync.Mutex
	on    bool
	buf   bytes.Buffer
	flags *flag.FlagSet
}

var logs = newKlogCapture()

func newKlogCapture() *klogCapture {
	c := &klogCapture{flags: flag.NewFlagSet("klog", flag.ContinueOnError)}
	klog.InitFlags(c.flags)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false",
		"stderrthreshold": "FATAL", "skip_headers": "true", "v": "0"} {
		if err := c.flags.Set(k, v); err != nil {
			fail("klog flag %s: %v", k, err)
		}
	}
	klog.SetOutput(c)
	return c
}

func (c *klogCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		c.buf.Write(p)
	}
	return len(p), nil
}

func (c *klogCapture) capture(on bool) {
	klog.Flush()
	c.mu.Lock()
	c.on = on
	c.buf.Reset()
	c.mu.Unlock()
	v := "0"
	if on {
		v = "4"
	}
	if err := c.flags.Set("v", v); err != nil {
		fail("klog -v: %v", err)
	}
}

var nodeFitPod = regexp.MustCompile(`"NodeFitPod" pod="([^"]*)" node="([^"]*)" score=(\S+)`)

// scores ends a capture and returns the scores logged for `pod`.
func (c *klogCapture) scores(pod *corev1.Pod) map[string]float32 {
	klog.Flush()
	c.mu.Lock()
	text := c.buf.String()
	c.mu.Unlock()
	c.capture(false)
	out := map[string]float32{}
	for _, m := range nodeFitPod.FindAllStringSubmatch(text, -1) {
		if m[1] != pod.Namespace+"/"+pod.Name {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 32)
		if err != nil {
			fail("score %q of %s: %v", m[3], m[2], err)
		}
		out[m[2]] = float32(v)
	}
	return out
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: hami-oracle answer|handshake|nodelock|webhook|speed=N < scenarios.jsonl")
	}
	mode := map[string]jsonlines.Mode{
		"answer":    jsonlines.Answer(answer),
		"handshake": jsonlines.Answer(handshakes),
		"nodelock":  jsonlines.Answer(nodeLock),
		"webhook":   jsonlines.Answer(webhookAnswer),
	}[os.Args[1]]
	if repeat, ok := strings.CutPrefix(os.Args[1], "speed="); ok {
		n, err := strconv.Atoi(repeat)
		if err != nil || n < 1 {
			fail("bad mode %q", os.Args[1])
		}
		mode = jsonlines.Answer(func(s *scenario) map[string]any { return speed(s, n) })
	}
	if mode == nil {
		fail("bad mode %q", os.Args[1])
	}
	// HAMi writes and reads handshake times in the process's zone; devshare's
	// side reads them in UTC.
	time.Local = time.UTC
	config.InitDefaultDevices()
	jsonlines.Serve("hami-oracle", mode)
}
