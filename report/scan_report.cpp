// A scan's facts rendered as the contract's JSON and as text.
#include "report/scan_report.h"

#include <vector>

#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::ordered_json;

ordered_json text_or_null(const std::string& text) {
  return text.empty() ? ordered_json(nullptr) : ordered_json(text);
}

std::string from_root(const std::string& path) {
  return "/" + path;
}

ordered_json arch_list(const std::vector<scan::GpuArch>& archs) {
  ordered_json out = ordered_json::array();
  for (const scan::GpuArch& arch : archs) out.push_back(arch.str());
  return out;
}

std::string arch_words(const std::vector<scan::GpuArch>& archs) {
  std::string out;
  for (const scan::GpuArch& arch : archs) out += (out.empty() ? "" : " ") + arch.str();
  return out.empty() ? "-" : out;
}

ordered_json version_json(const std::optional<scan::FileVersion>& version) {
  if (!version) return nullptr;
  return {{"version", version->version}, {"path", from_root(version->path)}};
}

ordered_json files_json(const std::vector<scan::ScannedFile>& scanned) {
  ordered_json files = ordered_json::array();
  for (const scan::ScannedFile& file : scanned) {
    files.push_back({{"path", from_root(file.path)},
                     {"sass", arch_list(file.sass)},
                     {"ptx", arch_list(file.ptx)}});
  }
  return files;
}

ordered_json framework_json(const std::optional<scan::Framework>& framework) {
  if (!framework) return nullptr;
  return {{"name", framework->name},
          {"version", framework->version},
          {"cuda", text_or_null(framework->cuda)},
          {"path", from_root(framework->path)}};
}

}  // namespace

ordered_json scan_json(const ScanOrigin& origin, const scan::ImageScan& scan) {
  ordered_json runtimes = ordered_json::array();
  for (const scan::FileVersion& runtime : scan.cuda_runtimes) {
    runtimes.push_back({{"version", runtime.version}, {"path", from_root(runtime.path)}});
  }
  ordered_json problems = ordered_json::array();
  for (const Error& problem : scan.problems) problems.push_back(problem.str());
  ordered_json out = {{"source", {{"kind", origin.source}, {"location", origin.location}}}};
  // The facts first, as an attached scan carries them, then the rest.
  ordered_json facts = scan_facts_json(origin, scan);
  for (auto& [key, value] : facts.items()) out[key] = std::move(value);
  out["cudaRuntimes"] = std::move(runtimes);
  out["cudaCompatFile"] = version_json(scan.cuda_compat);
  out["problems"] = std::move(problems);
  out["stats"] = {{"layers", scan.layers},
                  {"bytesRead", scan.bytes_in},
                  {"bytesUnpacked", scan.bytes_unpacked},
                  {"elfFiles", scan.elf_files}};
  return out;
}

ordered_json scan_facts_json(const ScanOrigin& origin, const scan::ImageScan& scan) {
  return {
      {"digest", text_or_null(origin.digest)},
      {"platform", text_or_null(origin.platform)},
      {"cudaRuntime", scan.cuda_runtime ? ordered_json(scan.cuda_runtime->version) : nullptr},
      {"cudaCompat", scan.cuda_compat ? ordered_json(scan.cuda_compat->version) : nullptr},
      {"framework", framework_json(scan.framework)},
      {"files", files_json(scan.files)},
  };
}

std::string scan_text(const ScanOrigin& origin, const scan::ImageScan& scan) {
  std::string out = "image:         " + origin.source + " " + origin.location + "\n";
  if (!origin.digest.empty()) out += "digest:        " + origin.digest + "\n";
  if (!origin.platform.empty()) out += "platform:      " + origin.platform + "\n";
  out += "CUDA runtime:  " +
         (scan.cuda_runtime
              ? scan.cuda_runtime->version + " (" + from_root(scan.cuda_runtime->path) + ")"
              : std::string("none found")) +
         "\n";
  if (scan.cuda_compat) {
    out += "compat driver: " + scan.cuda_compat->version + " (" +
           from_root(scan.cuda_compat->path) + ")\n";
  }
  if (scan.framework) {
    out += "framework:     " + scan.framework->name + " " + scan.framework->version +
           (scan.framework->cuda.empty() ? " (no CUDA)" : " (CUDA " + scan.framework->cuda + ")") +
           "\n";
  }
  out += "GPU code:      " + std::to_string(scan.files.size()) +
         (scan.files.size() == 1 ? " file" : " files") + " of " + std::to_string(scan.elf_files) +
         " ELF files read\n";
  for (const scan::ScannedFile& file : scan.files) {
    // A name may hold any byte; a terminal gets them escaped.
    out += "  " + from_root(printable(file.path, 4096)) + "\n    SASS " + arch_words(file.sass) +
           "  PTX " + arch_words(file.ptx) + "\n";
  }
  if (!scan.problems.empty()) {
    out += "problems:\n";
    for (const Error& problem : scan.problems) out += "  " + problem.str() + "\n";
  }
  return out;
}

}  // namespace cudagate
