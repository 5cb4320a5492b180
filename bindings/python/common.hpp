// Helpers shared by the sources of the private extension devshare._devshare:
// core errors as Python exceptions, the arguments several bindings share, and
// the dict-compatible interface of the typed results that replaced dicts.
//
// Internal to the extension; every name has hidden visibility.
#ifndef DEVSHARE_BINDINGS_PYTHON_COMMON_HPP_
#define DEVSHARE_BINDINGS_PYTHON_COMMON_HPP_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "devshare/filter.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"
#include "devshare/vendor.hpp"

namespace devshare::python {

namespace py = pybind11;

// Creates devshare.DecodeError, devshare.ConfigError and
// devshare.UnsupportedError on `m`. Called once, first, by the module init.
void AddExceptions(py::module_& m);

// Raises the Python exception for `status`: DecodeError for kMalformed,
// ConfigError for kInvalidConfig, KeyError for kNotFound, RuntimeError for
// kUnavailable, UnsupportedError for kUnsupported, ValueError otherwise. REQUIRES: !status.ok(),
// the GIL held.
[[noreturn]] void Raise(const Status& status);

// The value of `r`, or raises its error (see Raise).
template <typename T>
T Unwrap(Result<T> r) {
  if (!r.ok()) Raise(r.status());
  return std::move(r).value();
}

// Raises when `s` is an error (see Raise).
inline void Check(const Status& s) {
  if (!s.ok()) Raise(s);
}

// The device config parsed from YAML text, or the default one for nullopt.
// Raises ConfigError for an invalid config.
DeviceConfig ConfigFrom(const std::optional<std::string>& yaml);

// A fgd workload class as the package passes it: (weight, gpus, gpu_milli,
// cpu_milli, memory_mib).
using WorkloadTuple = std::tuple<double, std::int32_t, std::int32_t, std::int64_t, std::int64_t>;

// The scheduler options the package's `scheduler` config section gives.
// Raises ValueError for unknown hami_exact rows.
FilterOptions FilterOptionsFrom(const std::string& node_policy, const std::string& gpu_policy,
                                const std::vector<WorkloadTuple>& workload, bool reasons,
                                const std::string& hami_exact);

// The map as a dict, in key order.
py::dict ToDict(const StringMap& m);

// "Type(name=repr(value), ...)" with Python's repr of each value.
std::string Repr(std::string_view type,
                 std::initializer_list<std::pair<std::string_view, py::object>> fields);

// Gives a typed result the interface of the dict it replaces: `to_dict()`
// (built by `to_dict`, the old dict exactly), `==` with that dict or with
// another result of the type (on their dicts), and the read-only mapping
// protocol on the dict: `r[key]`, `key in r`, `keys()`, `values()`,
// `items()`, `get()`, iteration and len(). Scripts written for the dict keep
// working; new code reads the attributes. The class keeps its own __repr__.
template <typename T, typename... Options, typename ToDictFn>
void DictCompatible(py::class_<T, Options...>& cls, ToDictFn to_dict, const char* to_dict_doc) {
  cls.def(
      "to_dict", [to_dict](const T& self) -> py::dict { return to_dict(self); }, to_dict_doc);
  cls.def(
      "__eq__",
      [to_dict](const T& self, const py::object& other) -> py::object {
        if (py::isinstance<T>(other)) {
          return py::bool_(to_dict(self).equal(to_dict(other.cast<const T&>())));
        }
        if (py::isinstance<py::dict>(other)) return py::bool_(to_dict(self).equal(other));
        return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      },
      py::is_operator());
  cls.def("__getitem__", [to_dict](const T& self, const py::object& key) -> py::object {
    return to_dict(self)[key];
  });
  cls.def("__contains__",
          [to_dict](const T& self, const py::object& key) { return to_dict(self).contains(key); });
  cls.def("__iter__", [to_dict](const T& self) { return py::iter(to_dict(self)); });
  cls.def("__len__", [to_dict](const T& self) { return py::len(to_dict(self)); });
  cls.def("keys", [to_dict](const T& self) { return to_dict(self).attr("keys")(); });
  cls.def("values", [to_dict](const T& self) { return to_dict(self).attr("values")(); });
  cls.def("items", [to_dict](const T& self) { return to_dict(self).attr("items")(); });
  cls.def(
      "get",
      [to_dict](const T& self, const py::object& key, const py::object& fallback) {
        return to_dict(self).attr("get")(key, fallback);
      },
      py::arg("key"), py::arg("default") = py::none());
}

// `to_dict()` (built by `to_dict`) and equality of two values of the type on
// their dicts, for the typed values that never were dicts (no mapping
// protocol, no equality with a dict).
template <typename T, typename... Options, typename ToDictFn>
void ValueType(py::class_<T, Options...>& cls, ToDictFn to_dict, const char* to_dict_doc) {
  cls.def(
      "to_dict", [to_dict](const T& self) -> py::dict { return to_dict(self); }, to_dict_doc);
  cls.def(
      "__eq__",
      [to_dict](const T& self, const py::object& other) -> py::object {
        if (!py::isinstance<T>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return py::bool_(to_dict(self).equal(to_dict(other.cast<const T&>())));
      },
      py::is_operator());
}

// A pod's devices as Python sees them: vendor -> per-container lists of
// ContainerDevice.
py::object DevicesToPython(const PodDevices& devices);

// The parts of the module, each defined in its own source. Called in this
// order by the module init (later parts use the classes of earlier ones).
void BindPreemption(py::module_& m);  // preemption.cpp: PlanPreemption's results
void BindProtocols(py::module_& m);   // protocols.cpp: handshake, lock, lease
void BindEngine(py::module_& m);      // engine.cpp: the Engine and its commands
void BindSimulation(py::module_& m);  // simulation.cpp: scenarios and results
void BindDra(py::module_& m);         // dra.cpp: DRA objects, allocation, selectors

}  // namespace devshare::python

#endif  // DEVSHARE_BINDINGS_PYTHON_COMMON_HPP_
