// pickle_reader.h — a bounded reader for the subset of Python's pickle that
// torch.cuda.memory._snapshot() / _dump_snapshot() produce.
//
// Purpose: an allocator snapshot is `pickle.dump(dict_of_lists_of_dicts)`: only dicts, lists,
// tuples, str, int, float, bool and None. This reader accepts exactly the opcodes Python's pickler
// (protocols 2 to 5) writes for those values and refuses every other opcode, GLOBAL, STACK_GLOBAL,
// REDUCE, BUILD, INST, OBJ, NEWOBJ and PERSID among them, with an error naming the opcode and its
// byte offset: nothing is ever looked up, constructed or executed.
// Output: the values live in one arena (PickleTree::nodes); containers hold node indices, so a
// memoised value fetched twice (GET) is shared, not copied. Sharing can form cycles (a list that
// contains itself); callers that walk the tree must descend a bounded schema (snapshot.h does).
// Units: byte offsets into the input; sizes in bytes.
// Limitations: bytes/bytearray, sets, out-of-band buffers, integers wider than 64 bits and the
// text protocol 0/1 opcodes are refused. Every bound is in PickleLimits; exceeding one is an
// error naming the bound and the offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stagemem {

enum class PickleKind : std::uint8_t { none, boolean, integer, real, text, list, tuple, dict };

std::string_view pickle_kind_name(PickleKind kind);  // "None", "bool", "int", "float", "str", ...

struct PickleNode {
  PickleKind kind = PickleKind::none;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0.0;
  std::string text;
  std::vector<std::uint32_t> items;  // list/tuple items; dict values
  std::vector<std::uint32_t> keys;   // dict keys, parallel to items
};

struct PickleTree {
  std::vector<PickleNode> nodes;
  std::uint32_t root = 0;
  const PickleNode& at(std::uint32_t index) const { return nodes[index]; }
  // The value of `key` (a str key) in dict node `dict`, or nullptr; last one wins like Python.
  const PickleNode* find(const PickleNode& dict, std::string_view key) const;
};

struct PickleLimits {
  std::size_t max_input_bytes = std::size_t{1} << 30;   // 1 GiB: long traces run to hundreds of MB
  std::size_t max_depth = 64;                           // open MARKs plus containers being filled
  std::size_t max_stack = 1 << 20;                      // values on the stack at once
  std::size_t max_nodes = 20000000;                     // values in the tree
  std::size_t max_string_bytes = std::size_t{1} << 20;  // one str
  std::size_t max_memo = 20000000;                      // memo entries
};

struct PickleResult {
  std::optional<PickleTree> tree;
  std::string error;  // "byte N: ..." when tree is empty
  std::size_t error_offset = 0;
};

PickleResult read_pickle(std::string_view bytes, const PickleLimits& limits = {});

}  // namespace stagemem
