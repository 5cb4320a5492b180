// The protocol scenarios: HAMi's node handshake, its node lock and its
// mutating webhook, each answered by HAMi's own code.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/Project-HAMi/HAMi/pkg/device"
	"github.com/Project-HAMi/HAMi/pkg/scheduler"
	"github.com/Project-HAMi/HAMi/pkg/scheduler/config"
	"github.com/Project-HAMi/HAMi/pkg/util"
	"github.com/Project-HAMi/HAMi/pkg/util/client"
	"github.com/Project-HAMi/HAMi/pkg/util/nodelock"
)

// A handshake scenario: one node through a sequence of registration passes
// of HAMi's own loop (RegisterFromNodeAnnotations), each step setting the
// node's handshake, register annotation and allocatable GPU count first.
type handshakeScenario struct {
	ID    int `json:"id"`
	Steps []struct {
		// "keep" (what the previous pass left), "absent", "requesting" (with
		// Age seconds before now), "bare", "garbage", "reported", "deleted".
		Handshake   string `json:"handshake"`
		Age         int64  `json:"age"`
		Registered  string `json:"registered"`  // "keep", "absent" or the value
		Allocatable int64  `json:"allocatable"` // -1: keep
	} `json:"steps"`
}

const handshakeNode = "node-x"

// handshakeValue is the handshake a step sets, at `now` (UTC, HAMi's layout).
func handshakeValue(kind string, age int64, now time.Time) (string, bool) {
	switch kind {
	case "requesting":
		return "Requesting_" + now.Add(-time.Duration(age)*time.Second).Format(time.DateTime), true
	case "bare":
		return "Requesting", true
	case "garbage":
		return "Requesting_garbage", true
	case "reported":
		return "Reported " + now.Add(-time.Duration(age)*time.Second).String(), true
	case "deleted":
		return "Deleted_" + now.Format(time.DateTime), true
	}
	return "", false
}

// triggerNode registers at once (valid devices, a fresh handshake): its
// creation makes HAMi run one registration pass, and its appearance in the
// node cache tells that the pass ran.
func triggerNode(k int, now time.Time) *corev1.Node {
	annos := map[string]string{registerKey: `[{"id":"GPU-trigger-` + strconv.Itoa(k) +
		`","count":10,"devmem":16384,"devcore":100,"type":"NVIDIA","health":true}]`}
	for _, key := range util.HandshakeAnnos {
		annos[key] = "Requesting_" + now.Format(time.DateTime)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "trigger-" + strconv.Itoa(k), Annotations: annos},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(10, resource.DecimalSI)}}}
}

func registered(h *hamiScheduler, name string) bool {
	nodes, _ := h.ListNodes()
	for _, n := range nodes {
		if n.ID == name {
			return true
		}
	}
	return false
}

// handshakes runs one handshake scenario through HAMi and reports, per step,
// what was set, when, whether the node is in HAMi's node cache after the
// pass, and the handshake value the pass left.
func handshakes(s *handshakeScenario) map[string]any {
	ctx := context.Background()
	now := time.Now().UTC()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: handshakeNode, Annotations: map[string]string{}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}}}
	// Every vendor but NVIDIA sees a fresh request, so their passes write nothing.
	for vendor, key := range util.HandshakeAnnos {
		if vendor != nvidia {
			node.Annotations[key] = "Requesting_" + now.Format(time.DateTime)
		}
	}
	apply := func(k int, n *corev1.Node, t time.Time) map[string]any {
		step := s.Steps[k]
		set := map[string]any{"now": t.Unix()}
		if v, ok := handshakeValue(step.Handshake, step.Age, t); ok {
			n.Annotations[handshakeKey] = v
		} else if step.Handshake == "absent" {
			delete(n.Annotations, handshakeKey)
		}
		switch step.Registered {
		case "keep":
		case "absent":
			delete(n.Annotations, registerKey)
		default:
			n.Annotations[registerKey] = step.Registered
		}
		if step.Allocatable >= 0 {
			n.Status.Allocatable["nvidia.com/gpu"] = *resource.NewQuantity(step.Allocatable, resource.DecimalSI)
		}
		if v, ok := n.Annotations[handshakeKey]; ok {
			set["handshake"] = v
		} else {
			set["handshake"] = nil
		}
		return set
	}
	steps := []map[string]any{}
	step0 := apply(0, node, now)
	trigger := triggerNode(0, now)
	cs := fake.NewSimpleClientset(node, trigger)
	watching := watchSignal(cs, "pods", "nodes", "resourcequotas")
	client.KubeClient = cs
	h := &hamiScheduler{Scheduler: scheduler.NewScheduler(), nodes: []*corev1.Node{node, trigger},
		done: make(chan struct{})}
	if err := h.Start(); err != nil {
		fail("handshake %d: start: %v", s.ID, err)
	}
	<-watching
	go func() {
		defer close(h.done)
		h.RegisterFromNodeAnnotations()
	}()
	defer h.stop()
	for k := range s.Steps {
		set := step0
		if k > 0 {
			t := time.Now().UTC()
			current, err := cs.CoreV1().Nodes().Get(ctx, handshakeNode, metav1.GetOptions{})
			if err != nil {
				fail("handshake %d: get node: %v", s.ID, err)
			}
			current = current.DeepCopy()
			set = apply(k, current, t)
			if _, err := cs.CoreV1().Nodes().Update(ctx, current, metav1.UpdateOptions{}); err != nil {
				fail("handshake %d: update node: %v", s.ID, err)
			}
			trigger := triggerNode(k, t)
			h.nodes = append(h.nodes, trigger)
			if _, err := cs.CoreV1().Nodes().Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
				fail("handshake %d: create trigger: %v", s.ID, err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for !registered(h, "trigger-"+strconv.Itoa(k)) {
			if time.Now().After(deadline) {
				fail("handshake %d step %d: no registration pass within 10 s", s.ID, k)
			}
			time.Sleep(time.Millisecond)
		}
		h.InspectAllNodesUsage() // returns once the pass has released the scheduler's lock
		after, err := cs.CoreV1().Nodes().Get(ctx, handshakeNode, metav1.GetOptions{})
		if err != nil {
			fail("handshake %d: get node: %v", s.ID, err)
		}
		set["end"] = time.Now().Unix() // HAMi read its clock between "now" and "end"
		set["usable"] = registered(h, handshakeNode)
		if v, ok := after.Annotations[handshakeKey]; ok {
			set["after"] = v
		} else {
			set["after"] = nil
		}
		steps = append(steps, set)
	}
	return map[string]any{"id": s.ID, "steps": steps}
}

// A node-lock scenario: a node whose hami.io/mutex.lock holds `Lock` (a
// value with "{time}" standing for the instant Age seconds before now, or
// absent), the holder pod present or not (with its bind phase and the age of
// its bind time), and a pod that calls HAMi's nodelock.LockNode.
type nodeLockScenario struct {
	ID        int    `json:"id"`
	Lock      string `json:"lock"` // "" for no lock
	Age       int64  `json:"age"`
	Holder    string `json:"holder"` // "namespace/name" of a pod that exists, or ""
	BindPhase string `json:"bind_phase"`
	BindAge   int64  `json:"bind_age"`
	PodNS     string `json:"pod_namespace"`
	PodName   string `json:"pod_name"`
}

// nodeLock runs nodelock.LockNode on the scenario and reports when (now,
// end), what the lock was, whether LockNode succeeded, and the lock after.
func nodeLock(s *nodeLockScenario) map[string]any {
	ctx := context.Background()
	now := time.Now().UTC()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x", Annotations: map[string]string{}}}
	out := map[string]any{"id": s.ID, "now": now.Unix(), "lock": nil}
	if s.Lock != "" {
		value := strings.ReplaceAll(s.Lock, "{time}", now.Add(-time.Duration(s.Age)*time.Second).Format(time.RFC3339))
		node.Annotations[nodelock.NodeLockKey] = value
		out["lock"] = value
	}
	objs := []runtime.Object{node}
	if s.Holder != "" {
		ns, name, _ := strings.Cut(s.Holder, "/")
		holder := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{}}}
		if s.BindPhase != "" {
			holder.Annotations[util.DeviceBindPhase] = s.BindPhase
			holder.Annotations[util.BindTimeAnnotations] = strconv.FormatInt(now.Unix()-s.BindAge, 10)
		}
		objs = append(objs, holder)
		out["bind_time"] = now.Unix() - s.BindAge
	}
	client.KubeClient = fake.NewSimpleClientset(objs...)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.PodName, Namespace: s.PodNS}}
	err := nodelock.LockNode("node-x", "NVIDIA", pod)
	out["end"] = time.Now().UTC().Unix()
	out["acquired"] = err == nil
	after, gerr := client.KubeClient.CoreV1().Nodes().Get(ctx, "node-x", metav1.GetOptions{})
	if gerr != nil {
		fail("node lock %d: get node: %v", s.ID, gerr)
	}
	if v, ok := after.Annotations[nodelock.NodeLockKey]; ok {
		out["after"] = v
	} else {
		out["after"] = nil
	}
	return out
}

// A webhook scenario: a Pod (its JSON) sent to HAMi's mutating webhook as
// an AdmissionReview CREATE, with the --scheduler-name the chart gives it.
type webhookScenario struct {
	ID            int             `json:"id"`
	SchedulerName string          `json:"scheduler_name"`
	Pod           json.RawMessage `json:"pod"`
}

var hamiWebhook *admission.Webhook

// webhookAnswer runs HAMi's webhook handler on the scenario's pod and
// reports allowed, the denial's code and message, and the pod with the
// response's JSON Patch applied (null when denied or errored).
func webhookAnswer(s *webhookScenario) map[string]any {
	if hamiWebhook == nil {
		wh, err := scheduler.NewWebHook()
		if err != nil {
			fail("webhook: %v", err)
		}
		hamiWebhook = wh
	}
	config.SchedulerName = s.SchedulerName
	config.ForceOverwriteDefaultScheduler = true
	device.GetLocalCache().Quotas = map[string]*device.DeviceQuota{}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       types.UID(fmt.Sprintf("uid-%d", s.ID)),
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "default", Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: s.Pod},
	}}
	resp := hamiWebhook.Handler.Handle(context.Background(), req)
	out := map[string]any{"id": s.ID, "allowed": resp.Allowed, "code": 0, "message": "", "pod": nil}
	if resp.Result != nil {
		out["code"], out["message"] = resp.Result.Code, resp.Result.Message
	}
	if !resp.Allowed {
		return out
	}
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		fail("webhook %d: patch: %v", s.ID, err)
	}
	decoded, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		fail("webhook %d: patch: %v", s.ID, err)
	}
	patched, err := decoded.Apply(s.Pod)
	if err != nil {
		fail("webhook %d: apply: %v", s.ID, err)
	}
	out["pod"] = json.RawMessage(patched)
	return out
}
