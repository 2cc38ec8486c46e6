// libFuzzer target: simcache merge's input, the sweep's JSON-lines shards
// (sim/sweep/merge.cc). The input is up to four shard texts split at NUL
// bytes. Merging must never crash and its errors are one line; a shard
// may be hand-edited or truncated, so merge_records checks each record's
// fields and types, and every record it accepts must format as JSON lines,
// CSV, a table and the sweep's charts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "sim/report/plot.h"
#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_plots.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  std::vector<std::pair<std::string, std::string>> files(1, {"s0.jsonl", ""});
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && files.size() < 4)
      files.emplace_back("s" + std::to_string(files.size()) + ".jsonl", "");
    else
      files.back().second += static_cast<char>(data[i]);
  }
  std::vector<nlohmann::json> recs;
  std::string err;
  const bool ok = merge_records(files, &recs, &err);
  simcache::fuzz::check_error(ok, err);
  if (!ok) return 0;
  // The merged output merges again into the same records.
  const std::string jsonl = records_jsonl(recs);
  std::vector<nlohmann::json> again;
  if (!merge_records({{"merged.jsonl", jsonl}}, &again, &err) || records_jsonl(again) != jsonl)
    std::abort();
  (void)records_csv(recs);
  (void)records_table(recs);
  (void)svg_document(sweep_charts(recs, ""));
  return 0;
}
