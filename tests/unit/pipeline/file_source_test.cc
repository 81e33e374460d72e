// The file source: byte-range split planning over JSON lines and arrays, and checkpointed
// offsets that resume without loss or duplication.
#include "gcpstream/pipeline/file_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "gcpstream/pipeline/record_json.h"
#include "gcpstream/runtime/builtin/collect_sink.h"
#include "gcpstream/runtime/stream_execution_environment.h"
#include "tests/support/emulators.h"
#include "tests/support/fake_contexts.h"

namespace gcpstream::pipeline {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Records whose text contains braces, brackets, commas and escaped quotes inside strings, so a
// naive splitter would cut them wrongly.
std::string RecordText(int i) {
  return fmt::format(
      R"({{"n":{},"text":"a {{ b ] c, \"q\" \\ {}","nested":{{"list":[1,{{"x":[]}}]}}}})", i, i);
}

std::string WriteFile(const std::string& name, const std::string& content) {
  const fs::path dir = fs::temp_directory_path() / testing::UniqueId("file-source");
  fs::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << content;
  return path;
}

std::string JsonLines(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += RecordText(i) + "\n";
  return out;
}

std::string JsonArray(int n) {
  std::string out = " [\n";
  for (int i = 0; i < n; ++i) out += (i ? ",\n  " : "  ") + RecordText(i);
  return out + "\n]\n";
}

// Reads every split through readers, checkpointing and restoring a fresh reader every
// `restore_every` records, and returns the ordinals emitted in order.
std::vector<std::int64_t> ReadAllWithRestores(const FileSource& source,
                                              std::vector<FileSplit> splits, int restore_every) {
  std::vector<std::int64_t> ordinals;
  testing::TestMailbox mailbox;
  std::vector<FileSplit> state = std::move(splits);
  for (int round = 0; round < 10000; ++round) {
    testing::FakeReaderContext ctx(mailbox);
    auto reader = source.create_reader(ctx);
    EXPECT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->start().ok());
    EXPECT_TRUE((*reader)->add_splits(state).ok());
    EXPECT_TRUE((*reader)->notify_no_more_splits().ok());
    testing::RecordingReaderOutput<PipelineRecord> out;
    bool ended = false;
    for (int polled = 0; polled < restore_every;) {
      auto status = (*reader)->poll_next(out);
      EXPECT_TRUE(status.ok()) << status.status();
      if (!status.ok() || *status == InputStatus::kEndOfInput) {
        ended = true;
        break;
      }
      if (*status == InputStatus::kMoreAvailable) ++polled;
    }
    for (auto& e : out.emitted) {
      ordinals.push_back(*e.value.ordinal);
      EXPECT_EQ(e.value.fields["n"].get<std::int64_t>(), *e.value.ordinal);
    }
    // The checkpoint: what a restored reader gets back.
    auto snapshot = (*reader)->snapshot_state(round);
    EXPECT_TRUE(snapshot.ok());
    EXPECT_TRUE((*reader)->close().ok());
    state = *snapshot;
    if (ended) break;
  }
  return ordinals;
}

void ExpectEachOnceInOrder(const std::vector<std::int64_t>& ordinals, int n) {
  ASSERT_EQ(ordinals.size(), static_cast<std::size_t>(n)) << "records read across restores";
  for (int i = 0; i < n; ++i) EXPECT_EQ(ordinals[i], i) << "position " << i;
}

TEST(FileSource, PlansSplitsAtRecordBoundariesOfJsonLines) {
  const std::string content = JsonLines(100);
  FileSourceSpec spec;
  spec.path = WriteFile("in.jsonl", content);
  spec.split_bytes = 1000;
  auto splits = PlanFileSplits(spec);
  ASSERT_TRUE(splits.ok()) << splits.status();
  ASSERT_GT(splits->size(), 5u);
  std::int64_t expected_begin = 0;
  for (const auto& s : *splits) {
    EXPECT_EQ(s.next_offset, expected_begin) << s.id;
    EXPECT_EQ(content[static_cast<std::size_t>(s.next_offset)], '{') << s.id;
    EXPECT_FALSE(s.array);
    expected_begin = s.end_offset;
  }
  EXPECT_EQ(splits->back().end_offset, static_cast<std::int64_t>(content.size()));
  EXPECT_EQ(splits->front().next_ordinal, 0);
}

TEST(FileSource, PlansSplitsInsideAJsonArray) {
  const std::string content = JsonArray(50);
  FileSourceSpec spec;
  spec.path = WriteFile("in.json", content);
  spec.split_bytes = 700;
  auto splits = PlanFileSplits(spec);
  ASSERT_TRUE(splits.ok()) << splits.status();
  ASSERT_GT(splits->size(), 3u);
  for (const auto& s : *splits) {
    EXPECT_TRUE(s.array);
    EXPECT_EQ(content[static_cast<std::size_t>(s.next_offset)], '{') << s.id;
  }
}

TEST(FileSource, ReadsEveryRecordOnceAcrossRestoresJsonLines) {
  FileSourceSpec spec;
  spec.path = WriteFile("in.jsonl", JsonLines(120));
  spec.split_bytes = 900;
  FileSource source(spec);
  auto splits = PlanFileSplits(spec);
  ASSERT_TRUE(splits.ok());
  ExpectEachOnceInOrder(ReadAllWithRestores(source, *splits, 7), 120);
}

TEST(FileSource, ReadsEveryRecordOnceAcrossRestoresJsonArray) {
  FileSourceSpec spec;
  spec.path = WriteFile("in.json", JsonArray(120));
  spec.split_bytes = 900;
  FileSource source(spec);
  auto splits = PlanFileSplits(spec);
  ASSERT_TRUE(splits.ok());
  // Restoring after every record, and with one reader for everything.
  ExpectEachOnceInOrder(ReadAllWithRestores(source, *splits, 1), 120);
  ExpectEachOnceInOrder(ReadAllWithRestores(source, *splits, 1'000'000), 120);
}

// Reads a file's first record (which must be fine) and returns what reading the second gives.
absl::Status SecondRecordStatus(const FileSourceSpec& spec) {
  auto splits = PlanFileSplits(spec);
  if (!splits.ok()) return splits.status();
  FileSource source(spec);
  testing::TestMailbox mailbox;
  testing::FakeReaderContext ctx(mailbox);
  auto reader = *source.create_reader(ctx);
  EXPECT_TRUE(reader->add_splits(*splits).ok());
  testing::RecordingReaderOutput<PipelineRecord> out;
  EXPECT_TRUE(reader->poll_next(out).ok()) << "the first record";
  return reader->poll_next(out).status();
}

TEST(FileSource, MalformedFramingAndNonObjectsFail) {
  FileSourceSpec spec;
  spec.path = WriteFile("bad.json", "[{\"a\":1},{\"b\":\"unterminated}]");
  auto splits = PlanFileSplits(spec);
  ASSERT_FALSE(splits.ok());
  EXPECT_THAT(std::string(splits.status().message()), HasSubstr("not complete"));

  spec.path = WriteFile("open.json", "[{\"a\":1}");
  EXPECT_THAT(std::string(PlanFileSplits(spec).status().message()), HasSubstr("not closed"));

  spec.path = WriteFile("scalars.jsonl", "{\"a\":1}\n42\n");
  const absl::Status second = SecondRecordStatus(spec);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.message()), HasSubstr("byte 8 is not an object"));
}

// These arrays used to be read as if they were well formed (exit 0 on a broken file).
TEST(FileSource, AnArrayWithAnEmptyElementOrAMissingCommaFailsNamingTheByte) {
  FileSourceSpec spec;
  for (const auto& [name, text, what] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty.json", "[{\"a\":1},,{\"b\":2}]", "unexpected ',' at byte 9"},
           {"leading.json", "[,{\"a\":1}]", "unexpected ',' at byte 1"},
           {"trailing.json", "[{\"a\":1},]", "unexpected ']' at byte 9"},
           {"missing.json", "[{\"a\":1} {\"b\":2}]", "',' is missing"},
           {"scalars.json", "[1 2]", "',' is missing"}}) {
    spec.path = WriteFile(name, text);
    auto splits = PlanFileSplits(spec);
    ASSERT_FALSE(splits.ok()) << name << " was accepted";
    EXPECT_EQ(splits.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(std::string(splits.status().message()), HasSubstr(what)) << name;
  }
  // Well formed, with blanks around the commas: still one split of two records.
  spec.path = WriteFile("fine.json", "[ {\"a\":1} ,\n {\"b\":2} ]\n");
  auto splits = PlanFileSplits(spec);
  ASSERT_TRUE(splits.ok()) << splits.status();
  EXPECT_EQ(splits->size(), 1u);
}

// The identity a restore is matched on: "./x", "d/../x" and a symbolic link to x are one file
// (they used to count as different sources, failing a restore of the same input).
TEST(FileSource, TheSourceIdentityIsTheNormalisedPath) {
  const fs::path file = WriteFile("same.jsonl", "{\"a\":1}\n");
  const fs::path dir = file.parent_path();
  fs::create_directories(dir / "sub");
  fs::create_symlink(file, dir / "link.jsonl");
  auto identity = [](const std::string& path) {
    FileSourceSpec spec;
    spec.path = path;
    return FileSource(spec).lineage_vertex().datasets.at(0).name;
  };
  const std::string plain = identity(file.string());
  EXPECT_EQ(identity((dir / "." / "same.jsonl").string()), plain);
  EXPECT_EQ(identity((dir / "sub" / ".." / "same.jsonl").string()), plain);
  EXPECT_EQ(identity((dir / "link.jsonl").string()), plain);
  EXPECT_NE(identity((dir / "other.jsonl").string()), plain);
}

TEST(FileSource, DeeplyNestedJsonFailsNamingTheByteOffsetInsteadOfCrashing) {
  // 100,000 nested arrays overflowed the stack (SIGSEGV) before nesting was capped.
  FileSourceSpec spec;
  const std::string nested = std::string(100'000, '[') + std::string(100'000, ']');
  spec.path = WriteFile("deep.jsonl", "{\"a\":1}\n{\"origin\":\"X\",\"d\":" + nested + "}\n");
  const absl::Status second = SecondRecordStatus(spec);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(second.message()), HasSubstr("at byte 8"));
  EXPECT_THAT(std::string(second.message()), HasSubstr("nested deeper than 256"));
}

TEST(RecordJson, NestingAtTheCapParsesAndBracketsInsideStringsDoNotCount) {
  const std::string at_cap = std::string(256, '[') + std::string(256, ']');
  EXPECT_TRUE(ParseRecordJson(at_cap).ok());
  EXPECT_FALSE(ParseRecordJson("[" + at_cap + "]").ok());
  const std::string in_string = "{\"s\":\"" + std::string(1000, '[') + "\\\"\"}";
  auto parsed = ParseRecordJson(in_string);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)["s"].get<std::string>().size(), 1001u);
  EXPECT_EQ(ParseRecordJson("{\"delay\": NaN}").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseRecordJson("\xff\xfe").ok()) << "bytes that are not UTF-8";
  EXPECT_FALSE(ParseRecordJson("").ok());
}

TEST(FileSource, EmptyFileHasNoSplits) {
  FileSourceSpec spec;
  spec.path = WriteFile("empty.json", "  \n");
  auto splits = PlanFileSplits(spec);
  ASSERT_TRUE(splits.ok());
  EXPECT_TRUE(splits->empty());
}

TEST(FileSource, RunsAsAJobAtParallelismTwo) {
  FileSourceSpec spec;
  spec.path = WriteFile("in.json", JsonArray(500));
  spec.split_bytes = 2000;
  StreamExecutionEnvironment env;
  env.set_parallelism(2);
  auto sink = std::make_shared<CollectSink<PipelineRecord>>();
  env.from_source(std::make_shared<FileSource>(spec),
                  WatermarkStrategy<PipelineRecord>::no_watermarks(), "file")
      .sink_to(sink, "collect");
  auto result = env.execute("file-source-test");
  ASSERT_TRUE(result.status.ok()) << result.status;
  std::set<std::int64_t> seen;
  for (const auto& r : sink->collected()->snapshot()) {
    EXPECT_TRUE(seen.insert(*r.ordinal).second) << "duplicate ordinal " << *r.ordinal;
  }
  EXPECT_EQ(seen.size(), 500u);
}

// Runs a file-source job with checkpoints into `checkpoints`, optionally restoring from it.
runtime::JobResult RunFileJob(const std::string& path, const std::string& checkpoints, bool restore,
                              bool allow_non_restored_state,
                              std::shared_ptr<CollectSink<PipelineRecord>> sink) {
  FileSourceSpec spec;
  spec.path = path;
  StreamExecutionEnvironment env;
  env.config().checkpointing.interval = std::chrono::milliseconds(20);
  env.config().checkpointing.directory = checkpoints;
  if (restore) {
    env.config().restore_from = checkpoints;
    env.config().allow_non_restored_state = allow_non_restored_state;
  }
  env.from_source(std::make_shared<FileSource>(spec),
                  WatermarkStrategy<PipelineRecord>::no_watermarks(), "source")
      .uid("source")
      .sink_to(sink, "collect");
  return env.execute("restore-identity");
}

TEST(FileSource, RestoringACheckpointOfAnotherFileFailsUnlessAllowed) {
  // Editing source.path and restoring used to read the old file's positions into the new one
  // silently (and exit 0).
  const std::string first = WriteFile("first.jsonl", JsonLines(50));
  const std::string second = WriteFile("second.jsonl", JsonLines(70));
  const std::string checkpoints = (fs::temp_directory_path() / testing::UniqueId("chk")).string();
  auto sink = std::make_shared<CollectSink<PipelineRecord>>();
  auto done = RunFileJob(first, checkpoints, false, false, sink);
  ASSERT_TRUE(done.status.ok()) << done.status;
  ASSERT_TRUE(done.last_completed_checkpoint.has_value()) << "the final checkpoint";

  auto refused = RunFileJob(second, checkpoints, true, false, sink);
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kFailedPrecondition) << refused.status;
  EXPECT_THAT(std::string(refused.status.message()), HasSubstr(first));
  EXPECT_THAT(std::string(refused.status.message()), HasSubstr(second));
  EXPECT_THAT(std::string(refused.status.message()), HasSubstr("allow-non-restored-state"));

  auto fresh = std::make_shared<CollectSink<PipelineRecord>>();
  auto allowed = RunFileJob(second, checkpoints, true, true, fresh);
  ASSERT_TRUE(allowed.status.ok()) << allowed.status;
  EXPECT_EQ(fresh->collected()->snapshot().size(), 70u)
      << "the source's state was dropped: the new file is read from its start";

  auto same = std::make_shared<CollectSink<PipelineRecord>>();
  auto again = RunFileJob(second, checkpoints, true, false, same);
  EXPECT_TRUE(again.status.ok()) << "a checkpoint of the same pipeline restores: " << again.status;
}

}  // namespace
}  // namespace gcpstream::pipeline
