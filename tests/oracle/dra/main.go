// Command dra-oracle answers devshare's DRA scenarios with Kubernetes' own
// structured allocator (k8s.io/dynamic-resource-allocation v0.37.1, package
// structured) and its CEL selector evaluator (package cel), called as
// kube-scheduler v1.37.1 calls them with its default feature gates.
//
//	dra-oracle < scenarios.jsonl > answers.jsonl
//
// One JSON scenario a line in, one JSON answer a line out, in the same order.
// The schema is in README.md beside this file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"devshare.test/jsonlines"
)

// features is structured.Features as kube-scheduler v1.37.1 builds it
// (dynamicresources.AllocatorFeatures) from its default feature gates
// (pkg/features/kube_features.go, emulation version 1.37, default
// --min-compatibility-version 1.36). See README.md.
var features = structured.Features{
	AdminAccess:             true,  // DRAAdminAccess: GA 1.36, locked on
	CompatibilityGroups:     false, // DRADeviceCompatibilityGroups: alpha 1.37
	ConsumableCapacity:      true,  // DRAConsumableCapacity: beta 1.36, on
	DerivedAttributes:       false, // DRADerivedAttributes: alpha 1.37
	DeviceBindingAndStatus:  true,  // DRADeviceBindingConditions (beta 1.36, on) && DRAResourceClaimDeviceStatus (GA 1.37)
	DeviceTaints:            true,  // DRADeviceTaints: GA 1.37
	FractionalCapacityRange: false, // DRAFractionalCapacityRange: on only with --min-compatibility-version >= 1.37
	ListTypeAttributes:      false, // DRAListTypeAttributes: alpha 1.36
	OptionalNodeOperations:  false, // DRAOptionalNodeOperations: alpha 1.37
	PartitionableDevices:    true,  // DRAPartitionableDevices: beta 1.36, on
	PrioritizedList:         true,  // DRAPrioritizedList: GA 1.37, locked on
}

// celFeatures are the compiler features of the scheduler's CEL cache
// (dynamicresources.New: cel.NewCache(10, cel.Features{...})).
var celFeatures = cel.Features{
	EnableConsumableCapacity: features.ConsumableCapacity,
	EnableListTypeAttributes: features.ListTypeAttributes,
}

// allocateTimeout bounds one Allocate call, a guard against a scenario whose
// exhaustive search runs away (kube-scheduler's own bound, filterTimeout, is
// 10 s). The generator keeps searches far below it; an answer whose error says
// "filter operation aborted" is not deterministic and dra_selfcheck.py fails.
const allocateTimeout = 60 * time.Second

// shareIDPlaceholder replaces every shareID of a result: the allocator draws
// them as random UUIDs.
const shareIDPlaceholder = "*"

type scenario struct {
	ID        json.RawMessage              `json:"id"`
	Nodes     []*corev1.Node               `json:"nodes"`
	Slices    []*resourceapi.ResourceSlice `json:"slices"`
	Classes   []*resourceapi.DeviceClass   `json:"classes"`
	Claims    []*resourceapi.ResourceClaim `json:"claims"`
	Allocated []*resourceapi.ResourceClaim `json:"allocated"`
}

type nodeAnswer struct {
	Node     string                         `json:"node"`
	Feasible bool                           `json:"feasible"`
	Error    *string                        `json:"error"`
	NodeOnly bool                           `json:"node_only"`
	Results  []resourceapi.AllocationResult `json:"results"`
}

type celAnswer struct {
	Expression string  `json:"expression"`
	Driver     string  `json:"driver"`
	Pool       string  `json:"pool"`
	Slice      string  `json:"slice"`
	Device     string  `json:"device"`
	Matches    *bool   `json:"matches"`
	Error      *string `json:"error"`
	Stage      *string `json:"stage"`
}

type answer struct {
	ID    json.RawMessage `json:"id"`
	Nodes []nodeAnswer    `json:"nodes"`
	CEL   []celAnswer     `json:"cel"`
}

// classLister serves the scenario's DeviceClasses; a missing class is the
// NotFound error the scheduler's informer-backed lister returns.
type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclass"), name)
}

// allocatedState is structured.AllocatedState as kube-scheduler builds it
// with DRAConsumableCapacity on (allocateddevices.go, foreachAllocatedDevice
// and GatherAllocatedState): results with admin access hold nothing, results
// with a shareID are shared allocations and add their consumed capacity,
// every other result holds its device whole.
func allocatedState(claims []*resourceapi.ResourceClaim) structured.AllocatedState {
	s := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if features.ConsumableCapacity && r.ShareID != nil {
				s.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				if r.ConsumedCapacity != nil {
					s.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				}
				continue
			}
			s.AllocatedDevices.Insert(id)
		}
	}
	return s
}

// selectors lists the distinct CEL expressions of the classes, then of the
// claims (requests, then their subrequests), in order of first appearance.
func selectors(sc *scenario) []string {
	var out []string
	seen := map[string]bool{}
	add := func(sel []resourceapi.DeviceSelector) {
		for _, s := range sel {
			if s.CEL != nil && !seen[s.CEL.Expression] {
				seen[s.CEL.Expression] = true
				out = append(out, s.CEL.Expression)
			}
		}
	}
	for _, c := range sc.Classes {
		add(c.Spec.Selectors)
	}
	for _, c := range sc.Claims {
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly != nil {
				add(r.Exactly.Selectors)
			}
			for _, s := range r.FirstAvailable {
				add(s.Selectors)
			}
		}
	}
	return out
}

// celVerdicts evaluates every selector on every device of every slice, as
// the allocator does (allocator_incubating.go, selectorsMatch).
func celVerdicts(ctx context.Context, cache *cel.Cache, sc *scenario) []celAnswer {
	out := []celAnswer{}
	for _, expression := range selectors(sc) {
		compiled := cache.GetOrCompile(expression)
		for _, slice := range sc.Slices {
			for _, device := range slice.Spec.Devices {
				a := celAnswer{
					Expression: expression,
					Driver:     slice.Spec.Driver,
					Pool:       slice.Spec.Pool.Name,
					Slice:      slice.Name,
					Device:     device.Name,
				}
				if compiled.Error != nil {
					a.Error, a.Stage = ptr.To(compiled.Error.Error()), ptr.To("compile")
				} else {
					matches, _, err := compiled.DeviceMatches(ctx, cel.Device{
						Driver:                   slice.Spec.Driver,
						AllowMultipleAllocations: device.AllowMultipleAllocations,
						Attributes:               device.Attributes,
						Capacity:                 device.Capacity,
					})
					if err != nil {
						a.Error, a.Stage = ptr.To(cel.EnhanceRuntimeError(err).Error()), ptr.To("runtime")
					} else {
						a.Matches = ptr.To(matches)
					}
				}
				out = append(out, a)
			}
		}
	}
	return out
}

func solve(ctx context.Context, cache *cel.Cache, sc *scenario) (answer, error) {
	ans := answer{ID: sc.ID, Nodes: []nodeAnswer{}}
	allocator, err := structured.NewAllocator(ctx, features, allocatedState(sc.Allocated),
		classLister(sc.Classes), sc.Slices, cache)
	if err != nil {
		return ans, fmt.Errorf("NewAllocator: %w", err)
	}
	for _, node := range sc.Nodes {
		a := nodeAnswer{Node: node.Name}
		actx, cancel := context.WithTimeout(ctx, allocateTimeout)
		results, err := allocator.Allocate(actx, node, sc.Claims)
		cancel()
		switch {
		case err != nil:
			a.Error = ptr.To(err.Error())
			a.NodeOnly = errors.Is(err, structured.ErrFailedAllocationOnNode)
		case results != nil:
			a.Feasible = true
			a.Results = results
			for i := range a.Results {
				for j := range a.Results[i].Devices.Results {
					r := &a.Results[i].Devices.Results[j]
					if r.ShareID != nil {
						r.ShareID = ptr.To(types.UID(shareIDPlaceholder))
					}
				}
			}
		}
		ans.Nodes = append(ans.Nodes, a)
	}
	ans.CEL = celVerdicts(ctx, cache, sc)
	return ans, nil
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: dra-oracle < scenarios.jsonl > answers.jsonl")
		os.Exit(2)
	}
	ctx := context.Background()
	// One cache for the whole run, as the scheduler keeps one for its life.
	cache := cel.NewCache(10, celFeatures)
	jsonlines.Serve("dra-oracle", jsonlines.TryStrict(func(sc *scenario) (answer, error) {
		return solve(ctx, cache, sc)
	}))
}
