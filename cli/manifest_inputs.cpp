// Reading the manifests `audit` and `plan` judge: files, folders walked in
// name order, stdin; JSON through simdjson, the rest through the stream reader.
#include "cli/manifest_inputs.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <system_error>

#include "admission/simd_json_view.h"
#include "inputs/input_files.h"

namespace cudagate::cli {
namespace {

bool is_manifest_name(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// The workloads of one file. JSON (`kubectl get ... -o json` of a whole
// cluster runs to tens of megabytes) is parsed with simdjson, in a fraction
// of the time and memory of a document tree, and read through the same view
// mapping, so the workloads, places and errors are those of
// read_workload_stream; text simdjson does not take (YAML, JSON it refuses
// or nests deeper than any Kubernetes object) goes to read_workload_stream,
// which gives the error.
WorkloadStream read_manifest(const std::string& text, const std::string& source) {
  constexpr std::size_t kMaxDepth = 256;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.allocate(text.size(), kMaxDepth) == simdjson::SUCCESS &&
        parser.parse(text).get(root) == simdjson::SUCCESS) {
      WorkloadStream out;
      read_workload_document(SimdJsonView(parser.doc), source + ":1", out);
      return out;
    }
  }
  return read_workload_stream(text, source);
}

}  // namespace

// The files to read: "-" and files as given, folders walked recursively for
// .yaml, .yml and .json files in name order. A path that does not exist is
// bad usage.
std::vector<std::string> manifest_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (path == "-") {
      files.push_back(path);
      continue;
    }
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) {
      fail(Error{path, "no such file or directory"});
    }
    if (!std::filesystem::is_directory(status)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    std::filesystem::recursive_directory_iterator it(
        path, std::filesystem::directory_options::skip_permission_denied, ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_regular_file(type_ec) && is_manifest_name(it->path())) {
        found.push_back(it->path().string());
      }
    }
    if (ec) fail(Error{path, "cannot list: " + ec.message()});
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

ManifestInputs read_manifest_inputs(const std::vector<std::string>& files) {
  ManifestInputs in;
  for (const std::string& file : files) {
    auto text = read_input(file);
    if (!text) {
      in.broken.push_back(text.error());
      continue;
    }
    WorkloadStream stream = read_manifest(*text, display_name(file));
    if (auto claims = claims_in_text(*text, display_name(file)); !claims) {
      in.broken.push_back(claims.error());
    } else {
      for (ClaimSpec& claim : *claims) in.claims.add(std::move(claim));
    }
    spdlog::debug("{}: {} workloads, {} other objects, {} broken", display_name(file),
                  stream.workloads.size(), stream.skipped, stream.broken.size());
    in.workloads.insert(in.workloads.end(), std::make_move_iterator(stream.workloads.begin()),
                        std::make_move_iterator(stream.workloads.end()));
    in.broken.insert(in.broken.end(), stream.broken.begin(), stream.broken.end());
    in.skipped += stream.skipped;
  }
  in.controlled = drop_controlled(in.workloads);
  return in;
}

std::int64_t report_time() {
  // SOURCE_DATE_EPOCH fixes the reports' timestamps, for reproducible output.
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    char* end = nullptr;
    const long long value = std::strtoll(epoch, &end, 10);
    if (end != nullptr && *end == '\0' && value >= 0) return value;
    fail(Error{"SOURCE_DATE_EPOCH", "expected seconds since 1970, got " + quote(epoch)});
  }
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace cudagate::cli
