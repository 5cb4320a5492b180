// http_exchange.hpp — one HTTP(S) request of the API client on a connection
// of its own: connect, (TLS), write, read, with a timeout; a watch streams
// its body chunk by chunk. Private to lib/kube (api_client.cpp).
#ifndef DEVSHARE_KUBE_SRC_HTTP_EXCHANGE_HPP_
#define DEVSHARE_KUBE_SRC_HTTP_EXCHANGE_HPP_

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "devshare/kube/api_client.hpp"

namespace devshare::kube::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One request on a connection of its own: connect, (TLS), write, read.
// `on_chunk` set: the body is streamed to it (a watch) instead of kept.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  using Done = std::function<void(ApiResponse)>;
  using Chunk = std::function<bool(std::string_view)>;  // false: stop reading

  Exchange(asio::io_context& io, const ClusterAccess& access, ssl::context* tls,
           http::request<http::string_body> request, std::chrono::milliseconds timeout,
           Chunk on_chunk, Done done)
      : access_(access),
        resolver_(io),
        request_(std::move(request)),
        timeout_(timeout),
        on_chunk_(std::move(on_chunk)),
        done_(std::move(done)) {
    if (tls != nullptr) {
      stream_.emplace<TlsStream>(io, *tls);
    } else {
      stream_.emplace<beast::tcp_stream>(io);
    }
  }

  void Run() {
    resolver_.async_resolve(
        access_.host, access_.port,
        [self = shared_from_this()](beast::error_code ec, const tcp::resolver::results_type& r) {
          if (ec) return self->Fail("resolve", ec);
          self->Lowest().expires_after(self->timeout_);
          self->Lowest().async_connect(r, [self](beast::error_code ec2, const tcp::endpoint&) {
            if (ec2) return self->Fail("connect", ec2);
            self->Handshake();
          });
        });
  }

  void Cancel() {
    beast::error_code ignored;
    Lowest().socket().close(ignored);
  }

 private:
  beast::tcp_stream& Lowest() {
    if (auto* tls = std::get_if<TlsStream>(&stream_)) return beast::get_lowest_layer(*tls);
    return std::get<beast::tcp_stream>(stream_);
  }

  void Handshake() {
    auto* tls = std::get_if<TlsStream>(&stream_);
    if (tls == nullptr) return Write();
    const std::string& name =
        access_.tls_server_name.empty() ? access_.host : access_.tls_server_name;
    SSL_set_tlsext_host_name(tls->native_handle(), name.c_str());
    if (!access_.insecure) {
      // Names are checked by OpenSSL against the certificate (IP or DNS).
      X509_VERIFY_PARAM* param = SSL_get0_param(tls->native_handle());
      boost::system::error_code not_an_address;
      asio::ip::make_address(name, not_an_address);
      if (!not_an_address) {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      } else {
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      }
    }
    tls->async_handshake(ssl::stream_base::client,
                         [self = shared_from_this()](beast::error_code ec) {
                           if (ec) return self->Fail("TLS handshake", ec);
                           self->Write();
                         });
  }

  template <typename F>
  void WithStream(F&& f) {
    std::visit(
        [&](auto& s) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) f(s);
        },
        stream_);
  }

  void Write() {
    Lowest().expires_after(timeout_);
    WithStream([&](auto& s) {
      http::async_write(s, request_,
                        [self = shared_from_this()](beast::error_code ec, std::size_t) {
                          if (ec) return self->Fail("write", ec);
                          self->ReadHeader();
                        });
    });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(on_chunk_ ? boost::optional<std::uint64_t>()
                                  : boost::optional<std::uint64_t>(1ULL << 30));
    WithStream([&](auto& s) {
      http::async_read_header(
          s, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->Fail("read", ec);
            const int status = static_cast<int>(self->parser_->get().result_int());
            if (self->on_chunk_ && status == 200) {
              self->chunk_body_ = [raw = self.get()](std::uint64_t, std::string_view body,
                                                     beast::error_code&) {
                if (!raw->stopped_ && !raw->on_chunk_(body)) raw->stopped_ = true;
                return body.size();
              };
              self->parser_->on_chunk_body(self->chunk_body_);
            }
            self->ReadBody();
          });
    });
  }

  void ReadBody() {
    if (parser_->is_done() || stopped_) return Finish();
    WithStream([&](auto& s) {
      http::async_read_some(s, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Fail("read", ec);
                              self->ReadBody();
                            });
    });
  }

  void Finish() {
    auto& response = parser_->get();
    ApiResponse r{static_cast<int>(response.result_int()),
                  std::move(response.body()),
                  {},
                  std::string(response[http::field::retry_after])};
    Cancel();
    Done done = std::move(done_);
    if (done) done(std::move(r));
  }

  void Fail(const char* step, beast::error_code ec) {
    Done done = std::move(done_);
    if (done) done(ApiResponse{0, {}, fmt::format("{}: {}", step, ec.message()), {}});
  }

  const ClusterAccess& access_;
  tcp::resolver resolver_;
  std::variant<std::monostate, beast::tcp_stream, TlsStream> stream_;
  http::request<http::string_body> request_;
  std::chrono::milliseconds timeout_;
  Chunk on_chunk_;
  Done done_;
  beast::flat_buffer buffer_;
  std::function<std::size_t(std::uint64_t, std::string_view, beast::error_code&)> chunk_body_;
  std::optional<http::response_parser<http::string_body>> parser_;
  bool stopped_ = false;
};

}  // namespace devshare::kube::detail

#endif  // DEVSHARE_KUBE_SRC_HTTP_EXCHANGE_HPP_
