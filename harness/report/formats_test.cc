#include "report/formats.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "report/fixtures_testing.h"

namespace sandprobe::report {
namespace {

TEST(Formats, EveryRowIsAcceptedByNameAndRendersToAFileOfItsOwn) {
  std::set<std::string_view> names, files;
  const core::Matrix m = fixtures::Fixtures().front().make();
  for (const Format& f : Formats()) {
    const auto parsed = ParseFormats(f.name);
    ASSERT_TRUE(parsed.has_value()) << f.name;
    ASSERT_EQ(parsed->size(), 1u);
    EXPECT_EQ(parsed->front(), &f);
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate name " << f.name;
    EXPECT_TRUE(files.insert(f.file).second) << "duplicate file " << f.file;
    EXPECT_FALSE(f.render(m, TextOptions{}).empty()) << f.name;
    EXPECT_EQ(f.full_file.empty(), f.render_full == nullptr) << f.name;
    EXPECT_NE(FormatNames().find(f.name), std::string::npos) << f.name;
  }
  EXPECT_EQ(FormatNames(), "text, markdown, json, junit, tap, html");
  EXPECT_EQ(FormatNames(","), "text,markdown,json,junit,tap,html");
  EXPECT_EQ(FormatFiles(/*written_by_run=*/true),
            "matrix.md (+ matrix-full.md), report.json, junit.xml, report.tap, report.html");
  EXPECT_EQ(FormatFiles(/*written_by_run=*/false),
            "matrix.txt, matrix.md (+ matrix-full.md), report.json, junit.xml, report.tap, "
            "report.html");
}

TEST(Formats, ACommaListKeepsItsOrderOnceEachAndNamesAnUnknownFormat) {
  const auto parsed = ParseFormats("json,text,json");
  ASSERT_TRUE(parsed.has_value());
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0]->name, "json");
  EXPECT_EQ((*parsed)[1]->name, "text");
  struct Case {
    const char* list;
    const char* error;
  } bad[] = {{"pdf", "unknown format 'pdf'"},
             {"text,", "unknown format ''"},
             {"", "unknown format ''"},
             {"Text", "unknown format 'Text'"}};
  for (const Case& c : bad) {
    const auto r = ParseFormats(c.list);
    ASSERT_FALSE(r.has_value()) << c.list;
    EXPECT_EQ(r.error(), c.error);
  }
}

TEST(Formats, OnlyTheTerminalMatrixIsStreamedByRun) {
  for (const Format& f : Formats()) EXPECT_EQ(f.streamed_by_run, f.name == "text") << f.name;
}

}  // namespace
}  // namespace sandprobe::report
