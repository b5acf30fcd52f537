// JsonStreamScanner: every table document is fed whole, split in two at every byte position, and
// one byte at a time; the streamed text, the kept members and the verdict must not depend on
// where the chunks break.
#include "drivers/http/json_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace sandprobe::drivers {
namespace {

using Json = nlohmann::json;

struct Scan {
  std::vector<std::string> text;  // per stream
  bool ok = false;
  std::string error;
  JsonStreamResult result;
};

// Feeds `doc` cut at `cuts` (sorted positions) and finishes.
Scan ScanDoc(std::string_view doc, const std::vector<size_t>& cuts, JsonStreamOptions options) {
  Scan scan;
  scan.text.resize(options.streams.size());
  JsonStreamScanner s(std::move(options), [&](size_t i, std::string_view t) {
    EXPECT_FALSE(t.empty());
    scan.text[i].append(t);
  });
  size_t at = 0;
  bool fed = true;
  for (size_t cut : cuts) {
    fed = fed && s.Feed(doc.substr(at, cut - at));
    at = cut;
  }
  fed = fed && s.Feed(doc.substr(at));
  auto end = s.Finish();
  scan.ok = fed && end.has_value();
  scan.error = end ? s.error() : end.error();
  EXPECT_EQ(fed, s.error().empty());
  EXPECT_EQ(s.bytes() == doc.size(), fed) << "a scanner that failed stops counting";
  scan.result = s.result();
  return scan;
}

// Every way to cut `doc` that the table checks: none, each single cut, every byte apart.
std::vector<std::vector<size_t>> Cuts(std::string_view doc) {
  std::vector<std::vector<size_t>> out = {{}};
  for (size_t k = 0; k <= doc.size(); ++k) out.push_back({k});
  std::vector<size_t> each;
  for (size_t k = 1; k < doc.size(); ++k) each.push_back(k);
  out.push_back(each);
  return out;
}

std::string Describe(const std::vector<size_t>& cuts) {
  std::string s = "cuts:";
  for (size_t c : cuts) s += " " + std::to_string(c);
  return cuts.size() > 8 ? "cut at every byte" : s;
}

JsonStreamOptions Streams(std::vector<std::string> pointers) {
  JsonStreamOptions o;
  o.streams = std::move(pointers);
  return o;
}

struct Good {
  const char* name;
  std::string doc;
  std::vector<std::string> streams;
  std::vector<std::string> want_text;  // per stream ("" and not streamed: see want_streamed)
  std::vector<bool> want_streamed;
  Json want_kept;  // pointer -> value, each must be in the kept object
};

TEST(JsonStreamTest, ValidDocumentsStreamAndKeepTheSameWhereverTheyAreCut) {
  const Good table[] = {
      {"code-json",
       R"({"stdout": "a\nb", "stderr": "warn\n", "exit_code": 3, "error": null})",
       {"/stdout", "/stderr"},
       {"a\nb", "warn\n"},
       {true, true},
       {{"/exit_code", 3}, {"/error", nullptr}}},
      {"every escape",
       R"({"stdout":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00 \uD834\uDD1E end"})",
       {"/stdout"},
       {"\"\\/\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 \xF0\x9D\x84\x9E end"},
       {true},
       Json::object()},
      {"raw UTF-8 passes through",
       "{\"stdout\":\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"}",
       {"/stdout"},
       {"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"},
       {true},
       Json::object()},
      {"nested pointers; arrays are kept, not followed",
       R"({"result": {"meta": {"rc": 0, "tags": []}, "list": [1, {"stdout": "no"}],
           "stdout": "inner", "err": "e"}, "stdout": "top", "n": -1.5e+3})",
       {"/result/stdout", "/result/err"},
       {"inner", "e"},
       {true, true},
       {{"/result/meta/rc", 0},
        {"/result/meta/tags", Json::array()},
        {"/result/list", Json::array({1, {{"stdout", "no"}}})},
        {"/stdout", "top"},
        {"/n", -1500.0}}},
      {"escaped keys",
       R"({"std\u006fut": "yes", "a\/b": 1, "a~b": 2, "\u00e9": true, "x\"y": "q"})",
       {"/stdout"},
       {"yes"},
       {true},
       {{"/a~1b", 1}, {"/a~0b", 2}, {"/\xC3\xA9", true}, {"/x\"y", "q"}}},
      {"whitespace everywhere",
       " \r\n\t{ \"stdout\" :\n\"x\" , \"rc\" : [ 1 , 2 ] ,\"z\":{ } ,\"t\":false}\n ",
       {"/stdout"},
       {"x"},
       {true},
       {{"/rc", {1, 2}}, {"/z", Json::object()}, {"/t", false}}},
      {"absent and not a string",
       R"({"stdout": 5, "other": {"stdout": "deeper"}})",
       {"/stdout", "/stderr"},
       {"", ""},
       {false, false},
       {{"/stdout", 5}, {"/other/stdout", "deeper"}}},
      {"empty strings and empty object",
       R"({"stdout": "", "stderr": "", "o": {}})",
       {"/stdout", "/stderr"},
       {"", ""},
       {true, true},
       {{"/o", Json::object()}}},
      {"one pointer twice",
       R"({"out": "both"})",
       {"/out", "/out"},
       {"both", "both"},
       {true, true},
       Json::object()},
      {"duplicate keys: the last one wins",
       R"({"a": 1, "a": {"b": 2}, "c": {"d": 1}, "c": 7})",
       {"/stdout"},
       {""},
       {false},
       {{"/a/b", 2}, {"/c", 7}}},
  };
  for (const Good& g : table) {
    for (const auto& cuts : Cuts(g.doc)) {
      const Scan s = ScanDoc(g.doc, cuts, Streams(g.streams));
      const std::string where = std::string(g.name) + ", " + Describe(cuts);
      ASSERT_TRUE(s.ok) << where << ": " << s.error;
      EXPECT_EQ(s.text, g.want_text) << where;
      EXPECT_EQ(s.result.streamed, g.want_streamed) << where;
      for (const auto& [pointer, want] : g.want_kept.items()) {
        const Json::json_pointer p(pointer);
        ASSERT_TRUE(s.result.kept.contains(p))
            << where << ": " << pointer << " in " << s.result.kept.dump();
        EXPECT_EQ(s.result.kept.at(p), want) << where << ": " << pointer;
      }
      // The streamed strings themselves are never kept.
      for (size_t i = 0; i < g.streams.size(); ++i) {
        if (g.want_streamed[i]) {
          EXPECT_FALSE(s.result.kept.contains(Json::json_pointer(g.streams[i]))) << where;
        }
      }
      EXPECT_EQ(s.result.not_kept_count, 0u) << where;
    }
  }
}

TEST(JsonStreamTest, InvalidEscapesBecomeReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  const std::pair<std::string, std::string> table[] = {
      {R"(\x)", r},
      {R"(a\qb)", "a" + r + "b"},
      {R"(\u12G4)", r + "G4"},
      {R"(\u00)", r},                // the quote after it still ends the string
      {R"(\ud800x)", r + "x"},       // a high surrogate alone
      {R"(\ud800)", r},              // ... at the end of the string
      {R"(\udc00)", r},              // a low surrogate alone
      {R"(\ud800\n)", r + "\n"},     // a high surrogate, then another escape
      {R"(\ud800\u0041)", r + "A"},  // ... then a code unit that is not a low surrogate
      {R"(\ud800\ud800\udc00)", r + "\xF0\x90\x80\x80"},  // the second high pairs
      {R"(\u0000)", std::string(1, '\0')},
  };
  for (const auto& [escaped, want] : table) {
    const std::string doc = R"({"stdout": ")" + escaped + R"(", "rc": 1})";
    for (const auto& cuts : Cuts(doc)) {
      const Scan s = ScanDoc(doc, cuts, Streams({"/stdout"}));
      ASSERT_TRUE(s.ok) << escaped << ", " << Describe(cuts) << ": " << s.error;
      EXPECT_EQ(s.text[0], want) << escaped << ", " << Describe(cuts);
      EXPECT_EQ(s.result.kept.value("rc", 0), 1) << escaped;
    }
  }
}

TEST(JsonStreamTest, NotAJsonObjectOrTruncatedIsAnErrorWhereverItIsCut) {
  const std::pair<std::string, std::string> table[] = {
      {"", "empty"},
      {"  \n", "only whitespace"},
      {"<html>not json</html>", "expected '{'"},
      {"[1, 2]", "expected '{'"},
      {R"("a string")", "expected '{'"},
      {R"({"a" 1})", "expected ':'"},
      {R"({"a": tru})", "expected 'true'"},
      {R"({"a": nul})", "expected 'null'"},
      {R"({"a": 01})", "not a JSON number"},
      {R"({"a": -})", "not a JSON number"},
      {R"({"a": 1.})", "not a JSON number"},
      {R"({"a": 1e})", "not a JSON number"},
      {R"({"a": +1})", "expected a JSON value"},
      {R"({"a": 1}x)", "more after the JSON object"},
      {R"({"a": 1} {})", "more after the JSON object"},
      {R"({,})", "expected a string key"},
      {R"({"a": 1,})", "expected a string key"},
      {R"({"a": [1,]})", "expected a JSON value"},
      {R"({"a": [1 2]})", "expected ',' or ']'"},
      {R"({"a": 1 "b": 2})", "expected ',' or '}'"},
      {R"({"a": 1])", "expected ',' or '}'"},
      {R"({"stdout": "abc)", "ended inside"},
      {R"({"stdout": "abc\)", "ended inside"},
      {R"({"stdout": "abc\u00)", "ended inside"},
      {R"({"a": [1, {"b": )", "ended inside"},
      {R"({"a": 12)", "ended inside"},
      {R"({"a")", "ended inside"},
      {"{", "ended inside"},
  };
  for (const auto& [doc, want] : table) {
    for (const auto& cuts : Cuts(doc)) {
      const Scan s = ScanDoc(doc, cuts, Streams({"/stdout"}));
      EXPECT_FALSE(s.ok) << doc << ", " << Describe(cuts);
      EXPECT_NE(s.error.find(want), std::string::npos)
          << doc << ", " << Describe(cuts) << ": " << s.error;
      EXPECT_EQ(s.error.find('\n'), std::string::npos) << s.error;
    }
  }
  // The error names the byte and shows a control byte by its value.
  const Scan s = ScanDoc(std::string("{\"a\":\x01}"), {}, Streams({}));
  EXPECT_EQ(s.error, "expected a JSON value at byte 5, found byte 0x01");
}

TEST(JsonStreamTest, BigValuesAreCountedNotKeptAndSaySo) {
  JsonStreamOptions o = Streams({"/stdout"});
  o.max_value = 16;
  const std::string doc =
      R"({"big": "0123456789abcdefghij", "rc": 1, "arr": [1, 2, 3, 4, 5, 6, 7, 8, 9],)"
      R"( "o": {"deep": "0123456789abcdefghij", "code": 2}, "stdout": "s"})";
  for (const auto& cuts : Cuts(doc)) {
    const Scan s = ScanDoc(doc, cuts, o);
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_EQ(s.text[0], "s");
    EXPECT_EQ(s.result.kept, Json::parse(R"({"rc": 1, "o": {"code": 2}})")) << Describe(cuts);
    EXPECT_EQ(s.result.not_kept_count, 3u);
    EXPECT_EQ(s.result.not_kept, (std::vector<std::string>{"/big (larger than 16 bytes)",
                                                           "/arr (larger than 16 bytes)",
                                                           "/o/deep (larger than 16 bytes)"}))
        << Describe(cuts);
  }
}

TEST(JsonStreamTest, TheTotalKeptIsBoundedAndTheListOfWhatWasNot) {
  JsonStreamOptions o = Streams({"/stdout"});
  o.max_kept = 200;  // 4 of these members (their text, key and a per-value overhead)
  std::string doc = "{";
  for (int i = 0; i < 50; ++i) doc += "\"k" + std::to_string(i) + "\": 123456789, ";
  doc += R"("stdout": "end"})";
  const Scan s = ScanDoc(doc, {doc.size() / 3}, o);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.text[0], "end");
  EXPECT_LT(s.result.kept.dump().size(), 150u);
  EXPECT_EQ(s.result.kept.size(), 4u);
  EXPECT_EQ(s.result.not_kept_count + s.result.kept.size(), 50u);
  EXPECT_EQ(s.result.not_kept.size(), JsonStreamResult::kNotKeptListed);
  EXPECT_NE(s.result.not_kept[0].find("over the 200 bytes kept in all"), std::string::npos);
}

TEST(JsonStreamTest, LongKeysAreNotFollowedAndDeepNestingStops) {
  JsonStreamOptions o = Streams({"/abcdefgh", "/stdout"});
  o.max_key = 6;
  const std::string doc = R"({"abcdefgh": "v", "abcdefgh": {"x": 1}, "stdout": "s", "ab": 2})";
  for (const auto& cuts : Cuts(doc)) {
    const Scan s = ScanDoc(doc, cuts, o);
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_EQ(s.text, (std::vector<std::string>{"", "s"}));
    EXPECT_EQ(s.result.kept, Json::parse(R"({"ab": 2})"));
    EXPECT_EQ(s.result.not_kept_count, 2u);
  }

  JsonStreamOptions shallow = Streams({"/a/b/c/d/e"});
  shallow.max_depth = 4;
  const Scan deep = ScanDoc(R"({"a": {"b": {"c": {"d": {"e": "x"}}}}})", {}, shallow);
  EXPECT_FALSE(deep.ok);
  EXPECT_NE(deep.error.find("nested deeper than 4 levels"), std::string::npos) << deep.error;
  const Scan arrays = ScanDoc(R"({"a": [[[[[1]]]]]})", {}, shallow);
  EXPECT_FALSE(arrays.ok);
}

TEST(JsonStreamTest, AStreamedStringReachesTheSinkInBoundedPieces) {
  std::string doc = R"({"stdout": ")";
  std::string want;
  for (int i = 0; i < 4000; ++i) {
    doc += std::string(255, 'f') + "\\n";
    want += std::string(255, 'f') + "\n";
  }
  doc += R"(", "exit_code": 0})";
  size_t pieces = 0, largest = 0;
  std::string got;
  JsonStreamScanner s(Streams({"/stdout"}), [&](size_t, std::string_view t) {
    ++pieces;
    largest = std::max(largest, t.size());
    got.append(t);
  });
  ASSERT_TRUE(s.Feed(doc));
  ASSERT_TRUE(s.Finish());
  EXPECT_EQ(got, want);
  EXPECT_GT(pieces, 10u);
  EXPECT_LE(largest, (64u << 10) + 256);
  EXPECT_EQ(s.result().kept, Json::parse(R"({"exit_code": 0})"));
  EXPECT_EQ(s.bytes(), doc.size());
}

// Objects with a key twice (nlohmann keeps the last; the scanner streams both).
bool HasDuplicateKeys(const std::string& doc) {
  std::vector<std::set<std::string>> keys;
  bool duplicate = false;
  const Json ignored = Json::parse(
      doc,
      [&](int, Json::parse_event_t event, Json& parsed) {
        if (event == Json::parse_event_t::object_start) keys.emplace_back();
        if (event == Json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (event == Json::parse_event_t::key && !keys.empty() &&
            !keys.back().insert(parsed.get<std::string>()).second) {
          duplicate = true;
        }
        return true;
      },
      /*allow_exceptions=*/false);
  (void)ignored;
  return duplicate;
}

// Random mutations of valid documents, cut at random places: never a crash, and whatever
// nlohmann accepts as an object the scanner accepts too, streaming the same strings and keeping
// everything else.
TEST(JsonStreamTest, MutatedDocumentsAgreeWithNlohmannWhereItAccepts) {
  const std::string seeds[] = {
      R"({"stdout": "a\nb\u00e9", "stderr": "", "exit_code": 3, "error": null})",
      R"({"result": {"stdout": "x\ud83d\ude00", "rc": [1, 2.5e-3, true]}, "t": {"u": {}}})",
      R"({"a\/b": {"stdout": "q"}, "stdout": "top", "n": -0.5, "l": [[], {"k": "v"}]})",
  };
  const std::string alphabet = "{}[]\":,\\ u0123456789abcdefnrtl-+.eE/x\x01\xC3\xA9";
  std::mt19937 rng(20240611);
  int accepted = 0;
  for (int round = 0; round < 30000; ++round) {
    std::string doc = seeds[round % std::size(seeds)];
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < mutations; ++m) {
      const size_t at = rng() % (doc.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          if (at < doc.size()) doc[at] = c;
          break;
        case 1:
          doc.insert(doc.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          if (at < doc.size()) doc.erase(at, 1);
      }
    }
    std::vector<size_t> cuts;
    for (int k = 0; k < 3; ++k) cuts.push_back(rng() % (doc.size() + 1));
    std::sort(cuts.begin(), cuts.end());
    const std::vector<std::string> streams = {"/stdout", "/result/stdout", "/a~1b/stdout"};
    const Scan s = ScanDoc(doc, cuts, Streams(streams));
    const Json parsed = Json::parse(doc, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object() || HasDuplicateKeys(doc)) continue;
    ++accepted;
    ASSERT_TRUE(s.ok) << doc << ": " << s.error;
    Json want = parsed;
    for (size_t i = 0; i < streams.size(); ++i) {
      const Json::json_pointer p(streams[i]);
      const bool is_string = parsed.contains(p) && parsed.at(p).is_string();
      EXPECT_EQ(s.result.streamed[i], is_string) << doc << " " << streams[i];
      EXPECT_EQ(s.text[i], is_string ? parsed.at(p).get<std::string>() : "") << doc;
      if (is_string) want[p.parent_pointer()].erase(p.back());
    }
    EXPECT_EQ(s.result.kept, want) << doc;
    EXPECT_EQ(s.result.not_kept_count, 0u) << doc;
  }
  EXPECT_GT(accepted, 1000);  // the comparison ran, not only the no-crash part
}

}  // namespace
}  // namespace sandprobe::drivers
