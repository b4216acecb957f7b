#include "config/software_stack.h"

#include <charconv>

namespace stagemem {
namespace {

constexpr std::int32_t max_release_part = 99999;

struct Alias {
  std::string_view name;
  StackComponent component;
};
constexpr std::array<Alias, 8> aliases = {{
    {"mcore", StackComponent::megatron_core},
    {"megatron", StackComponent::megatron_core},
    {"transformer-engine", StackComponent::transformer_engine},
    {"transformer_engine", StackComponent::transformer_engine},
    {"pytorch", StackComponent::torch},
    {"flash-attention", StackComponent::flash_attention},
    {"flash_attn", StackComponent::flash_attention},
    {"flash-linear-attention", StackComponent::fla},
}};

std::optional<StackComponent> parse_component(std::string_view name) {
  if (const auto c = parse_enum<StackComponent>(name)) return c;
  for (const Alias& a : aliases) {
    if (a.name == name) return a.component;
  }
  return std::nullopt;
}

std::string shown(std::string_view text) {
  constexpr std::size_t limit = 40;
  return "'" + std::string(text.substr(0, limit)) + (text.size() > limit ? "...'" : "'");
}

Release* release_slot(SoftwareStack& s, StackComponent c) {
  switch (c) {
    case StackComponent::megatron_core:
      return &s.megatron_core;
    case StackComponent::transformer_engine:
      return &s.transformer_engine;
    case StackComponent::torch:
      return &s.torch;
    case StackComponent::flash_attention:
      return &s.flash_attention;
    case StackComponent::fla:
      return &s.fla;
    case StackComponent::compile:
    case StackComponent::architecture:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

int compare_releases(const Release& a, const Release& b) {
  for (std::size_t i = 0; i < a.number.size(); ++i) {
    if (a.number[i] != b.number[i]) return a.number[i] < b.number[i] ? -1 : 1;
  }
  return 0;
}

std::optional<Release> parse_release(std::string_view text) {
  Release r;
  std::size_t at = 0;
  while (true) {
    if (at >= text.size() || text[at] < '0' || text[at] > '9') return std::nullopt;
    std::size_t end = at;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    std::int32_t part = 0;
    const auto [ptr, error] = std::from_chars(text.data() + at, text.data() + end, part);
    if (error != std::errc() || ptr != text.data() + end || part > max_release_part)
      return std::nullopt;
    if (r.parts == static_cast<std::int8_t>(r.number.size())) return std::nullopt;
    r.number[static_cast<std::size_t>(r.parts)] = part;
    ++r.parts;
    // Another part follows a dot and a digit; anything else ends the number (a suffix such as
    // "a0+cu128", ".dev20250101" or "rc1" is ignored).
    if (end + 1 < text.size() && text[end] == '.' && text[end + 1] >= '0' && text[end + 1] <= '9') {
      at = end + 1;
      continue;
    }
    if (end < text.size() && text[end] == '.') {
      const bool letter =
          end + 1 < text.size() && ((text[end + 1] >= 'a' && text[end + 1] <= 'z') ||
                                    (text[end + 1] >= 'A' && text[end + 1] <= 'Z'));
      if (!letter) return std::nullopt;
    }
    return r;
  }
}

std::string release_text(const Release& r) {
  std::string out;
  for (std::int8_t i = 0; i < r.parts; ++i) {
    if (i > 0) out += '.';
    out += std::to_string(r.number[static_cast<std::size_t>(i)]);
  }
  return out;
}

Release component_release(const SoftwareStack& stack, StackComponent component) {
  const Release* slot = release_slot(const_cast<SoftwareStack&>(stack), component);
  return slot ? *slot : Release{};
}

std::string stack_syntax() {
  std::string names;
  for (std::string_view n : enum_names<StackComponent>)
    names += (names.empty() ? "" : ", ") + std::string(n);
  std::string archs;
  for (std::size_t i = 1; i < enum_count<Architecture>; ++i)
    archs += (archs.empty() ? "" : ", ") + std::string(enum_names<Architecture>[i]);
  return "comma-separated name=version pairs; names: " + names +
         " (aliases mcore, transformer-engine, pytorch, flash-attention, flash-linear-attention); "
         "versions like 2.18 or 0.13.1; compile=on|off; arch one of: " +
         archs;
}

std::optional<SoftwareStack> parse_stack(std::string_view text, std::string& error) {
  SoftwareStack stack;
  std::array<bool, enum_count<StackComponent>> seen{};
  if (!text.empty() && text.back() == ',') {
    error = "an empty pair (two commas, or a comma at an end): expected " + stack_syntax();
    return std::nullopt;
  }
  for (std::string_view rest = text; !rest.empty();) {
    const auto comma = rest.find(',');
    std::string_view pair = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    while (!pair.empty() && pair.back() == ' ') pair.remove_suffix(1);
    if (pair.empty()) {
      error = "an empty pair (two commas, or a comma at an end): expected " + stack_syntax();
      return std::nullopt;
    }
    const auto equals = pair.find('=');
    if (equals == std::string_view::npos) {
      error = shown(pair) + " is not a name=version pair: expected " + stack_syntax();
      return std::nullopt;
    }
    const std::string_view name = pair.substr(0, equals);
    const std::string_view value = pair.substr(equals + 1);
    const auto component = parse_component(name);
    if (!component) {
      error = shown(pair) + " names an unknown component " + shown(name) + ": expected " +
              stack_syntax();
      return std::nullopt;
    }
    auto& was_seen = seen[static_cast<std::size_t>(*component)];
    if (was_seen) {
      error = shown(pair) + ": " + std::string(enum_name(*component)) + " is named twice";
      return std::nullopt;
    }
    was_seen = true;
    if (*component == StackComponent::compile) {
      if (value == "on" || value == "true" || value == "1") {
        stack.compile = CompileMode::on;
      } else if (value == "off" || value == "false" || value == "0") {
        stack.compile = CompileMode::off;
      } else {
        error = shown(pair) + ": compile is on or off";
        return std::nullopt;
      }
    } else if (*component == StackComponent::architecture) {
      const auto arch = parse_enum<Architecture>(value);
      if (!arch || *arch == Architecture::current) {
        error = shown(pair) + " names an unknown architecture: expected " + stack_syntax();
        return std::nullopt;
      }
      stack.architecture = *arch;
    } else {
      const auto r = parse_release(value);
      if (!r) {
        error = shown(pair) + ": " + shown(value) +
                " is not a release number (up to four dot-separated integers of at most " +
                std::to_string(max_release_part) + ", like 2.18 or 0.13.1)";
        return std::nullopt;
      }
      *release_slot(stack, *component) = *r;
    }
  }
  return stack;
}

std::string stack_text(const SoftwareStack& stack) {
  std::string out;
  const auto add = [&](StackComponent c, const std::string& value) {
    out += (out.empty() ? "" : ",") + std::string(enum_name(c)) + "=" + value;
  };
  for (std::size_t i = 0; i < enum_count<StackComponent>; ++i) {
    const auto c = static_cast<StackComponent>(i);
    if (c == StackComponent::compile) {
      if (stack.compile != CompileMode::current)
        add(c, stack.compile == CompileMode::on ? "on" : "off");
    } else if (c == StackComponent::architecture) {
      if (stack.architecture != Architecture::current)
        add(c, std::string(enum_name(stack.architecture)));
    } else if (const Release r = component_release(stack, c); r.given()) {
      add(c, release_text(r));
    }
  }
  return out;
}

}  // namespace stagemem
