// devshare/enum_names.hpp — the names an enum's values go by on the command
// line, in scenario files, annotations and Python: one table per enum, read
// both ways, its names listed for help texts and in the error for a name it
// does not know.
//
//   inline constexpr auto kColorNames =
//       MakeEnumNames<Color>({{"red", Color::kRed}, {"green", Color::kGreen}});
//   kColorNames.Find("red")              // Color::kRed
//   kColorNames.Parse("blue", "color")   // kInvalidArgument:
//                                        //   unknown color "blue" (want one of red, green)
//   kColorNames.Name(Color::kGreen)      // "green"
//   kColorNames.Names(" | ")             // "red | green"
//
// Names match exactly (case-sensitive). A value may have several names (the
// first is its own); every name names one value.
//
// Thread-safety: the tables are constant; everything here is pure.
#ifndef DEVSHARE_ENUM_NAMES_HPP_
#define DEVSHARE_ENUM_NAMES_HPP_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};

// kInvalidArgument: `unknown <what> <name, quoted> (want one of <names>)`.
DEVSHARE_EXPORT Status UnknownNameError(std::string_view what, std::string_view name,
                                        std::string_view names);

template <typename E, std::size_t N>
struct EnumNames {
  EnumName<E> entries[N];

  constexpr const EnumName<E>* begin() const { return entries; }
  constexpr const EnumName<E>* end() const { return entries + N; }
  static constexpr std::size_t size() { return N; }

  // The value called `name`, or nullopt.
  constexpr std::optional<E> Find(std::string_view name) const {
    for (const EnumName<E>& e : entries) {
      if (e.name == name) return e.value;
    }
    return std::nullopt;
  }

  // The value called `name`, or UnknownNameError(what, name, Names()).
  Result<E> Parse(std::string_view name, std::string_view what) const {
    if (std::optional<E> value = Find(name)) return *value;
    return UnknownNameError(what, name, Names());
  }

  // The first name of `value`; empty when the table has none.
  constexpr std::string_view Name(E value) const {
    for (const EnumName<E>& e : entries) {
      if (e.value == value) return e.name;
    }
    return {};
  }

  // Every name in the table's order, joined by `separator`.
  std::string Names(std::string_view separator = ", ") const {
    std::string joined;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) joined += separator;
      joined += entries[i].name;
    }
    return joined;
  }
};

// The table of `names`, in their order.
template <typename E, std::size_t N>
constexpr EnumNames<E, N> MakeEnumNames(const EnumName<E> (&names)[N]) {
  EnumNames<E, N> table{};
  for (std::size_t i = 0; i < N; ++i) table.entries[i] = names[i];
  return table;
}

}  // namespace devshare

#endif  // DEVSHARE_ENUM_NAMES_HPP_
