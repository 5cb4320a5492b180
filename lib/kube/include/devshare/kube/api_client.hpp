// devshare/kube/api_client.hpp — the Kubernetes API client of `devshare
// serve`: requests with client-go's throttling and retries, and list+watch
// (spec/kubernetes-wire.md §4), to the cluster devshare/kube/cluster_access.hpp
// finds.
//
// Contract:
//   - Requests wait for a token bucket (QPS/burst, client-go's 5/10 by
//     default), first come first served; watches are not throttled.
//   - Requests go on at most `max_connections` HTTP/1.1 connections, kept
//     alive while idle for up to `idle_timeout` (client-go's 90 s); a request
//     that finds none free waits for one, first come first served, instead of
//     opening more. A new TLS connection resumes the last session. A request
//     whose reused connection the server had closed goes again on a new one,
//     when no byte of an answer came. Each watch has a connection of its own.
//   - A 429 or 5xx carrying Retry-After is retried after that many seconds,
//     at most 10 times, as client-go does; any other status is the caller's.
//   - With an exec credential command (ClusterAccess::exec) its credential
//     is fetched at Start, again once it has expired (the command blocks
//     the client while it runs), and once more when the server answers a
//     request 401 (which is then sent again).
//   - Watch lists (paginated), then watches from the list's resourceVersion
//     with bookmarks; a watch that ends is resumed from the last version
//     seen; a 410 (an ERROR event or an HTTP 410) relists and replaces the
//     cache, with DELETED events for the objects that vanished; a failing
//     connection backs off 800 ms doubling to 30 s.
//   - Callbacks (`done`, `on_event`, `on_synced`) run on the io_context's
//     thread, never from within the call that registers them.
//   - Stop() and the destructor: a request still queued (for a token, or
//     for its Retry-After) is dropped and its `done` never called; one that
//     has left the queue (waiting for a connection, or on the wire)
//     completes and its `done` is called, after Stop()
//     and even after the ApiClient is destroyed (the client's state lives
//     until then), so what a `done` uses it must keep alive itself. A watch
//     calls neither `on_event` nor `on_synced` once Stop() has returned;
//     there is no other way to end a watch.
//   - `metrics` (may be null) is borrowed: it must outlive the ApiClient
//     object. Requests that complete after the destructor are not counted.
//
// Thread-safety: everything runs on the io_context's thread.
#ifndef DEVSHARE_KUBE_API_CLIENT_HPP_
#define DEVSHARE_KUBE_API_CLIENT_HPP_

#include <boost/asio/io_context.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "devshare/kube/cluster_access.hpp"
#include "devshare/kube/metrics.hpp"
#include "devshare/status.hpp"

namespace devshare::kube {

struct ApiResponse {
  int status = 0;  // HTTP status; 0 when the request never got an answer
  std::string body;
  std::string error;        // the transport error when status is 0
  std::string retry_after;  // the Retry-After header, if any
};
using ApiCallback = std::function<void(ApiResponse)>;

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED
  boost::json::value object;
};

struct ApiClientOptions {
  double qps = 5;
  int burst = 10;
  int max_retries = 10;
  std::chrono::milliseconds timeout{30000};  // per request (not watches)
  std::size_t max_connections = 32;
  std::chrono::seconds idle_timeout{90};
};

// The target of one page (500 objects) of the list at `path` (for example
// "/api/v1/pods"), with a field selector and the continue token of the page
// before when not empty, URL-encoded.
std::string ListTarget(std::string_view path, std::string_view field_selector,
                       std::string_view continue_token);

class ApiClient {
 public:
  ApiClient(boost::asio::io_context& io, ClusterAccess access, ApiClientOptions options,
            Metrics* metrics);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // Fetches an exec credential, checks the TLS material. Errors:
  // kInvalidConfig; RunExecPlugin's.
  Status Start();

  // One request. `verb` names it in the metrics (for example "patch-node").
  // `done` is called at most once: exactly once with the answer (after
  // retries; status 0 with `error` for a transport failure or a credential
  // the exec plugin could not give), unless Stop() drops the request first
  // (see above).
  void Call(std::string verb, std::string method, std::string target, std::string content_type,
            std::string body, ApiCallback done);

  // A GET of a list answered as metadata only (a PartialObjectMetadataList:
  // each object's name, namespace, UID, resourceVersion, labels and
  // annotations), through the same bucket and retries as Call, and with
  // Call's rule for `done`.
  void GetMetadata(std::string verb, std::string target, ApiCallback done);

  // Lists and watches `path` (for example "/api/v1/pods") with an optional
  // field selector; `on_event` gets every change, `on_synced` (may be empty)
  // is called after each complete list (the cache is whole), so again after
  // each relist. The watch runs until Stop(); called after Stop(), it never
  // starts.
  void Watch(std::string path, std::string field_selector,
             std::function<void(const WatchEvent&)> on_event, std::function<void()> on_synced);

  ApiConnectionStats connection_stats() const;

  // Ends the watches (their connections are closed), drops the queued
  // requests and closes the idle connections; requests on the wire complete
  // (see above). Idempotent; the destructor calls it.
  void Stop();

  struct Impl;  // opaque

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_API_CLIENT_HPP_
