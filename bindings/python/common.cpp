#include "common.hpp"

#include <pybind11/stl.h>

#include "devshare/hami_exact.hpp"

namespace devshare::python {

namespace {

// The exception types, created by AddExceptions.
PyObject* g_decode_error = nullptr;
PyObject* g_config_error = nullptr;
PyObject* g_unsupported_error = nullptr;

}  // namespace

void AddExceptions(py::module_& m) {
  g_decode_error = PyErr_NewExceptionWithDoc("devshare.DecodeError",
                                             "An annotation or object that does not decode.",
                                             PyExc_ValueError, nullptr);
  g_config_error = PyErr_NewExceptionWithDoc("devshare.ConfigError",
                                             "An invalid device config or scheduler option.",
                                             PyExc_ValueError, nullptr);
  m.attr("DecodeError") = py::handle(g_decode_error);
  g_unsupported_error = PyErr_NewExceptionWithDoc(
      "devshare.UnsupportedError",
      "Valid input devshare does not evaluate (a CEL selector beyond its subset), named.",
      PyExc_ValueError, nullptr);
  m.attr("ConfigError") = py::handle(g_config_error);
  m.attr("UnsupportedError") = py::handle(g_unsupported_error);
}

void Raise(const Status& status) {
  PyObject* type = PyExc_ValueError;
  switch (status.code()) {
    case StatusCode::kMalformed:
      type = g_decode_error;
      break;
    case StatusCode::kInvalidConfig:
      type = g_config_error;
      break;
    case StatusCode::kNotFound:
      type = PyExc_KeyError;
      break;
    case StatusCode::kUnavailable:
      type = PyExc_RuntimeError;
      break;
    case StatusCode::kUnsupported:
      type = g_unsupported_error;
      break;
    default:
      break;
  }
  PyErr_SetString(type, std::string(status.message()).c_str());
  throw py::error_already_set();
}

DeviceConfig ConfigFrom(const std::optional<std::string>& yaml) {
  return yaml ? Unwrap(ParseDeviceConfig(*yaml)) : DefaultDeviceConfig();
}

FilterOptions FilterOptionsFrom(const std::string& node_policy, const std::string& gpu_policy,
                                const std::vector<WorkloadTuple>& workload, bool reasons,
                                const std::string& hami_exact) {
  FilterOptions o;
  o.reasons = reasons;
  o.hami_exact = Unwrap(ParseHamiExact(hami_exact));
  o.node_policy = node_policy;
  o.gpu_policy = gpu_policy;
  for (const auto& [weight, gpus, gpu_milli, cpu_milli, memory_mib] : workload) {
    o.workload.push_back({weight, gpus, gpu_milli, cpu_milli, memory_mib});
  }
  return o;
}

py::dict ToDict(const StringMap& m) {
  py::dict d;
  for (const auto& [k, v] : m.entries()) d[py::str(k)] = v;
  return d;
}

std::string Repr(std::string_view type,
                 std::initializer_list<std::pair<std::string_view, py::object>> fields) {
  std::string out(type);
  out += '(';
  bool first = true;
  for (const auto& [name, value] : fields) {
    if (!first) out += ", ";
    first = false;
    out += name;
    out += '=';
    out += py::repr(value).cast<std::string>();
  }
  out += ')';
  return out;
}

py::object DevicesToPython(const PodDevices& devices) {
  py::dict out;
  for (const auto& [vendor, containers] : devices) out[py::str(vendor)] = py::cast(containers);
  return out;
}

}  // namespace devshare::python
