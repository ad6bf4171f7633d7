#pragma once
// Private to compat-db/: the sections of the compat-db schema, as the loader
// (compat_db_load.cpp) meets them in a file's top-level object.
//
// Contract: a Section's read() reads the JSON value given for the section
// into its vector of `db`, checks each entry (fields, their forms, the
// section's own rules) and then the entries against one another
// (compat_db_checks.h), and returns the first problem with a place inside
// the file ("cudaReleases[3].minDriver") for the loader to prefix with the
// file name. read() appends to `db` and is called at most once a section;
// the checks across sections and the sorting are the loader's. The table is
// constant and may be read from any thread.

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "compat-db/compat_db.h"
#include "types/expected.h"

namespace cudagate::compat_db_reader {

// One section of the schema: its name, whether a matrix must give it, and
// how it is read into a CompatDb and checked across its entries.
struct Section {
  std::string_view name;
  bool required;
  std::optional<Error> (*read)(const nlohmann::json& value, CompatDb& db);
};

// Every section of the schema, in the order compat-db/README.md documents them.
[[nodiscard]] std::span<const Section> sections();

// The section called `name`, or nullptr when the schema has none.
[[nodiscard]] const Section* find_section(std::string_view name);

// "cudaReleases, minorVersionCompat, ...": every section's name, for an
// error about an unknown one.
[[nodiscard]] std::string section_names();

}  // namespace cudagate::compat_db_reader
