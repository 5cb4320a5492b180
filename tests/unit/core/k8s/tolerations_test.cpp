// Kubernetes' toleration rule (src/k8s/tolerations.hpp), the one pod
// placement and the DRA allocator share: each row checked on core/v1's
// Toleration/Taint and on resource.k8s.io's DeviceToleration/DeviceTaint.
#include "src/k8s/tolerations.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/objects.hpp"

namespace {

using devshare::Taint;
using devshare::Toleration;
using devshare::dra::DeviceTaint;
using devshare::dra::DeviceToleration;
using devshare::internal::TaintRepels;
using devshare::internal::ToleratesTaint;

struct Row {
  Toleration toleration;  // key, op, value, effect
  Taint taint;            // key, value, effect
  bool tolerates;
};

DeviceToleration AsDevice(const Toleration& t) {
  DeviceToleration d;
  d.key = t.key;
  d.op = t.op;
  d.value = t.value;
  d.effect = t.effect;
  return d;
}

DeviceTaint AsDevice(const Taint& t) { return DeviceTaint{t.key, t.value, t.effect}; }

}  // namespace

TEST_CASE("ToleratesTaint: key, operator, value and effect as Kubernetes matches them") {
  const Row rows[] = {
      {{"gpu", "Equal", "a", "NoSchedule"}, {"gpu", "a", "NoSchedule"}, true},
      {{"gpu", "", "a", "NoSchedule"}, {"gpu", "a", "NoSchedule"}, true},  // no op: Equal
      {{"gpu", "Equal", "b", "NoSchedule"}, {"gpu", "a", "NoSchedule"}, false},
      {{"gpu", "Exists", "", "NoSchedule"}, {"gpu", "a", "NoSchedule"}, true},
      {{"gpu", "Exists", "ignored", ""}, {"gpu", "a", "NoExecute"}, true},
      {{"", "Exists", "", ""}, {"anything", "x", "NoExecute"}, true},  // tolerates every taint
      {{"", "Equal", "", ""}, {"gpu", "", "NoSchedule"}, true},        // empty key: any key
      {{"other", "Exists", "", ""}, {"gpu", "a", "NoSchedule"}, false},
      {{"gpu", "Exists", "", "NoExecute"}, {"gpu", "a", "NoSchedule"}, false},
      {{"gpu", "Lt", "a", ""}, {"gpu", "a", "NoSchedule"}, false},     // unknown operator
      {{"gpu", "equal", "a", ""}, {"gpu", "a", "NoSchedule"}, false},  // case matters
  };
  for (const Row& row : rows) {
    CAPTURE(row.toleration.key);
    CAPTURE(row.toleration.op);
    CAPTURE(row.taint.effect);
    CHECK(ToleratesTaint(row.toleration, row.taint) == row.tolerates);
    CHECK(ToleratesTaint(AsDevice(row.toleration), AsDevice(row.taint)) == row.tolerates);
    CHECK(devshare::Tolerates(row.toleration, row.taint) == row.tolerates);
  }
}

TEST_CASE("TaintRepels: only NoSchedule and NoExecute keep away, unless tolerated") {
  const std::vector<Toleration> none;
  const std::vector<Toleration> gpu = {{"gpu", "Exists", "", ""}};
  CHECK(TaintRepels(Taint{"gpu", "a", "NoSchedule"}, none));
  CHECK(TaintRepels(Taint{"gpu", "a", "NoExecute"}, none));
  CHECK_FALSE(TaintRepels(Taint{"gpu", "a", "PreferNoSchedule"}, none));
  CHECK_FALSE(TaintRepels(Taint{"gpu", "a", "NoSchedule"}, gpu));
  CHECK(TaintRepels(Taint{"other", "a", "NoSchedule"}, gpu));

  const std::vector<DeviceToleration> device_none;
  std::vector<DeviceToleration> device_gpu(1);
  device_gpu[0].key = "gpu";
  device_gpu[0].op = "Exists";
  CHECK_FALSE(TaintRepels(DeviceTaint{"gpu", "a", "None"}, device_none));
  CHECK(TaintRepels(DeviceTaint{"gpu", "a", "NoExecute"}, device_none));
  CHECK_FALSE(TaintRepels(DeviceTaint{"gpu", "a", "NoExecute"}, device_gpu));
}
