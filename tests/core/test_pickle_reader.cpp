// Tests of pickle_reader.h: the values Python's pickler writes for protocols 2, 4 and 5 (the bytes
// below were printed by CPython 3.11's pickle.dumps), memo sharing, every bound, the bad-input
// corpus tests/bad-inputs/pickle.txt, and that no truncation or byte flip of a real snapshot
// pickle crashes or is silently accepted as something else.
#include <random>

#include "catch.h"
#include "corpus.h"
#include "measured/pickle_reader.h"

using namespace stagemem;

namespace {

// pickle.dumps({'a': [1, -2, 300, 70000, 2**40, -2**40, 1.5, True, False, None, 'é', (1, 2)]},
// protocol=P): BININT1 1, BININT -2, BININT2 300, BININT 70000, LONG1 of 6 bytes for +-2^40,
// BINFLOAT 1.5, NEWTRUE, NEWFALSE, NONE, a UTF-8 str, TUPLE2; protocol 2 memoises with BINPUT,
// 4 and 5 with MEMOIZE inside a FRAME.
constexpr char protocol2_bytes[] =
    "\x80\x02\x7d\x71\x00\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x4a\xfe\xff\xff"
    "\xff\x4d\x2c\x01\x4a\x70\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x06\x00\x00\x00\x00"
    "\x00\xff\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x88\x89\x4e\x58\x02\x00\x00\x00\xc3\xa9\x71\x03"
    "\x4b\x01\x4b\x02\x86\x71\x04\x65\x73\x2e";
const std::string_view protocol2(protocol2_bytes, sizeof protocol2_bytes - 1);
const std::string_view protocol4(
    "\x80\x04\x95\x42\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x8c\x01\x61\x94\x5d\x94\x28\x4b\x01\x4a"
    "\xfe\xff\xff\xff\x4d\x2c\x01\x4a\x70\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x06\x00"
    "\x00\x00\x00\x00\xff\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x88\x89\x4e\x8c\x02\xc3\xa9\x94\x4b"
    "\x01\x4b\x02\x86\x94\x65\x73\x2e",
    77);

void check_values(const PickleTree& t) {
  const PickleNode& root = t.at(t.root);
  REQUIRE(root.kind == PickleKind::dict);
  const PickleNode* a = t.find(root, "a");
  REQUIRE(a != nullptr);
  REQUIRE(a->kind == PickleKind::list);
  REQUIRE(a->items.size() == 12);
  const auto item = [&](std::size_t i) -> const PickleNode& { return t.at(a->items[i]); };
  CHECK(item(0).integer == 1);
  CHECK(item(1).integer == -2);
  CHECK(item(2).integer == 300);
  CHECK(item(3).integer == 70000);
  CHECK(item(4).integer == (std::int64_t{1} << 40));  // 1,099,511,627,776
  CHECK(item(5).integer == -(std::int64_t{1} << 40));
  CHECK(item(6).kind == PickleKind::real);
  CHECK(item(6).real == 1.5);
  CHECK(item(7).kind == PickleKind::boolean);
  CHECK(item(7).boolean);
  CHECK_FALSE(item(8).boolean);
  CHECK(item(9).kind == PickleKind::none);
  CHECK(item(10).text == "\xc3\xa9");
  REQUIRE(item(11).kind == PickleKind::tuple);
  REQUIRE(item(11).items.size() == 2);
  CHECK(t.at(item(11).items[1]).integer == 2);
  CHECK(t.find(root, "b") == nullptr);
}

}  // namespace

TEST_CASE("Pickle reader: the values of protocols 2, 4 and 5") {
  for (std::string_view bytes : {protocol2, protocol4}) {
    const PickleResult r = read_pickle(bytes);
    INFO(r.error);
    REQUIRE(r.tree);
    check_values(*r.tree);
  }
  std::string protocol5(protocol4);
  protocol5[1] = '\x05';  // pickle.dumps(..., protocol=5) differs from 4 only in PROTO here
  const PickleResult r5 = read_pickle(protocol5);
  REQUIRE(r5.tree);
  check_values(*r5.tree);
}

TEST_CASE("Pickle reader: a memoised list fetched twice is shared, not copied") {
  // x = []; pickle.dumps([x, x], protocol=4): the second item is BINGET 1.
  const std::string_view bytes(
      "\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x5d\x94\x68\x01\x65\x2e", 20);
  const PickleResult r = read_pickle(bytes);
  REQUIRE(r.tree);
  const PickleNode& root = r.tree->at(r.tree->root);
  REQUIRE(root.items.size() == 2);
  CHECK(root.items[0] == root.items[1]);
  CHECK(r.tree->nodes.size() == 2);  // the outer and the inner list
}

TEST_CASE("Pickle reader: every bound is an error naming the bound and the offset") {
  PickleLimits limits;
  limits.max_input_bytes = 10;
  PickleResult r = read_pickle(protocol4, limits);
  CHECK_FALSE(r.tree);
  CHECK(r.error == "byte 0: input is 77 bytes; the limit is 10");

  limits = {};
  limits.max_string_bytes = 1;  // 'é' is 2 bytes, at offset 63 of protocol 4
  r = read_pickle(protocol4, limits);
  CHECK(r.error == "byte 63: SHORT_BINUNICODE: string of 2 bytes; the limit is 1");
  CHECK(r.error_offset == 63);

  limits = {};
  limits.max_nodes = 5;  // dict, 'a', list, 1, -2: the sixth value (300) fails
  r = read_pickle(protocol4, limits);
  CHECK(r.error == "byte 27: more than 5 values");

  limits = {};
  limits.max_memo = 2;  // MEMOIZE of the dict and 'a' fit, the list's does not
  r = read_pickle(protocol4, limits);
  CHECK(r.error == "byte 18: more than 2 memo entries");

  limits = {};
  limits.max_depth = 1;  // the dict on the stack is depth 1; the list inside it makes 2
  r = read_pickle(protocol4, limits);
  CHECK(r.error == "byte 17: nesting deeper than 1");

  limits = {};
  limits.max_stack = 3;  // dict, 'a', list, then MARK and 1 makes a fourth stack value
  r = read_pickle(protocol4, limits);
  CHECK(r.error == "byte 20: more than 3 values on the stack");
}

TEST_CASE("Pickle reader: the bad-input corpus, each with a clear error") {
  const auto entries = stagemem_tests::read_corpus("bad-inputs/pickle.txt", "#");
  REQUIRE(entries.size() >= 30);
  for (const auto& entry : entries) {
    INFO("tests/bad-inputs/pickle.txt line " << entry.line << ": " << entry.second);
    const PickleResult r = read_pickle(stagemem_tests::unescape(entry.second));
    INFO(r.error);
    CHECK_FALSE(r.tree);
    CHECK(r.error.starts_with("byte " + std::to_string(r.error_offset) + ": "));
    CHECK(r.error.find(entry.first) != std::string::npos);
  }
}

TEST_CASE("Pickle reader: no truncation or byte flip of a snapshot crashes") {
  const std::string bytes = stagemem_tests::read_whole_file(
      stagemem_tests::corpus_path("core/data/snapshots/after_step.pickle"));
  REQUIRE(bytes.size() > 1000);
  REQUIRE(read_pickle(bytes).tree);
  // Every proper prefix is an error at or before its end (STOP is the last byte).
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const PickleResult r = read_pickle(std::string_view(bytes).substr(0, n));
    REQUIRE_FALSE(r.tree);
    REQUIRE(r.error_offset <= n);
  }
  // Random byte flips: accepted or refused with an offset inside the input, never a crash
  // (ASan + UBSan check the rest in native-asan).
  std::mt19937 random(15);
  std::uniform_int_distribution<std::size_t> where(0, bytes.size() - 1);
  std::uniform_int_distribution<int> value(0, 255);
  for (int i = 0; i < 3000; ++i) {
    std::string mutated = bytes;
    for (int k = 0; k < 1 + i % 4; ++k) mutated[where(random)] = static_cast<char>(value(random));
    const PickleResult r = read_pickle(mutated);
    if (!r.tree) REQUIRE(r.error_offset <= mutated.size());
  }
}
