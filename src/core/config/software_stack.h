// software_stack.h — the library releases a run uses, as an input of the estimate.
//
// Purpose: which tensors exist depends on the release of Megatron-core, TransformerEngine,
// PyTorch (and whether torch.compile is on), flash-attention and fla, and on the accelerator's
// architecture. Users know these (`pip list`, their container tag); the stack names them, and
// version_rules.h turns each into the behaviours stagemem models. Written as comma-separated
// name=version pairs ("te=2.11,megatron-core=0.13,torch=2.7,compile=on,arch=sm90"), in links
// (`stack=`), JSON (`stack`) and on the command line (`--stack`).
// Units: release numbers (up to four dot-separated integers); no bytes here.
// Limitations: a component left out means "the current release" (what stagemem models without a
// stack, so old links keep their meaning). Pre-release and local suffixes are accepted and
// ignored ("2.7.0a0+79aa17489c.nv25.04" is 2.7.0): a release candidate counts as its release.
// Container tags (NGC 25.04) are not translated; name the libraries' versions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/enum_names.h"

namespace stagemem {

// A release number: up to four dot-separated integers; parts == 0 means "not given" (the
// current release). Compared part by part, a missing part being 0 (2.7 == 2.7.0).
struct Release {
  std::array<std::int32_t, 4> number{};
  std::int8_t parts = 0;
  bool given() const { return parts > 0; }
  friend bool operator==(const Release&, const Release&) = default;
};
// <0, 0 or >0 as a is older than, the same as or newer than b (both given).
int compare_releases(const Release& a, const Release& b);
constexpr Release release(std::int32_t major, std::int32_t minor, std::int32_t patch = 0) {
  return Release{.number = {major, minor, patch, 0},
                 .parts = static_cast<std::int8_t>(patch == 0 ? 2 : 3)};
}
// "2.18", "0.13.1", "2.7.0a0+cu128": the leading dot-separated integers (each in [0, 99999]);
// nothing when the text does not start with a digit, a part is out of range, or what follows the
// number starts with a dot not followed by a letter ("2..1", "2.").
std::optional<Release> parse_release(std::string_view text);
std::string release_text(const Release& r);  // "2.18" (the parts given)

// The accelerator architectures whose kernels differ in what they allocate.
enum class Architecture : std::uint8_t {
  current,  // not given: sm90 (what stagemem models without a stack)
  sm80,
  sm86,
  sm89,
  sm90,
  sm100,
  sm103,
  sm120,
  gfx942,
  gfx950
};
template <>
struct EnumNames<Architecture> {
  static constexpr std::array<std::string_view, 10> names = {
      "current", "sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm120", "gfx942", "gfx950"};
};
static_assert(names_end_at<Architecture::gfx950>());

enum class CompileMode : std::uint8_t { current, off, on };  // current: off (eager)

// The components, in the canonical order of the text form.
enum class StackComponent : std::uint8_t {
  megatron_core,
  transformer_engine,
  torch,
  compile,
  flash_attention,
  fla,
  architecture
};
template <>
struct EnumNames<StackComponent> {
  static constexpr std::array<std::string_view, 7> names = {
      "megatron-core", "te", "torch", "compile", "flash-attn", "fla", "arch"};
};
static_assert(names_end_at<StackComponent::architecture>());

struct SoftwareStack {
  Release megatron_core{};
  Release transformer_engine{};
  Release torch{};
  CompileMode compile = CompileMode::current;
  Release flash_attention{};  // the flash-attn package (2.x; 3.x is flash_attn_3 / hopper)
  Release fla{};
  Architecture architecture = Architecture::current;
  bool empty() const { return *this == SoftwareStack{}; }
  friend bool operator==(const SoftwareStack&, const SoftwareStack&) = default;
};

// The release of a versioned component (compile and arch have none: given() is false).
Release component_release(const SoftwareStack& stack, StackComponent component);

// What parse_stack accepts, for error messages: the names, their aliases and value forms.
std::string stack_syntax();

// Parses "name=version,name=version". Names: the canonical ones above and the aliases mcore,
// megatron, transformer-engine, transformer_engine, pytorch, flash-attention, flash_attn,
// flash-linear-attention; compile takes on/off (true/false, 1/0); arch one of the architectures;
// every other component a release. A component named twice, an unknown name or a value that
// does not parse is an error naming the pair; "" is the empty stack.
std::optional<SoftwareStack> parse_stack(std::string_view text, std::string& error);
// The canonical text: components in StackComponent order, only those given; "" for none.
std::string stack_text(const SoftwareStack& stack);

}  // namespace stagemem
