// parse_policy on arbitrary bytes: it must answer with a Policy or an Error,
// never crash, hang or throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "tests/support/embedded_compat_db.h"

namespace {

using cudagate::test_support::db;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto policy = cudagate::parse_policy(text, "fuzz.yaml", db());
  if (policy) {
    // Exercise what the webhook does with a parsed catalog.
    for (const auto& entry : policy->images) (void)policy->catalog_entry(entry.match);
  } else if (policy.error().str().empty()) {
    std::abort();  // an error must say something
  }
  return 0;
}
