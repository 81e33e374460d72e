// Word count as a bounded job at parallelism 2: lines -> words -> key_by(word) -> rolling count
// per word -> collected and printed. The keyed exchange sends every occurrence of a word to the
// same subtask, so the last count emitted per word is its total.
//
//   build/examples/wordcount [file]     (default: a built-in text)
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/builtin/number_sequence_source.h"
#include "gcpstream/runtime/stream_execution_environment.h"

namespace {

const char* kText[] = {
    "the quick brown fox jumps over the lazy dog",
    "the dog barks and the fox runs",
    "a stream is a sequence of records and a job is a graph of operators",
    "every record reaches the subtask that owns its key",
};

using WordCount = std::pair<std::string, std::int64_t>;

}  // namespace

int main(int argc, char** argv) {
  auto lines = std::make_shared<std::vector<std::string>>();
  if (argc > 1) {
    std::ifstream in(argv[1]);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", argv[1]);
      return 2;
    }
    for (std::string line; std::getline(in, line);) lines->push_back(line);
  } else {
    lines->assign(std::begin(kText), std::end(kText));
  }

  gcpstream::StreamExecutionEnvironment env;
  env.set_parallelism(2);
  auto sink = std::make_shared<gcpstream::CollectSink<WordCount>>();
  const auto n = static_cast<std::int64_t>(lines->size());
  env.from_source(std::make_shared<gcpstream::NumberSequenceSource>(0, n - 1, 2),
                  gcpstream::WatermarkStrategy<std::int64_t>::no_watermarks(), "lines")
      .map([lines](std::int64_t i) { return (*lines)[static_cast<std::size_t>(i)]; }, "line")
      .flat_map<WordCount>(
          [](std::string line, gcpstream::Collector<WordCount>& out) {
            std::istringstream words(line);
            for (std::string w; words >> w;) out.collect({w, 1});
          },
          "split")
      .key_by([](const WordCount& wc) { return wc.first; })
      .reduce([](const WordCount& a, const WordCount& b) {
        return WordCount{a.first, a.second + b.second};
      }, "count")
      .sink_to(sink, "collect");

  auto result = env.execute("wordcount");
  if (!result.status.ok()) {
    std::fprintf(stderr, "job failed: %s\n", result.status.ToString().c_str());
    return 1;
  }
  std::map<std::string, std::int64_t> totals;
  for (const auto& [word, count] : sink->collected()->snapshot()) {
    totals[word] = std::max(totals[word], count);
  }
  for (const auto& [word, count] : totals) std::printf("%-12s %lld\n", word.c_str(),
                                                       static_cast<long long>(count));
  std::printf("%zu distinct words, %.0f records counted, %lld ms\n", totals.size(),
              result.metric("count", "numRecordsIn"),
              static_cast<long long>(result.duration.count()));
  return 0;
}
