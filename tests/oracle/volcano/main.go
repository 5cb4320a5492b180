// Command volcano-oracle answers devshare's Volcano oracle scenarios with
// Volcano's own code (pkg/scheduler/api/devices/nvidia/vgpu at ed72c7c8).
//
//	volcano-oracle register < scenarios.jsonl > results.jsonl
//	volcano-oracle fit < scenarios.jsonl > results.jsonl
//
// register: each scenario is {"id", "register": "<volcano.sh/node-vgpu-register
// value>"}; the answer is the devices vgpu.NewGPUDevices registers for a node
// carrying that value (and allocatable vGPU resources), in index order, or
// null when it registers none, with the sharing mode it reads.
//
// fit: each scenario is {"id", "policy", "nodes": [{"name", "register"}],
// "pods": [{"uid", "node", "ids"}], "pod": {"containers": [{"name",
// "limits"}], "annotations"}}: Volcano's schedule policy, the nodes (with
// allocatable vGPU resources), the pods it placed (volcano.sh/vgpu-ids-new)
// and a pending pod. For every node, the pods on it are added to the node's
// devices (GPUDevices.AddResource), then FilterNode decides and scores under
// the policy, and Allocate (no node lock) gives the devices it assigns; the
// answer is {"id", "fit": {node: {"fits", "error", "score", "ids"}}}, "ids"
// being the volcano.sh/vgpu-ids-new value Allocate writes ("" when the pod
// does not fit).
package main

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"volcano.sh/volcano/pkg/scheduler/api/devices"
	deviceconfig "volcano.sh/volcano/pkg/scheduler/api/devices/config"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"

	"devshare.test/jsonlines"
)

type scenario struct {
	ID       int    `json:"id"`
	Register string `json:"register"`
}

type fitScenario struct {
	ID     int    `json:"id"`
	Policy string `json:"policy"`
	Nodes  []struct {
		Name     string `json:"name"`
		Register string `json:"register"`
	} `json:"nodes"`
	Pods []struct {
		UID  string `json:"uid"`
		Node string `json:"node"`
		IDs  string `json:"ids"`
	} `json:"pods"`
	Pod struct {
		Containers []struct {
			Name   string            `json:"name"`
			Limits map[string]string `json:"limits"`
		} `json:"containers"`
		Annotations map[string]string `json:"annotations"`
	} `json:"pod"`
}

type fitJSON struct {
	Fits  bool    `json:"fits"`
	Error string  `json:"error"`
	Score float64 `json:"score"`
	IDs   string  `json:"ids"`
}

type deviceJSON struct {
	Index  int    `json:"index"`
	UUID   string `json:"uuid"`
	Count  uint   `json:"count"`
	Memory uint   `json:"devmem"`
	Type   string `json:"type"`
	Health bool   `json:"health"`
}

func fail(format string, args ...any) { jsonlines.Fail("volcano-oracle", format, args...) }

// volcanoNode is a node registering `register`, with allocatable vGPU resources.
func volcanoNode(name, register string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			deviceconfig.VolcanoVGPURegister: register}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceName(deviceconfig.VolcanoVGPUNumber): resource.MustParse("10"),
			corev1.ResourceName(deviceconfig.VolcanoVGPUCores):  resource.MustParse("100"),
			corev1.ResourceName(deviceconfig.VolcanoVGPUMemory): resource.MustParse("16384"),
		}},
	}
}

func register(s *scenario) map[string]any {
	node := volcanoNode("node-x", s.Register)
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

func fit(s *fitScenario) map[string]any {
	vgpu.VGPUEnable = true
	vgpu.NodeLockEnable = false
	vgpu.SchedulePolicy = s.Policy
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default", UID: "uid-pending",
		Annotations: s.Pod.Annotations}}
	for _, c := range s.Pod.Containers {
		limits := corev1.ResourceList{}
		for k, v := range c.Limits {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				fail("scenario %d: container %s: %s: %v", s.ID, c.Name, k, err)
			}
			limits[corev1.ResourceName(k)] = q
		}
		pod.Spec.Containers = append(pod.Spec.Containers,
			corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Limits: limits}})
	}
	answers := map[string]fitJSON{}
	for _, n := range s.Nodes {
		gs := vgpu.NewGPUDevices(n.Name, volcanoNode(n.Name, n.Register))
		if gs == nil {
			answers[n.Name] = fitJSON{Error: "node registers no devices"}
			continue
		}
		for _, held := range s.Pods {
			if held.Node != n.Name {
				continue
			}
			gs.AddResource(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: held.UID, Namespace: "default",
				UID: types.UID(held.UID), Annotations: map[string]string{vgpu.AssignedIDsAnnotations: held.IDs}}})
		}
		code, _, err := gs.FilterNode(pod, s.Policy)
		answer := fitJSON{Fits: code == devices.Success}
		if err != nil {
			answer.Error = err.Error()
		}
		if answer.Fits {
			answer.Score = gs.ScoreNode(pod, s.Policy)
			reservation, err := gs.Allocate(nil, pod)
			if err != nil || reservation == nil {
				fail("scenario %d: node %s: FilterNode fits but Allocate says %v", s.ID, n.Name, err)
			}
			answer.IDs = reservation.Annotations[vgpu.AssignedIDsAnnotations]
		}
		answers[n.Name] = answer
	}
	return map[string]any{"id": s.ID, "fit": answers}
}

func main() {
	jsonlines.QuietKlog()
	jsonlines.ServeMode("volcano-oracle", map[string]jsonlines.Mode{
		"register": jsonlines.Answer(register),
		"fit":      jsonlines.Answer(fit),
	})
}
