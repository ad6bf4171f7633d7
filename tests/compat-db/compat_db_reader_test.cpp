// Reading the entries of a compat-db file: how an error names what it found, months and dates,
// each typed field of an Entry (missing, malformed, in range), the first problem kept while
// reading goes on, unknown fields reported by finish(), fields parsed by the version parsers
// and lists of them, and read_entries over a section.
#include "compat-db/compat_db_reader.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"
#include "types/version.h"

namespace cudagate {
namespace {

using compat_db_reader::Entry;
using compat_db_reader::is_date;
using compat_db_reader::is_month;
using compat_db_reader::kind_of;
using compat_db_reader::read_entries;
using nlohmann::json;

// The problem reading `object` as the entry "e[0]" with `read` leaves, as
// Error::str() gives it; "" when there is none.
std::string reader_problem(const json& object, const std::function<void(Entry&)>& read) {
  Entry entry(object, "e[0]");
  read(entry);
  const std::optional<Error> error = entry.finish();
  return error ? error->str() : std::string();
}

// A parser in the form the version parsers have, whose message repeats the
// input raw: what parsed() does to a message is then visible.
Expected<int> reader_parse_word(std::string_view text) {
  if (text == "one") return 1;
  return Error{"", "expected a word like one, got " + std::string(text)};
}

TEST(CompatDbReader, KindOfNamesWhatItFound) {
  const std::vector<std::pair<json, std::string>> rows = {
      {json(nullptr), "null"},
      {json(true), "a boolean"},
      {json(3), "a number"},
      {json(-3), "a number"},
      {json(2.5), "a number"},
      {json("12.x"), "the string \"12.x\""},
      {json(""), "the string \"\""},
      {json("say \"hi\"\n"), "the string \"say \\\"hi\\\"\\x0a\""},
      {json(std::string(100, 'a')), "the string \"" + std::string(64, 'a') + "...\""},
      {json::array(), "an array"},
      {json::object(), "an object"},
      {json::binary({1, 2}), "an unsupported value"},
  };
  for (const auto& [value, kind] : rows) EXPECT_EQ(kind_of(value), kind) << value.dump();
}

TEST(CompatDbReader, MonthsAndDates) {
  for (const char* month : {"2026-06", "1999-01", "2026-12"}) EXPECT_TRUE(is_month(month)) << month;
  for (const char* month : {"2026-00", "2026-13", "2026-6", "26-06", "2026/06", "June 2026",
                            "2026-06-01", "202a-06", ""}) {
    EXPECT_FALSE(is_month(month)) << month;
  }
  for (const char* date : {"2026-12-04", "2026-01-31", "2026-02-01"}) {
    EXPECT_TRUE(is_date(date)) << date;
  }
  for (const char* date : {"2026-12-00", "2026-12-32", "2026-13-01", "2026-12-4", "2026-12",
                           "2026-12-04T00", "2026.12.04", "2026-12-0x", ""}) {
    EXPECT_FALSE(is_date(date)) << date;
  }
}

TEST(CompatDbReader, FieldPathsNameTheEntry) {
  const json object = json::object();
  EXPECT_EQ(Entry(object, "cudaReleases[3]").field_path("minDriver"), "cudaReleases[3].minDriver");
  EXPECT_EQ(Entry(object, "").field_path("minDriver"), "minDriver");
}

struct ReaderRow {
  const char* what;
  const char* object;                // the entry, as JSON
  std::function<void(Entry&)> read;  // reads it, asserting what the accessor returns
  std::string problem;               // reader_problem(); "" for none
};

void check_reader_rows(const std::vector<ReaderRow>& rows) {
  for (const ReaderRow& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_EQ(reader_problem(json::parse(row.object), row.read), row.problem);
  }
}

TEST(CompatDbReader, Texts) {
  const auto text_is = [](const char* expected) {
    return [expected](Entry& e) { EXPECT_EQ(e.text("k"), expected); };
  };
  const auto optional_is = [](const char* expected) {
    return [expected](Entry& e) { EXPECT_EQ(e.optional_text("k"), expected); };
  };
  check_reader_rows({
      {"text", R"({"k": "x"})", text_is("x"), ""},
      {"text missing", "{}", text_is(""), "e[0].k: required field is missing"},
      {"text empty", R"({"k": ""})", text_is(""),
       "e[0].k: expected a non-empty string, got the string \"\""},
      {"text a number", R"({"k": 7})", text_is(""),
       "e[0].k: expected a non-empty string, got a number"},
      {"text null", R"({"k": null})", text_is(""), "e[0].k: expected a non-empty string, got null"},
      {"optional text", R"({"k": "x"})", optional_is("x"), ""},
      {"optional text absent", "{}", optional_is(""), ""},
      {"optional text empty", R"({"k": ""})", optional_is(""), ""},
      {"optional text a list", R"({"k": ["x"]})", optional_is(""),
       "e[0].k: expected a string, got an array"},
  });
}

TEST(CompatDbReader, ListsOfTexts) {
  using Texts = std::vector<std::string>;
  const auto texts_are = [](bool required, const Texts& expected) {
    return [required, expected](Entry& e) { EXPECT_EQ(e.texts("k", required), expected); };
  };
  check_reader_rows({
      {"required", R"({"k": ["a", "b"]})", texts_are(true, {"a", "b"}), ""},
      {"optional", R"({"k": ["a"]})", texts_are(false, {"a"}), ""},
      {"optional absent", "{}", texts_are(false, {}), ""},
      {"optional empty", R"({"k": []})", texts_are(false, {}), ""},
      {"required absent", "{}", texts_are(true, {}), "e[0].k: required field is missing"},
      {"required empty", R"({"k": []})", texts_are(true, {}),
       "e[0].k: expected a non-empty array, got an empty one"},
      {"required not a list", R"({"k": "a"})", texts_are(true, {}),
       "e[0].k: expected a non-empty array, got the string \"a\""},
      {"optional not a list", R"({"k": {"a": 1}})", texts_are(false, {}),
       "e[0].k: expected an array, got an object"},
      // A bad item is named by its index, and the list reads as empty.
      {"an empty item", R"({"k": ["a", "", "c"]})", texts_are(true, {}),
       "e[0].k[1]: expected a non-empty string, got the string \"\""},
      {"an item of another type", R"({"k": ["a", 2]})", texts_are(false, {}),
       "e[0].k[1]: expected a non-empty string, got a number"},
  });
}

TEST(CompatDbReader, WholeNumbersFromOneTo99999) {
  const auto number_is = [](int expected) {
    return [expected](Entry& e) { EXPECT_EQ(e.number("k"), expected); };
  };
  check_reader_rows({
      {"one", R"({"k": 1})", number_is(1), ""},
      {"the largest", R"({"k": 99999})", number_is(99999), ""},
      {"zero", R"({"k": 0})", number_is(0),
       "e[0].k: expected a whole number from 1 to 99999, got 0"},
      {"too large", R"({"k": 100000})", number_is(0),
       "e[0].k: expected a whole number from 1 to 99999, got 100000"},
      {"negative", R"({"k": -5})", number_is(0),
       "e[0].k: expected a whole number from 1 to 99999, got -5"},
      {"beyond int64", R"({"k": 18446744073709551615})", number_is(0),
       "e[0].k: expected a whole number from 1 to 99999, got 18446744073709551615"},
      {"the most negative", R"({"k": -9223372036854775808})", number_is(0),
       "e[0].k: expected a whole number from 1 to 99999, got -9223372036854775808"},
      {"a fraction", R"({"k": 1.5})", number_is(0),
       "e[0].k: expected a whole number, got a number"},
      {"a string", R"({"k": "12"})", number_is(0),
       "e[0].k: expected a whole number, got the string \"12\""},
      {"missing", "{}", number_is(0), "e[0].k: required field is missing"},
  });
}

TEST(CompatDbReader, Booleans) {
  const auto boolean_is = [](bool expected) {
    return [expected](Entry& e) { EXPECT_EQ(e.boolean("k"), expected); };
  };
  check_reader_rows({
      {"true", R"({"k": true})", boolean_is(true), ""},
      {"false", R"({"k": false})", boolean_is(false), ""},
      {"a string", R"({"k": "true"})", boolean_is(false),
       "e[0].k: expected true or false, got the string \"true\""},
      {"a number", R"({"k": 1})", boolean_is(false),
       "e[0].k: expected true or false, got a number"},
      {"missing", "{}", boolean_is(false), "e[0].k: required field is missing"},
  });
}

// A value of another type is worded with the parser's own description of
// the form it expects; a text the parser refuses keeps the parser's message,
// made printable and cut.
TEST(CompatDbReader, ParsedFields) {
  const auto cuda_is = [](bool required, std::optional<CudaVersion> expected) {
    return [required, expected](Entry& e) {
      EXPECT_EQ(e.parsed("k", required, &CudaVersion::parse), expected);
    };
  };
  const auto word_is = [](std::optional<int> expected) {
    return [expected](Entry& e) { EXPECT_EQ(e.parsed("k", true, &reader_parse_word), expected); };
  };
  check_reader_rows({
      {"a version", R"({"k": "12.4"})", cuda_is(true, CudaVersion(12, 4)), ""},
      {"optional absent", "{}", cuda_is(false, std::nullopt), ""},
      {"required absent", "{}", cuda_is(true, std::nullopt), "e[0].k: required field is missing"},
      {"refused by the parser", R"({"k": "12.x"})", cuda_is(false, std::nullopt),
       "e[0].k: expected a CUDA version like 12.4 or 12.4.1, got \"12.x\""},
      {"a number", R"({"k": 12.4})", cuda_is(true, std::nullopt),
       "e[0].k: expected a CUDA version like 12.4 or 12.4.1, got a number"},
      {"null", R"({"k": null})", cuda_is(false, std::nullopt),
       "e[0].k: expected a CUDA version like 12.4 or 12.4.1, got null"},
      {"the parser's own form", R"({"k": ["one"]})", word_is(std::nullopt),
       "e[0].k: expected a word like one, got an array"},
      {"a word", R"({"k": "one"})", word_is(1), ""},
      {"a control byte in the message", R"({"k": "tw\u0001o"})", word_is(std::nullopt),
       "e[0].k: expected a word like one, got tw\\x01o"},
  });
  const std::string long_word(500, 'w');
  const std::string message = "expected a word like one, got " + long_word;
  EXPECT_EQ(reader_problem(json{{"k", long_word}},
                           [](Entry& e) { (void)e.parsed("k", true, &reader_parse_word); }),
            "e[0].k: " + message.substr(0, 400) + "...");
}

TEST(CompatDbReader, ParsedLists) {
  using Ccs = std::vector<ComputeCapability>;
  const auto list_is = [](bool required, const Ccs& expected) {
    return [required, expected](Entry& e) {
      EXPECT_EQ(e.parsed_list("k", required, &ComputeCapability::parse), expected);
    };
  };
  check_reader_rows({
      {"items", R"({"k": ["8.0", "9.0"]})",
       list_is(true, {ComputeCapability(8, 0), ComputeCapability(9, 0)}), ""},
      {"optional absent", "{}", list_is(false, {}), ""},
      {"optional empty", R"({"k": []})", list_is(false, {}), ""},
      {"required empty", R"({"k": []})", list_is(true, {}),
       "e[0].k: expected a non-empty array, got an empty one"},
      {"not a list", R"({"k": "8.0"})", list_is(false, {}),
       "e[0].k: expected an array, got the string \"8.0\""},
      // One bad item empties the list and is named by its index.
      {"an item refused", R"({"k": ["8.0", "sm_90"]})", list_is(true, {}),
       "e[0].k[1]: expected a compute capability like 8.0 or 9.0, got \"sm_90\""},
      {"an item of another type", R"({"k": ["8.0", 9]})", list_is(true, {}),
       "e[0].k[1]: expected a compute capability like 8.0 or 9.0, got a number"},
  });
}

// The first problem is the one reported; reading goes on and good fields
// still give their values.
TEST(CompatDbReader, KeepsTheFirstProblem) {
  const json object = json::parse(R"({"a": 1, "b": "x", "c": "ok", "d": true})");
  Entry entry(object, "e[0]");
  EXPECT_EQ(entry.text("a"), "");
  EXPECT_EQ(entry.number("b"), 0);
  EXPECT_EQ(entry.text("c"), "ok");
  EXPECT_TRUE(entry.boolean("d"));
  entry.fail("e[0].c", "a later problem of the reader's own");
  const auto error = entry.finish();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->str(), "e[0].a: expected a non-empty string, got a number");

  // A reader's own problem, first, is kept over a later field's.
  EXPECT_EQ(reader_problem(object,
                           [](Entry& e) {
                             EXPECT_EQ(e.text("c"), "ok");
                             e.fail("e[0].c", "not a name this section knows");
                             (void)e.text("a");
                           }),
            "e[0].c: not a name this section knows");
}

// finish() names the first field (in the object's key order) that the
// reader never asked for, with the fields it did ask for, each once; an
// earlier problem wins.
TEST(CompatDbReader, FinishReportsAFieldNobodyAskedFor) {
  const json object = json::parse(R"({"c": 1, "b": "x", "a": "y"})");
  EXPECT_EQ(reader_problem(object,
                           [](Entry& e) {
                             (void)e.text("a");
                             (void)e.optional_text("z");  // asked for, though absent
                             (void)e.text("a");
                           }),
            "e[0].b: unknown field (this entry has: a, z)");
  EXPECT_EQ(reader_problem(object,
                           [](Entry& e) {
                             (void)e.text("a");
                             (void)e.text("b");
                           }),
            "e[0].c: unknown field (this entry has: a, b)");
  EXPECT_EQ(reader_problem(object,
                           [](Entry& e) {
                             (void)e.text("a");
                             (void)e.text("b");
                             (void)e.number("c");
                           }),
            "");
  EXPECT_EQ(reader_problem(object, [](Entry& e) { (void)e.number("b"); }),
            "e[0].b: expected a whole number, got the string \"x\"");
  // A key that would break the line is shown escaped.
  EXPECT_EQ(reader_problem(json{{"k\n", 1}}, [](Entry& e) { (void)e.optional_text("k"); }),
            "e[0].k\\x0a: unknown field (this entry has: k)");
}

struct ReaderItem {
  std::string name;
  int n = 0;
};

ReaderItem read_reader_item(Entry& e) {
  ReaderItem item{e.text("name"), e.number("n")};
  if (item.n > 10) e.fail(e.field_path("n"), "expected at most 10, got " + std::to_string(item.n));
  return item;
}

TEST(CompatDbReader, ReadEntriesOfASection) {
  std::vector<ReaderItem> out = {{"earlier", 1}};
  EXPECT_FALSE(read_entries(json::parse(R"([{"name": "a", "n": 1}, {"name": "b", "n": 2}])"),
                            "items", out, read_reader_item));
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[0].name, "earlier");
  EXPECT_EQ(out[1].name, "a");
  EXPECT_EQ(out[2].name, "b");
  EXPECT_EQ(out[2].n, 2);

  struct Row {
    const char* what;
    const char* section;
    std::string problem;
  };
  const std::vector<Row> rows = {
      {"not a list", R"({"name": "a", "n": 1})",
       "items: expected an array of entries, got an object"},
      {"an entry not an object", R"([{"name": "a", "n": 1}, "b"])",
       "items[1]: expected an object, got the string \"b\""},
      {"a field's problem", R"([{"name": "a", "n": 1}, {"name": "b"}])",
       "items[1].n: required field is missing"},
      {"the reader's own problem", R"([{"name": "a", "n": 11}])",
       "items[0].n: expected at most 10, got 11"},
      {"an unknown field", R"([{"name": "a", "n": 1, "m": 2}])",
       "items[0].m: unknown field (this entry has: name, n)"},
  };
  for (const Row& row : rows) {
    std::vector<ReaderItem> items;
    const auto error = read_entries(json::parse(row.section), "items", items, read_reader_item);
    ASSERT_TRUE(error) << row.what;
    EXPECT_EQ(error->str(), row.problem) << row.what;
  }

  // Reading stops at the first bad entry.
  int read = 0;
  std::vector<ReaderItem> items;
  EXPECT_TRUE(read_entries(json::parse(R"([{"name": "a"}, {"name": "b", "n": 1}])"), "items", items,
                           [&read](Entry& e) {
                             ++read;
                             return read_reader_item(e);
                           }));
  EXPECT_EQ(read, 1);
}

}  // namespace
}  // namespace cudagate
