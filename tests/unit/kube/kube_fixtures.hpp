// Fixtures of the adapter's unit tests that serve over TLS on loopback: two
// server certificates, a file writer, and an HTTPS listener's options.
#ifndef DEVSHARE_TESTS_KUBE_KUBE_FIXTURES_HPP_
#define DEVSHARE_TESTS_KUBE_KUBE_FIXTURES_HPP_

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "devshare/kube/http_server.hpp"

namespace devshare::kube::fixtures {

// Two self-signed P-256 certificates (CN cert-a, cert-b), valid for 100 years.
inline constexpr std::string_view kCertA = R"pem(-----BEGIN CERTIFICATE-----
MIIBejCCAR+gAwIBAgIUevWO1wFtiptZbCEmTPrIL6TmoqAwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1hMCAXDTI2MTEyMTIwMDAwOFoYDzIxMjYxMDI4MjAw
MDA4WjARMQ8wDQYDVQQDDAZjZXJ0LWEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AASp7K1dD3Xu0Ny+EmjL5caLg0pos1txhYredg+yMTvo+aQmUc3k8r6iFBIPhTbc
TMTkMcNJxGoO9iOQsCzSgnUGo1MwUTAdBgNVHQ4EFgQUCtPh4YmcjYMY8hcfrJzF
/476FsMwHwYDVR0jBBgwFoAUCtPh4YmcjYMY8hcfrJzF/476FsMwDwYDVR0TAQH/
BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA8Le9kTwNJyB1o+2MqXGpmi4VBycD
yoOpf3MqnIckrGgCIQDyq7hhIz6Qj/Bk4kS7jdljqwrYywHrfLqj0w2Su1q0TQ==
-----END CERTIFICATE-----
)pem";
inline constexpr std::string_view kKeyA = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqb5tMCyCXsLq2fDD
ms/2VF1pQBMjf+vHMsNgUqdFpDGhRANCAASp7K1dD3Xu0Ny+EmjL5caLg0pos1tx
hYredg+yMTvo+aQmUc3k8r6iFBIPhTbcTMTkMcNJxGoO9iOQsCzSgnUG
-----END PRIVATE KEY-----
)pem";
inline constexpr std::string_view kCertB = R"pem(-----BEGIN CERTIFICATE-----
MIIBeTCCAR+gAwIBAgIUEUZhjIkIIpONehg7cRQwtvdhfWcwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1iMCAXDTI2MTEyMTIwMDAwOFoYDzIxMjYxMDI4MjAw
MDA4WjARMQ8wDQYDVQQDDAZjZXJ0LWIwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AATzk22KS9Dwz9KfIXC8MI4fkzHj258Cnb6qVMawlu7X2DzmoJDyhihY9LT3RObV
HKFqLWhOlt1/gyxE0sCCwIMMo1MwUTAdBgNVHQ4EFgQU6i1zsTIA0oURl1XK/O0n
DjXTxm0wHwYDVR0jBBgwFoAU6i1zsTIA0oURl1XK/O0nDjXTxm0wDwYDVR0TAQH/
BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAnRv/54+V4N+275toJ9Slkdlzp0Kl
do7o8kwKAq603wwCIC6NDTLMAaR7E+ltSEo0dCNNHBq9POFzsM328Qyv7SDW
-----END CERTIFICATE-----
)pem";
inline constexpr std::string_view kKeyB = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgI7yEix9X14TBOgjg
bhaWzXicxqp9tB2qKz4PxO4mJiChRANCAATzk22KS9Dwz9KfIXC8MI4fkzHj258C
nb6qVMawlu7X2DzmoJDyhihY9LT3RObVHKFqLWhOlt1/gyxE0sCCwIMM
-----END PRIVATE KEY-----
)pem";

// Writes `text` to the file `path`, replacing what it held.
inline void WriteFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A loopback HTTPS server's options, serving certificate A from a fresh
// directory `dir` (removed by the caller).
inline HttpServerOptions LoopbackTls(const std::string& dir) {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/tls.crt", kCertA);
  WriteFile(dir + "/tls.key", kKeyA);
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.cert_file = dir + "/tls.crt";
  options.key_file = dir + "/tls.key";
  return options;
}

}  // namespace devshare::kube::fixtures

#endif  // DEVSHARE_TESTS_KUBE_KUBE_FIXTURES_HPP_
