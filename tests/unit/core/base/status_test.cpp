#include "devshare/status.hpp"

#include <doctest/doctest.h>

using devshare::Result;
using devshare::Status;
using devshare::StatusCode;

TEST_CASE("Status: ok is the default and costs nothing to copy") {
  Status s;
  CHECK(s.ok());
  CHECK(s.code() == StatusCode::kOk);
  CHECK(s.message().empty());
  CHECK(s.ToString() == "ok");
  Status copy = s;
  CHECK(copy.ok());
}

TEST_CASE("Status: a malformed error keeps its field and offset through copies") {
  Status s = Status::Malformed("bad devmem", "device[2].devmem", 57);
  Status copy = s;
  CHECK_FALSE(copy.ok());
  CHECK(copy.code() == StatusCode::kMalformed);
  CHECK(copy.field() == "device[2].devmem");
  CHECK(copy.offset() == 57);
  CHECK(copy.ToString() == "malformed: bad devmem");
  copy = Status();
  CHECK(copy.ok());
  CHECK_FALSE(s.ok());
}

TEST_CASE("Result: holds a value or the error") {
  Result<int> good = 7;
  REQUIRE(good.ok());
  CHECK(*good == 7);
  CHECK(good.status().ok());
  Result<int> bad = Status::InvalidConfig("no vendor", "nvidia");
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidConfig);
  CHECK(bad.status().field() == "nvidia");
}

TEST_CASE("a Result made from an ok Status is an internal error, never ok without a value") {
  Result<int> r{Status()};
  CHECK_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInternal);
  CHECK(r.status().message().find("without a value") != std::string::npos);
  CHECK(StatusCodeName(StatusCode::kUnavailable) == "unavailable");
  CHECK(Status::Unavailable("later").ToString() == "unavailable: later");
}
