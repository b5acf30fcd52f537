// Unit tests of the cleaning and per-format writers (text_clean.h, escape.h).
#include "report/escape.h"

#include <gtest/gtest.h>

#include <random>

#include "core/output.h"
#include "report/text_clean.h"

namespace sandprobe::report {
namespace {

using namespace std::string_literals;

TEST(CleanText, StripsAnsiSequences) {
  EXPECT_EQ(CleanText("a\x1b[31mred\x1b[0m b"), "ared b");
  EXPECT_EQ(CleanText("\x1b[38;5;196mx\x1b[2J\x1b[?25l"), "x");
  EXPECT_EQ(CleanText("t\x1b]0;title\x07"
                      "after"),
            "tafter");                                            // OSC ended by BEL
  EXPECT_EQ(CleanText("t\x1b]8;;http://x\x1b\\link"), "tlink");   // OSC ended by ST
  EXPECT_EQ(CleanText("t\x1b]0;unterminated\nnext"), "t\nnext");  // OSC ends at newline
  EXPECT_EQ(CleanText("\x1b(Bx\x1b"
                      "c\x1b"),
            "x");  // nF, Fs, lone ESC
}

TEST(CleanText, StripsControlsKeepsNewlineAndTab) {
  EXPECT_EQ(CleanText("a\0b\x01\x07\x08\r\x7f c\n\td"s), "ab c\n\td");
  EXPECT_EQ(CleanText("c1:\xc2\x9b"
                      "31m"),
            "c1:31m");  // C1 CSI removed
  EXPECT_EQ(CleanText("bidi\xe2\x80\xae"
                      "x\xe2\x81\xa6"
                      "y"),
            "bidixy");
  EXPECT_EQ(CleanText("nonchar\xef\xbf\xbe\xef\xbf\xbf"), "nonchar");  // U+FFFE, U+FFFF
  EXPECT_EQ(CleanText("ok \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"),
            "ok \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80");
}

// U+2028/U+2029 are line terminators to JavaScript and YAML 1.1: a TAP point or YAML scalar
// holding one broke node-tap's parser (hostile corpus case unicode-tricks; docs/traps.md trap 43).
TEST(CleanText, UnicodeLineSeparatorsBecomeNewlines) {
  const std::string ls = "\xe2\x80\xa8", ps = "\xe2\x80\xa9";
  EXPECT_EQ(CleanText("a" + ls + "b" + ps + "c"), "a\nb\nc");
  EXPECT_EQ(OneLine(CleanText("a" + ls + "b")), "a b");
  EXPECT_EQ(YamlQuoted("a" + ps + "b", 64), "\"a\\nb\"");
  EXPECT_EQ(TapText("a" + ls + "b", 64), "a b");
}

TEST(CleanText, ReplacesInvalidUtf8) {
  EXPECT_EQ(CleanText("\xff\xfe"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(CleanText("a\xe2\x82"), "a\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(CleanText("\xc3"), "\xef\xbf\xbd");
}

// Random bytes biased towards the dangerous ones: cleaning always yields valid UTF-8 without
// ESC, C0 (except \n \t), DEL or C1 controls, and escaping never lets a raw '|' through.
TEST(CleanText, RandomBytesNeverSurvive) {
  const std::string alphabet = "\x1b[]();m\x07\\\x00\x01\r\n\t|`<>&a\xc2\x9b\xe2\x80\xae\xff"s;
  std::mt19937 rng(20250301);
  for (int round = 0; round < 2000; ++round) {
    std::string raw(rng() % 64, ' ');
    for (char& c : raw)
      c = rng() % 4 == 0 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
    const std::string clean = CleanText(raw);
    ASSERT_EQ(core::SanitizeUtf8(clean), clean);
    for (const char ch : clean) {
      const auto c = static_cast<unsigned char>(ch);
      ASSERT_TRUE(c >= 0x20 || c == '\n' || c == '\t') << static_cast<int>(c);
      ASSERT_NE(c, 0x7f);
    }
    ASSERT_EQ(clean.find("\xc2\x9b"), std::string::npos);
    MarkdownWriter w;
    w.Text(raw);
    ASSERT_EQ(w.str().find('|'), std::string::npos);
    ASSERT_EQ(w.str().find('\n'), std::string::npos);
  }
}

TEST(CutUtf8, CutsOnCodePointBoundaryAndCountsEllipsis) {
  EXPECT_EQ(CutUtf8("abcdef", 6), "abcdef");
  EXPECT_EQ(CutUtf8("abcdefg", 6), "abc\xe2\x80\xa6");
  EXPECT_EQ(CutUtf8("x\xc3\xa9yzw", 5), "x\xe2\x80\xa6");  // does not split U+00E9
  EXPECT_EQ(CutUtf8("ab", 10, /*force_ellipsis=*/true), "ab\xe2\x80\xa6");
  EXPECT_EQ(CutUtf8("abcdef", 2), "");
}

TEST(BoundedText, ReadsOnlyAPrefixAndMarksTheCut) {
  const std::string huge(10 * 1024 * 1024, 'a');
  const std::string out = BoundedText(huge, 100);
  EXPECT_EQ(out.size(), 100u);
  EXPECT_TRUE(out.ends_with("\xe2\x80\xa6"));
  // Escape sequences filling the read prefix: cleaned to nothing, but still marked as cut.
  std::string ansi;
  while (ansi.size() < 10000) ansi += "\x1b[31m";
  EXPECT_EQ(BoundedText(ansi + "tail", 100), "\xe2\x80\xa6");
}

TEST(DisplayWidth, CountsWideAndCombining) {
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("\xe4\xb8\xad\xe6\x96\x87"), 4u);  // two CJK ideographs
  EXPECT_EQ(DisplayWidth("e\xcc\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(FitColumns("\xe4\xb8\xad\xe6\x96\x87x", 4), "\xe4\xb8\xad\xe2\x80\xa6");
  EXPECT_EQ(FitColumns("abcdef", 4), "abc\xe2\x80\xa6");
  EXPECT_EQ(PadColumns("\xe4\xb8\xad", 4), "\xe4\xb8\xad  ");
}

TEST(TerminalText, OneLineBoundedNoEscapes) {
  EXPECT_EQ(TerminalText("a\nb\tc\x1b[31md", 28), "a b cd");
  EXPECT_EQ(TerminalText(std::string(100, 'x'), 10), std::string(9, 'x') + "\xe2\x80\xa6");
}

TEST(MarkdownWriter, EscapesInlineText) {
  MarkdownWriter w;
  w.Text("a|b\\c`d*e_f[g]h~i<j>k&l\nm");
  EXPECT_EQ(w.str(), "a&#124;b\\\\c\\`d\\*e\\_f\\[g\\]h\\~i&lt;j&gt;k&amp;l m");
}

TEST(MarkdownWriter, EscapesHtmlContextWithEntities) {
  MarkdownWriter w;
  w.HtmlText("</summary>|`*_[]\\");
  EXPECT_EQ(w.str(), "&lt;/summary&gt;&#124;&#96;&#42;&#95;&#91;&#93;&#92;");
}

TEST(MarkdownWriter, MarkupIsVerbatimAndTextIsBounded) {
  MarkdownWriter w;
  w.Markup("| **").Text(std::string(5000, 'y'), 10).Markup("** |");
  EXPECT_EQ(w.str(), "| **yyyyyyy\xe2\x80\xa6** |");
}

TEST(MarkdownWriter, CodeBlockFenceIsLongerThanAnyBacktickRun) {
  MarkdownWriter w;
  w.CodeBlock("x ```` y\n```\n\x1b[31mz", 1000);
  EXPECT_EQ(w.str(), "`````text\nx ```` y\n```\nz\n`````\n");
  MarkdownWriter plain;
  plain.Markup("intro").CodeBlock("", 10, "");
  EXPECT_EQ(plain.str(), "intro\n```\n```\n");
}

TEST(Xml, TextHasNoInvalidCharactersAndAttrIsOneLine) {
  EXPECT_EQ(XmlText("a\0b\x0b\x0c\xef\xbf\xbe]]>\n"s, 100), "ab]]>\n");
  EXPECT_EQ(XmlAttr("a\nb\tc\rd", 100), "a b cd");
  EXPECT_EQ(XmlText(std::string(5000, 'z'), 8), "zzzzz\xe2\x80\xa6");
}

TEST(Json, TextKeepsControlsButIsValidUtf8) {
  EXPECT_EQ(JsonText("\x1b[31m\xff", 100), "\x1b[31m\xef\xbf\xbd");
  const nlohmann::json small = {{"a", 1}};
  EXPECT_EQ(JsonBounded(small, 100).dump(), "{\"a\":1}");
  const nlohmann::json big = {{"a", std::string(1000, 'q')}};
  const nlohmann::ordered_json cut = JsonBounded(big, 50);
  EXPECT_EQ(cut["truncated"], true);
  EXPECT_EQ(cut["bytes"], 1008);
  EXPECT_LE(cut["excerpt"].get<std::string>().size(), 50u);
}

TEST(Tap, TextEscapesBackslashAndHashOnOneLine) {
  EXPECT_EQ(TapText("a # SKIP b\\c", 100), "a \\# SKIP b\\\\c");
  EXPECT_EQ(TapText("x\nnot ok 2\r\x1b[31m\x01", 100), "x not ok 2");
  EXPECT_EQ(TapText(std::string(5000, '#'), 8), "\\#\\#\\#\\#\\#\xe2\x80\xa6");
}

TEST(Tap, YamlQuotedIsOneLineJsonOfCleanText) {
  EXPECT_EQ(YamlQuoted("a\"b\\c\n  ...\n\t\x1b[31m\xff\x01", 100),
            "\"a\\\"b\\\\c\\n  ...\\n\\t\xef\xbf\xbd\"");
  EXPECT_EQ(YamlQuoted("\xc2\x85\xc2\x9b", 100), "\"\"");  // C1 controls are not YAML-printable
}

TEST(Html, BodyAndAttrEscapeEveryMetacharacter) {
  EXPECT_EQ(HtmlBody("<script>&\"'</script>\nx\x1b[2J\0"s, 100),
            "&lt;script&gt;&amp;&quot;&#39;&lt;/script&gt;\nx");
  EXPECT_EQ(HtmlAttr("a\"\nb<", 100), "a&quot; b&lt;");
  EXPECT_EQ(HtmlBody(std::string(5000, '<'), 8), "&lt;&lt;&lt;&lt;&lt;\xe2\x80\xa6");
}

}  // namespace
}  // namespace sandprobe::report
