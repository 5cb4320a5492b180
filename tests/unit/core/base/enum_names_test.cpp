// The enum name tables (devshare/enum_names.hpp) and every table the core,
// the engine and the simulator name their enums with.
#include "devshare/enum_names.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "devshare/annotations.hpp"
#include "devshare/dra_place.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/filter.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/nodelock.hpp"
#include "devshare/sim/simulator.hpp"

using namespace devshare;

namespace {

enum class Color { kRed, kGreen, kBlue, kUnnamed };
constexpr auto kColorNames = MakeEnumNames<Color>({{"red", Color::kRed},
                                                   {"green", Color::kGreen},
                                                   {"blue", Color::kBlue},
                                                   {"navy", Color::kBlue}});

// Every name reads back as its value, each value's first name is its name,
// and no name is given twice.
template <typename E, std::size_t N>
void CheckTable(const EnumNames<E, N>& table) {
  std::set<std::string_view> seen;
  for (const EnumName<E>& e : table) {
    INFO(e.name);
    CHECK(!e.name.empty());
    CHECK(seen.insert(e.name).second);
    REQUIRE(table.Find(e.name).has_value());
    CHECK(*table.Find(e.name) == e.value);
    CHECK(table.Find(table.Name(e.value)) == e.value);
  }
}

}  // namespace

TEST_CASE("enum names: find, name, names") {
  static_assert(kColorNames.Find("green") == Color::kGreen);
  static_assert(kColorNames.Name(Color::kBlue) == "blue");
  static_assert(kColorNames.size() == 4);
  CHECK(kColorNames.Find("navy") == Color::kBlue);  // a second name
  CHECK(kColorNames.Name(Color::kBlue) == "blue");  // the first is its own
  CHECK(!kColorNames.Find("Red").has_value());      // case-sensitive
  CHECK(!kColorNames.Find("").has_value());
  CHECK(kColorNames.Name(Color::kUnnamed).empty());
  CHECK(kColorNames.Names() == "red, green, blue, navy");
  CHECK(kColorNames.Names(" | ") == "red | green | blue | navy");
  CheckTable(kColorNames);
}

TEST_CASE("enum names: Parse names every choice in its error") {
  CHECK(*kColorNames.Parse("red", "color") == Color::kRed);
  const Result<Color> bad = kColorNames.Parse("pink", "color");
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "unknown color \"pink\" (want one of red, green, blue, navy)");
  // The name is quoted as every message quotes input: other bytes escaped.
  CHECK(kColorNames.Parse("a\nb", "color")
            .status()
            .message()
            .starts_with("unknown color \"a\\x0ab\""));
}

TEST_CASE("enum names: every table of the code base is one-to-one") {
  CheckTable(kRegisterFormatNames);
  CheckTable(kNodePolicyNames);
  CheckTable(kGpuPolicyNames);
  CheckTable(kHandshakeStateNames);
  CheckTable(kBindPhaseNames);
  CheckTable(dra::kPolicyNames);
  CheckTable(engine::kRegistrationNames);
  CheckTable(engine::kLeadershipNames);
  CheckTable(engine::kBindModeNames);
  CheckTable(engine::kLockRetryNames);
  CheckTable(engine::kPodWritesNames);
  CheckTable(sim::kFaultKindNames);
}

TEST_CASE("enum names: the tables behind the name functions") {
  CHECK(kNodePolicyNames.Names() == "binpack, spread, fgd, volcano");
  CHECK(kGpuPolicyNames.Names() ==
        "binpack, spread, topology-aware, mutex, numa, fgd, volcano-binpack, volcano-spread");
  CHECK(dra::kPolicyNames.Names() == "upstream, binpack, spread, fgd");
  CHECK(ParseRegisterFormat("yaml").status().message() ==
        "unknown register format \"yaml\" (want one of auto, json, legacy, volcano)");
  for (const auto& [name, format] : kRegisterFormatNames) {
    CHECK(*ParseRegisterFormat(name) == format);
    CHECK(RegisterFormatName(format) == name);
  }
  CHECK(HandshakeStateName(HandshakeState::kReported) == "Reported");
  CHECK(HandshakeStateName(HandshakeState::kOther) == "Other");
  CHECK(BindPhaseName(BindPhase::kNone).empty());
  CHECK(*DecodeBindPhase("failed") == BindPhase::kFailed);
  const Result<BindPhase> phase = DecodeBindPhase("done");
  CHECK(phase.status().code() == StatusCode::kMalformed);
  CHECK(phase.status().message() ==
        "bind phase \"done\" is not one of allocating, success, failed");
  CHECK(DecodeBindPhase("").status().code() == StatusCode::kMalformed);
}
