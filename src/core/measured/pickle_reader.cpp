// pickle_reader.cpp — see pickle_reader.h. Opcode values and operand layouts follow CPython's
// Lib/pickle.py and Modules/_pickle.c (protocol 2-5 opcodes; little-endian integer operands,
// big-endian BINFLOAT).
#include "measured/pickle_reader.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace stagemem {

std::string_view pickle_kind_name(PickleKind kind) {
  switch (kind) {
    case PickleKind::none:
      return "None";
    case PickleKind::boolean:
      return "bool";
    case PickleKind::integer:
      return "int";
    case PickleKind::real:
      return "float";
    case PickleKind::text:
      return "str";
    case PickleKind::list:
      return "list";
    case PickleKind::tuple:
      return "tuple";
    case PickleKind::dict:
      return "dict";
  }
  return "?";
}

const PickleNode* PickleTree::find(const PickleNode& dict, std::string_view key) const {
  if (dict.kind != PickleKind::dict) return nullptr;
  for (std::size_t i = dict.keys.size(); i-- > 0;) {
    const PickleNode& k = nodes[dict.keys[i]];
    if (k.kind == PickleKind::text && k.text == key) return &nodes[dict.items[i]];
  }
  return nullptr;
}

namespace {

// Names of the opcodes this reader refuses, so the error says what the file asked for.
std::string_view refused_opcode_name(unsigned char op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 'I':
      return "INT";
    case 'L':
      return "LONG";
    case 0x8b:
      return "LONG4";
    case 'S':
      return "STRING";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'V':
      return "UNICODE";
    case 'F':
      return "FLOAT";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x8e:
      return "BINBYTES8";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case 'l':
      return "LIST";
    case 'd':
      return "DICT";
    default:
      return "";
  }
}

struct Failure {
  std::size_t offset;
  std::string message;
};

class Reader {
 public:
  Reader(std::string_view bytes, const PickleLimits& limits) : in_(bytes), limits_(limits) {}

  PickleResult run() {
    PickleResult result;
    if (in_.size() > limits_.max_input_bytes) {
      fail(0, "input is " + std::to_string(in_.size()) + " bytes; the limit is " +
                  std::to_string(limits_.max_input_bytes));
    } else {
      loop();
    }
    if (failure_) {
      result.error = "byte " + std::to_string(failure_->offset) + ": " + failure_->message;
      result.error_offset = failure_->offset;
    } else {
      result.tree = std::move(tree_);
    }
    return result;
  }

 private:
  std::string_view in_;
  PickleLimits limits_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;  // offset of the opcode being executed
  PickleTree tree_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::size_t open_containers_ = 0;  // containers on the stack, still to be placed in a parent
  std::unordered_map<std::uint64_t, std::uint32_t> memo_;
  std::optional<Failure> failure_;

  void fail(std::size_t offset, std::string message) {
    if (!failure_) failure_ = Failure{offset, std::move(message)};
  }
  bool failed() const { return failure_.has_value(); }

  static bool is_container(PickleKind k) {
    return k == PickleKind::list || k == PickleKind::tuple || k == PickleKind::dict;
  }

  bool need(std::size_t n, const char* what) {
    if (in_.size() - pos_ < n) {
      fail(op_at_, std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " +
                       std::to_string(in_.size() - pos_) + " remain");
      return false;
    }
    return true;
  }
  std::uint64_t read_le(std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }

  bool check_depth() {
    if (marks_.size() + open_containers_ > limits_.max_depth) {
      fail(op_at_, "nesting deeper than " + std::to_string(limits_.max_depth));
      return false;
    }
    return true;
  }

  std::optional<std::uint32_t> new_node(PickleKind kind) {
    if (tree_.nodes.size() >= limits_.max_nodes) {
      fail(op_at_, "more than " + std::to_string(limits_.max_nodes) + " values");
      return std::nullopt;
    }
    tree_.nodes.emplace_back();
    tree_.nodes.back().kind = kind;
    return static_cast<std::uint32_t>(tree_.nodes.size() - 1);
  }

  void push(std::uint32_t node) {
    if (stack_.size() >= limits_.max_stack) {
      fail(op_at_, "more than " + std::to_string(limits_.max_stack) + " values on the stack");
      return;
    }
    stack_.push_back(node);
    if (is_container(tree_.nodes[node].kind)) {
      ++open_containers_;
      check_depth();
    }
  }
  void push_new(PickleKind kind) {
    if (auto n = new_node(kind)) push(*n);
  }
  // The top value above the innermost mark.
  std::optional<std::uint32_t> pop() {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) {
      fail(op_at_, "stack underflow (no value to take)");
      return std::nullopt;
    }
    const std::uint32_t v = stack_.back();
    stack_.pop_back();
    if (is_container(tree_.nodes[v].kind)) --open_containers_;
    return v;
  }
  std::optional<std::vector<std::uint32_t>> pop_to_mark(const char* opname) {
    if (marks_.empty()) {
      fail(op_at_, std::string(opname) + ": no MARK to pop to");
      return std::nullopt;
    }
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> values(stack_.begin() + static_cast<std::ptrdiff_t>(mark),
                                      stack_.end());
    for (std::uint32_t v : values)
      if (is_container(tree_.nodes[v].kind)) --open_containers_;
    stack_.resize(mark);
    return values;
  }
  PickleNode* top_of_kind(PickleKind kind, const char* opname) {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) {
      fail(op_at_,
           std::string(opname) + ": no " + std::string(pickle_kind_name(kind)) + " on the stack");
      return nullptr;
    }
    PickleNode& n = tree_.nodes[stack_.back()];
    if (n.kind != kind) {
      fail(op_at_, std::string(opname) + ": expected a " + std::string(pickle_kind_name(kind)) +
                       ", found " + std::string(pickle_kind_name(n.kind)));
      return nullptr;
    }
    return &n;
  }

  void read_text(std::size_t length_bytes, const char* opname) {
    if (!need(length_bytes, opname)) return;
    const std::uint64_t length = read_le(length_bytes);
    if (length > limits_.max_string_bytes) {
      fail(op_at_, std::string(opname) + ": string of " + std::to_string(length) +
                       " bytes; the limit is " + std::to_string(limits_.max_string_bytes));
      return;
    }
    if (!need(static_cast<std::size_t>(length), opname)) return;
    auto n = new_node(PickleKind::text);
    if (!n) return;
    tree_.nodes[*n].text.assign(in_.substr(pos_, static_cast<std::size_t>(length)));
    pos_ += static_cast<std::size_t>(length);
    push(*n);
  }
  void push_int(std::int64_t value) {
    if (auto n = new_node(PickleKind::integer)) {
      tree_.nodes[*n].integer = value;
      push(*n);
    }
  }
  // PUT/GET's text operand: decimal digits then '\n'.
  std::optional<std::uint64_t> read_decimal_line(const char* opname) {
    std::uint64_t v = 0;
    std::size_t digits = 0;
    while (pos_ < in_.size() && in_[pos_] != '\n') {
      const char c = in_[pos_++];
      if (c < '0' || c > '9' || ++digits > 10) {
        fail(op_at_, std::string(opname) + ": memo index is not a decimal number");
        return std::nullopt;
      }
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (pos_ >= in_.size() || digits == 0) {
      fail(op_at_, std::string("truncated: ") + opname + " needs a decimal index and a newline");
      return std::nullopt;
    }
    ++pos_;
    return v;
  }
  void memo_put(std::uint64_t index) {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) {
      fail(op_at_, "memoise: no value on the stack");
      return;
    }
    if (memo_.size() >= limits_.max_memo && memo_.find(index) == memo_.end()) {
      fail(op_at_, "more than " + std::to_string(limits_.max_memo) + " memo entries");
      return;
    }
    memo_[index] = stack_.back();
  }
  void memo_get(std::uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) {
      fail(op_at_, "memo index " + std::to_string(index) + " was never stored");
      return;
    }
    push(it->second);
  }

  void set_items(std::uint32_t dict, const std::vector<std::uint32_t>& kv) {
    if (kv.size() % 2 != 0) {
      fail(op_at_, "SETITEMS: odd number of values after the MARK");
      return;
    }
    PickleNode& d = tree_.nodes[dict];
    for (std::size_t i = 0; i < kv.size(); i += 2) {
      const PickleKind k = tree_.nodes[kv[i]].kind;
      if (is_container(k) && k != PickleKind::tuple) {
        fail(op_at_, "dict key of type " + std::string(pickle_kind_name(k)) + " is unhashable");
        return;
      }
      d.keys.push_back(kv[i]);
      d.items.push_back(kv[i + 1]);
    }
  }

  // PROTO: the protocol version, once, first.
  void read_proto(bool& proto_seen) {
    if (!need(1, "PROTO")) return;
    const auto version = read_le(1);
    if (proto_seen || version < 2 || version > 5) {
      fail(op_at_, proto_seen
                       ? "PROTO appears twice"
                       : "pickle protocol " + std::to_string(version) + " is not one of 2 to 5");
      return;
    }
    proto_seen = true;
  }
  // FRAME: a length prefix for buffering only.
  void read_frame() {
    if (!need(8, "FRAME")) return;
    const std::uint64_t length = read_le(8);
    if (length > in_.size() - pos_) {
      fail(op_at_, "truncated: FRAME of " + std::to_string(length) + " bytes, " +
                       std::to_string(in_.size() - pos_) + " remain");
    }
  }
  // STOP: exactly one value left, and nothing after it.
  void stop() {
    if (!marks_.empty() || stack_.size() != 1) {
      fail(op_at_, "STOP with " + std::to_string(stack_.size()) + " values and " +
                       std::to_string(marks_.size()) + " open MARKs (expected one value)");
      return;
    }
    if (pos_ != in_.size()) {
      fail(pos_, std::to_string(in_.size() - pos_) + " bytes after STOP");
      return;
    }
    tree_.root = stack_.back();
  }
  // A tuple of `items`, in order.
  void push_tuple(std::vector<std::uint32_t> items) {
    if (auto t = new_node(PickleKind::tuple)) {
      tree_.nodes[*t].items = std::move(items);
      push(*t);
    }
  }
  // TUPLE1, TUPLE2, TUPLE3: the top n values.
  void push_small_tuple(std::size_t n) {
    std::vector<std::uint32_t> items(n);
    for (std::size_t i = n; i-- > 0;) {
      const auto v = pop();
      if (!v) return;
      items[i] = *v;
    }
    push_tuple(std::move(items));
  }
  // LONG1: a length byte, then two's complement little-endian.
  void read_long1() {
    if (!need(1, "LONG1")) return;
    const std::size_t n = static_cast<std::size_t>(read_le(1));
    if (n > 8) {
      fail(op_at_, "LONG1: integer of " + std::to_string(n) + " bytes is wider than 64 bits");
      return;
    }
    if (!need(n, "LONG1")) return;
    std::uint64_t v = read_le(n);
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);
    push_int(static_cast<std::int64_t>(v));
  }
  // BINFLOAT: a big-endian IEEE 754 double.
  void read_binfloat() {
    if (!need(8, "BINFLOAT")) return;
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
      bits = (bits << 8) | static_cast<unsigned char>(in_[pos_ + static_cast<std::size_t>(i)]);
    pos_ += 8;
    if (auto n = new_node(PickleKind::real)) {
      std::memcpy(&tree_.nodes[*n].real, &bits, sizeof bits);
      push(*n);
    }
  }

  // The opcodes that build containers: empty dict, list and tuple, MARK, setting items,
  // appending, tuples. False when `op` is none of them.
  bool container_op(unsigned char op) {
    switch (op) {
      case '}':
        push_new(PickleKind::dict);
        break;
      case ']':
        push_new(PickleKind::list);
        break;
      case ')':
        push_new(PickleKind::tuple);
        break;
      case '(':
        marks_.push_back(stack_.size());
        check_depth();
        break;
      case 's': {  // SETITEM
        const auto value = pop();
        const auto key = value ? pop() : std::nullopt;
        if (key && top_of_kind(PickleKind::dict, "SETITEM") != nullptr) {
          set_items(stack_.back(), {*key, *value});
        }
        break;
      }
      case 'u': {  // SETITEMS
        const auto kv = pop_to_mark("SETITEMS");
        if (kv && top_of_kind(PickleKind::dict, "SETITEMS") != nullptr) {
          set_items(stack_.back(), *kv);
        }
        break;
      }
      case 'a': {  // APPEND
        const auto value = pop();
        if (!value) break;
        if (PickleNode* list = top_of_kind(PickleKind::list, "APPEND")) {
          list->items.push_back(*value);
        }
        break;
      }
      case 'e': {  // APPENDS
        const auto values = pop_to_mark("APPENDS");
        if (!values) break;
        if (PickleNode* list = top_of_kind(PickleKind::list, "APPENDS")) {
          list->items.insert(list->items.end(), values->begin(), values->end());
        }
        break;
      }
      case 0x85:  // TUPLE1
      case 0x86:  // TUPLE2
      case 0x87:  // TUPLE3
        push_small_tuple(static_cast<std::size_t>(op - 0x84));
        break;
      case 't':  // TUPLE
        if (auto items = pop_to_mark("TUPLE")) push_tuple(std::move(*items));
        break;
      default:
        return false;
    }
    return true;
  }

  // The opcodes that push a value: str, int, float, None, bool. False when `op` is none of
  // them.
  bool value_op(unsigned char op) {
    switch (op) {
      case 'X':
        read_text(4, "BINUNICODE");
        break;
      case 0x8c:
        read_text(1, "SHORT_BINUNICODE");
        break;
      case 0x8d:
        read_text(8, "BINUNICODE8");
        break;
      case 'J':
        if (need(4, "BININT"))
          push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(read_le(4))));
        break;
      case 'K':
        if (need(1, "BININT1")) push_int(static_cast<std::int64_t>(read_le(1)));
        break;
      case 'M':
        if (need(2, "BININT2")) push_int(static_cast<std::int64_t>(read_le(2)));
        break;
      case 0x8a:
        read_long1();
        break;
      case 'G':
        read_binfloat();
        break;
      case 'N':
        push_new(PickleKind::none);
        break;
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
        if (auto n = new_node(PickleKind::boolean)) {
          tree_.nodes[*n].boolean = op == 0x88;
          push(*n);
        }
        break;
      default:
        return false;
    }
    return true;
  }

  // The memo opcodes: MEMOIZE, PUT, BINPUT, LONG_BINPUT, GET, BINGET, LONG_BINGET. False when
  // `op` is none of them.
  bool memo_op(unsigned char op) {
    switch (op) {
      case 0x94:  // MEMOIZE
        memo_put(memo_.size());
        break;
      case 'p':
        if (const auto i = read_decimal_line("PUT")) memo_put(*i);
        break;
      case 'q':
        if (need(1, "BINPUT")) memo_put(read_le(1));
        break;
      case 'r':
        if (need(4, "LONG_BINPUT")) memo_put(read_le(4));
        break;
      case 'g':
        if (const auto i = read_decimal_line("GET")) memo_get(*i);
        break;
      case 'h':
        if (need(1, "BINGET")) memo_get(read_le(1));
        break;
      case 'j':
        if (need(4, "LONG_BINGET")) memo_get(read_le(4));
        break;
      default:
        return false;
    }
    return true;
  }

  // Any other opcode: an error naming it (refused_opcode_name) or its value.
  void refuse(unsigned char op) {
    const std::string_view name = refused_opcode_name(op);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    fail(op_at_, name.empty() ? std::string("unknown opcode ") + hex
                              : "opcode " + std::string(name) + " (" + hex +
                                    ") is refused: an allocator snapshot holds only dicts, lists, "
                                    "tuples, str, int, float, bool and None, and nothing is ever "
                                    "imported or called");
  }

  // Runs the opcodes until STOP or the first failure (every failure ends the loop).
  void loop() {
    bool proto_seen = false;
    while (!failed()) {
      if (pos_ >= in_.size()) {
        fail(pos_, "truncated: the input ends before STOP");
        return;
      }
      op_at_ = pos_;
      const unsigned char op = static_cast<unsigned char>(in_[pos_++]);
      if (!proto_seen && op != 0x80) {
        fail(op_at_, "not a pickle of protocol 2 to 5: the first opcode is not PROTO");
        return;
      }
      if (op == 0x80) {
        read_proto(proto_seen);
      } else if (op == 0x95) {
        read_frame();
      } else if (op == '.') {
        stop();
        return;
      } else if (!container_op(op) && !value_op(op) && !memo_op(op)) {
        refuse(op);
      }
    }
  }
};

}  // namespace

PickleResult read_pickle(std::string_view bytes, const PickleLimits& limits) {
  return Reader(bytes, limits).run();
}

}  // namespace stagemem
