// enum_names.h — one list of spellings per enum, and the name and parse functions they all share.
//
// Purpose: option values appear in links, JSON files and on the command line, so each spelling is
// written exactly once: a specialisation of EnumNames<E> directly below the enum's definition.
// Every name, parse, "one of: ..." message and the field table's choices read that list, so a
// spelling cannot differ between the encodings, the CLI and the app.
// Rules: an enum's values are 0..N-1 in declaration order, and its list has N entries, checked at
// compile time by names_end_at<last enumerator>(). A spelling, once published in a link, never
// changes; new values go at the end.
// Units: none. Limitations: enums with gaps in their values cannot use it.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace stagemem {

// Specialise for each enum E: `static constexpr std::array<std::string_view, N> names = {...};`
template <typename E>
struct EnumNames;

template <typename E>
inline constexpr std::span<const std::string_view> enum_names = EnumNames<E>::names;

template <typename E>
inline constexpr std::size_t enum_count = EnumNames<E>::names.size();

// True when the list has exactly one entry per enumerator up to `last`, the enum's last value.
template <auto last>
constexpr bool names_end_at() {
  return static_cast<std::size_t>(last) + 1 == enum_count<decltype(last)>;
}

template <typename E>
constexpr bool enum_in_range(E value) {
  return static_cast<std::size_t>(value) < enum_count<E>;
}

// The spelling of `value`; "unknown" for a value outside the enum (a corrupted input).
template <typename E>
constexpr std::string_view enum_name(E value) {
  return enum_in_range(value) ? EnumNames<E>::names[static_cast<std::size_t>(value)]
                              : std::string_view("unknown");
}

template <typename E>
constexpr std::optional<E> parse_enum(std::string_view text) {
  for (std::size_t i = 0; i < enum_count<E>; ++i) {
    if (EnumNames<E>::names[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// "one of: a, b, c": the allowed values, for error messages.
inline std::string one_of(std::span<const std::string_view> names) {
  std::string out = "one of: ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

}  // namespace stagemem
