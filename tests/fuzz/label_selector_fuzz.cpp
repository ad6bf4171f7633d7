// Feeds arbitrary text to the label selector parser: an accepted selector
// prints back to a text that parses to the same requirements, and matching
// it against labels never fails; a rejected one names a column.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/objects/label_selector.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudagate;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto selector = LabelSelector::parse(text);
  if (!selector) {
    if (selector.error().where.rfind("column ", 0) != 0) __builtin_trap();
    return 0;
  }
  if (selector->requirements().empty()) __builtin_trap();
  auto again = LabelSelector::parse(selector->str());
  if (!again || !(again->requirements() == selector->requirements())) __builtin_trap();
  const KeyValues labels = {{"a", "1"}, {"pool", "t4"}, {"x.io/y", ""}};
  (void)selector->matches(labels);
  (void)selector->matches(KeyValues{});
  return 0;
}
