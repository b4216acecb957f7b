// Tests of base/enum_names.h: every option enum's one list of spellings round-trips through
// enum_name and parse_enum, spellings are unique, and a value outside the enum is "unknown".
#include <set>
#include <string>

#include "base/enum_names.h"
#include "catch.h"
#include "config/config.h"
#include "config/training.h"
#include "parallel/layout.h"
#include "parallel/schedule.h"

using namespace stagemem;

namespace {

template <typename E>
void check_round_trip() {
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < enum_count<E>; ++i) {
    const auto value = static_cast<E>(i);
    const std::string_view name = enum_name(value);
    INFO(std::string(name));
    CHECK(!name.empty());
    CHECK(seen.insert(name).second);  // unique
    CHECK(parse_enum<E>(name) == value);
    // Spellings are lowercase words joined by '-' or '_' (link and flag values).
    for (const char c : name) {
      CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
             c == '+'));
    }
  }
  CHECK(!parse_enum<E>("").has_value());
  CHECK(enum_name(static_cast<E>(enum_count<E>)) == "unknown");
}

}  // namespace

TEST_CASE("Every option enum's spellings round-trip and are unique") {
  check_round_trip<WeightDtype>();
  check_round_trip<GradDtype>();
  check_round_trip<Fp8Recipe>();
  check_round_trip<OptimizerKind>();
  check_round_trip<MasterDtype>();
  check_round_trip<MomentDtype>();
  check_round_trip<CastCopy>();
  check_round_trip<ParamGather>();
  check_round_trip<MuonTpMode>();
  check_round_trip<MeasurementPoint>();
  check_round_trip<MemoryFigure>();
  check_round_trip<GapKind>();
  check_round_trip<RecomputePolicy>();
  check_round_trip<RecomputeModule>();
  check_round_trip<FullRecomputeMethod>();
  check_round_trip<AttentionKernel>();
  check_round_trip<KdaBackend>();
  check_round_trip<CrossEntropyKernel>();
  check_round_trip<FlaVersion>();
  check_round_trip<MoeUnpermute>();
  check_round_trip<RouterDtype>();
  check_round_trip<CpCommType>();
  check_round_trip<GemmWorkspaces>();
  check_round_trip<StageAssignment>();
  check_round_trip<PipelineSchedule>();
}

TEST_CASE("Published spellings keep their values (links and config files depend on them)") {
  CHECK(enum_name(WeightDtype::fp8_block_scaled) == "fp8-block");
  CHECK(enum_name(OptimizerKind::distributed_muon) == "distributed-muon");
  CHECK(enum_name(ParamGather::layer_wise_2026_01) == "layer-wise-2026-01");
  CHECK(enum_name(CpCommType::a2a_p2p) == "a2a+p2p");
  CHECK(enum_name(StageAssignment::attn_res_aligned) == "attnres-aligned");
  CHECK(enum_name(PipelineSchedule::one_f_one_b) == "1f1b");
  CHECK(enum_name(FlaVersion::since_0_4_1) == "since-0.4.1");
  CHECK(parse_enum<RecomputeModule>("mla_up_proj") == RecomputeModule::mla_up_proj);
  CHECK(!parse_enum<RecomputeModule>("mla-up-proj").has_value());  // exact spelling only
}

TEST_CASE("one_of lists the allowed values for error messages") {
  CHECK(one_of(enum_names<GradDtype>) == "one of: fp32, bf16");
  CHECK(one_of(enum_names<PipelineSchedule>) == "one of: 1f1b, dualpipev");
}
